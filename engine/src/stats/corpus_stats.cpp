// StatQuantity and CorpusStats: storage, exact merge, NPZ write/read.

#include "gwb/engine/corpus_stats.h"

#include "gwb/engine/npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::engine {

int64_t StatQuantity::groups() const {
    int64_t g = 1;
    for (int64_t e : groupShape)
        g *= e;
    return g;
}

void StatQuantity::allocate() {
    if (edges.size() < 2 || !std::is_sorted(edges.begin(), edges.end()))
        throw std::invalid_argument("statistics: a histogram needs at least 2 ascending edges");
    const auto G = static_cast<size_t>(groups());
    counts.assign(G * static_cast<size_t>(bins() + 2), 0);
    n.assign(G, 0);
    sum.assign(G, 0.0);
    sumSq.assign(G, 0.0);
    posN.assign(G * static_cast<size_t>(positions), 0);
    posSum.assign(G * static_cast<size_t>(positions), 0.0);
}

void StatQuantity::add(int64_t group, double value, int64_t position) {
    if (!std::isfinite(value)) return;
    if (group < 0 || group >= groups()) throw std::out_of_range("statistics: group index out of range");
    const int64_t B = bins();
    int64_t bin = 0;
    if (value >= edges.back())
        bin = B + 1;
    else if (value >= edges.front())
        bin = static_cast<int64_t>(std::upper_bound(edges.begin(), edges.end(), value) - edges.begin());
    counts[static_cast<size_t>(group * (B + 2) + bin)] += 1;
    n[static_cast<size_t>(group)] += 1;
    sum[static_cast<size_t>(group)] += value;
    sumSq[static_cast<size_t>(group)] += value * value;
    if (position >= 0 && position < positions) {
        posN[static_cast<size_t>(group * positions + position)] += 1;
        posSum[static_cast<size_t>(group * positions + position)] += value;
    }
}

double StatQuantity::mean(int64_t group) const {
    const auto g = static_cast<size_t>(group);
    return n[g] ? sum[g] / static_cast<double>(n[g]) : std::numeric_limits<double>::quiet_NaN();
}

void StatQuantity::merge(const StatQuantity& o, const std::string& name) {
    if (o.groupShape != groupShape || o.edges != edges || o.positions != positions)
        throw std::invalid_argument("statistics: quantity '" + name + "' has a different shape, edges or window");
    for (size_t i = 0; i < counts.size(); ++i)
        counts[i] += o.counts[i];
    for (size_t i = 0; i < n.size(); ++i) {
        n[i] += o.n[i];
        sum[i] += o.sum[i];
        sumSq[i] += o.sumSq[i];
    }
    for (size_t i = 0; i < posN.size(); ++i) {
        posN[i] += o.posN[i];
        posSum[i] += o.posSum[i];
    }
}

StatQuantity& CorpusStats::quantity(const std::string& name, const std::string& definition,
                                    std::vector<std::string> axes, std::vector<int64_t> groupShape,
                                    std::vector<double> edges, int64_t positions) {
    auto it = quantities.find(name);
    if (it != quantities.end()) {
        if (it->second.groupShape != groupShape || it->second.edges != edges || it->second.positions != positions)
            throw std::invalid_argument("statistics: '" + name + "' changed shape between windows (models differ?)");
        return it->second;
    }
    StatQuantity q;
    q.definition = definition;
    q.axes = std::move(axes);
    q.groupShape = std::move(groupShape);
    q.edges = std::move(edges);
    q.positions = positions;
    q.allocate();
    return quantities.emplace(name, std::move(q)).first->second;
}

void CorpusStats::merge(const CorpusStats& o) {
    if (o.window != window || o.stride != stride || o.maxWindows != maxWindows || o.files != files ||
        o.models != models || o.windowsTotal != windowsTotal)
        throw std::invalid_argument("statistics: the files were made with different models, data or window settings");
    std::vector<int64_t> all;
    all.reserve(windows.size() + o.windows.size());
    std::merge(windows.begin(), windows.end(), o.windows.begin(), o.windows.end(), std::back_inserter(all));
    if (std::adjacent_find(all.begin(), all.end()) != all.end())
        throw std::invalid_argument("statistics: a window is covered by two of the merged files (same shard twice?)");
    windows = std::move(all);
    for (const auto& [name, q] : o.quantities) {
        auto it = quantities.find(name);
        if (it == quantities.end())
            quantities.emplace(name, q);
        else
            it->second.merge(q, name);
    }
    for (const auto& [k, v] : o.totals)
        totals[k] += v;
    for (const auto& s : o.skipped)
        if (std::none_of(skipped.begin(), skipped.end(), [&](const SkippedFile& x) { return x.file == s.file; }))
            skipped.push_back(s);
    if (o.shardCount != shardCount) shardCount = 0; // mixed splits: only the window list is meaningful
    windowsPlanned += o.windowsPlanned;
    complete = static_cast<int64_t>(windows.size()) == windowsTotal;
    if (complete) {
        shardIndex = 0;
        shardCount = 1;
        windowsPlanned = windowsTotal;
    }
}

namespace {

template <typename T> Array<T> vecArray(std::vector<int64_t> shape, const std::vector<T>& v) {
    return Array<T>(std::move(shape), v);
}

std::vector<int64_t> withLast(std::vector<int64_t> shape, int64_t last) {
    shape.push_back(last);
    return shape;
}

} // namespace

void CorpusStats::write(const std::string& path) const {
    using nlohmann::json;
    NpzWriter w;
    json meta;
    meta["format"] = "gwb-corpus-stats";
    meta["format_version"] = 1;
    meta["complete"] = complete;
    meta["windows_covered"] = windows.size();
    meta["windows_planned"] = windowsPlanned;
    meta["windows_total"] = windowsTotal;
    meta["window"] = window;
    meta["stride"] = stride;
    meta["max_windows"] = maxWindows;
    meta["shard"] = {shardIndex, shardCount};
    meta["files"] = files;
    meta["skipped"] = json::array();
    for (const auto& s : skipped)
        meta["skipped"].push_back({{"file", s.file}, {"reason", s.reason}});
    meta["models"] = models;
    meta["totals"] = totals;
    meta["histogram_bins"] = "counts[0] < edges[0]; counts[i] in [edges[i-1], edges[i]); counts[B+1] >= edges[B]";
    json qs = json::object();
    for (const auto& [name, q] : quantities) {
        qs[name] = {{"definition", q.definition},
                    {"axes", q.axes},
                    {"group_shape", q.groupShape},
                    {"bins", q.bins()},
                    {"positions", q.positions}};
        w.add(name + ".edges", vecArray({q.bins() + 1}, q.edges));
        w.add(name + ".counts", vecArray(withLast(q.groupShape, q.bins() + 2), q.counts));
        w.add(name + ".n", vecArray(q.groupShape, q.n));
        w.add(name + ".sum", vecArray(q.groupShape, q.sum));
        w.add(name + ".sum_sq", vecArray(q.groupShape, q.sumSq));
        std::vector<double> mean(static_cast<size_t>(q.groups()));
        for (int64_t g = 0; g < q.groups(); ++g)
            mean[static_cast<size_t>(g)] = q.mean(g);
        w.add(name + ".mean", vecArray(q.groupShape, mean));
        if (q.positions > 0) {
            w.add(name + ".pos_n", vecArray(withLast(q.groupShape, q.positions), q.posN));
            w.add(name + ".pos_sum", vecArray(withLast(q.groupShape, q.positions), q.posSum));
        }
    }
    meta["quantities"] = qs;
    w.add("windows", vecArray({static_cast<int64_t>(windows.size())}, windows));
    w.addFile("meta.json", meta.dump(1));
    w.write(path);
}

namespace {

const NpyArray& member(const std::map<std::string, NpyArray>& arrays, const std::string& name) {
    auto it = arrays.find(name);
    if (it == arrays.end()) throw std::runtime_error("statistics file lacks '" + name + "'");
    return it->second;
}

/// An integer of meta.json (a float such as 1e300 is refused, not converted).
int64_t metaInt(const nlohmann::json& v, const std::string& what) {
    if (!v.is_number_integer()) throw std::runtime_error("meta.json: '" + what + "' is not an integer");
    return v.get<int64_t>();
}

/// meta.json's shape of quantity `name` must agree with the sizes of its arrays, checked before
/// storage for it is allocated: a damaged file must not ask for terabytes.
void checkQuantitySizes(const std::map<std::string, NpyArray>& arrays, const std::string& name, const StatQuantity& q) {
    auto fail = [&](const std::string& problem) { throw std::runtime_error("quantity '" + name + "': " + problem); };
    const int64_t groups = member(arrays, name + ".n").count();
    int64_t g = 1;
    for (int64_t e : q.groupShape) {
        if (e < 0) fail("group_shape has a negative extent");
        if (e == 0) g = 0;
    }
    for (int64_t e : q.groupShape)
        if (g != 0) {
            if (g > groups / e) fail("group_shape does not match the " + std::to_string(groups) + " values of '.n'");
            g *= e;
        }
    if (g != groups) fail("group_shape does not match the " + std::to_string(groups) + " values of '.n'");
    if (q.positions < 0) fail("positions is negative");
    // counts holds G x (B+2) values, pos_n and pos_sum G x P: compare by division (no overflow).
    const auto expect = [&](const std::string& suffix, int64_t perGroup) {
        const int64_t have = member(arrays, name + suffix).count();
        if (g == 0 ? have != 0 : (have % g != 0 || have / g != perGroup))
            fail("'" + name + suffix + "' has " + std::to_string(have) + " values, which does not match " +
                 std::to_string(groups) + " groups of " + std::to_string(perGroup));
    };
    expect(".counts", static_cast<int64_t>(q.edges.size()) + 1);
    if (q.positions > 0) {
        expect(".pos_n", q.positions);
        expect(".pos_sum", q.positions);
    }
}

} // namespace

CorpusStats CorpusStats::read(const std::string& path) {
    return parse(readBinaryFile(path), path);
}

CorpusStats CorpusStats::parse(const std::vector<uint8_t>& fileBytes, const std::string& path) {
    using nlohmann::json;
    std::map<std::string, std::vector<uint8_t>> members;
    try {
        members = readZipStored(fileBytes);
    } catch (const std::exception& e) { // a zip reader's words mean nothing to someone who opened a file
        throw std::runtime_error("'" + path +
                                 "' is not a statistics file from gwb stats (not an NPZ archive: " + e.what() + ")");
    }
    auto metaIt = members.find("meta.json");
    if (metaIt == members.end()) throw std::runtime_error("'" + path + "' is not a gwb statistics file (no meta.json)");
    std::map<std::string, NpyArray> arrays;
    for (const auto& [name, bytes] : members)
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
            arrays.emplace(name.substr(0, name.size() - 4), parseNpy(bytes));
    CorpusStats s;
    try {
        const json meta = json::parse(metaIt->second.begin(), metaIt->second.end());
        if (meta.value("format", "") != "gwb-corpus-stats")
            throw std::runtime_error("not a gwb statistics file (format is not gwb-corpus-stats)");
        s.complete = meta.at("complete").get<bool>();
        s.windowsPlanned = metaInt(meta.at("windows_planned"), "windows_planned");
        s.windowsTotal = metaInt(meta.at("windows_total"), "windows_total");
        s.window = metaInt(meta.at("window"), "window");
        s.stride = metaInt(meta.at("stride"), "stride");
        s.maxWindows = metaInt(meta.at("max_windows"), "max_windows");
        const int64_t shardIndex = metaInt(meta.at("shard").at(0), "shard[0]");
        const int64_t shardCount = metaInt(meta.at("shard").at(1), "shard[1]");
        if (shardCount < 0 || shardCount > 1000000 || shardIndex < 0 || (shardCount > 0 && shardIndex >= shardCount))
            throw std::runtime_error("meta.json: shard " + std::to_string(shardIndex) + "/" +
                                     std::to_string(shardCount) + " is not a shard");
        s.shardIndex = static_cast<int>(shardIndex);
        s.shardCount = static_cast<int>(shardCount);
        s.files = meta.at("files").get<std::vector<std::string>>();
        for (const auto& k : meta.at("skipped"))
            s.skipped.push_back({k.at("file").get<std::string>(), k.at("reason").get<std::string>()});
        s.models = meta.at("models").get<std::map<std::string, std::string>>();
        s.totals = meta.at("totals").get<std::map<std::string, double>>();
        s.windows = member(arrays, "windows").values<int64_t>();
        for (const auto& item : meta.at("quantities").items()) {
            // Named copies, not structured bindings: the lambda below uses the name (clang 14
            // cannot capture a structured binding).
            const std::string name = item.key();
            const json& qm = item.value();
            StatQuantity q;
            q.definition = qm.at("definition").get<std::string>();
            q.axes = qm.at("axes").get<std::vector<std::string>>();
            if (!qm.at("group_shape").is_array())
                throw std::runtime_error("meta.json: group_shape of '" + name + "' is not a list");
            for (const json& e : qm.at("group_shape"))
                q.groupShape.push_back(metaInt(e, name + ".group_shape"));
            q.positions = metaInt(qm.at("positions"), name + ".positions");
            q.edges = member(arrays, name + ".edges").values<double>();
            checkQuantitySizes(arrays, name, q);
            q.allocate();
            auto load = [&](const std::string& suffix, auto& dst) {
                using V = typename std::decay_t<decltype(dst)>::value_type;
                auto v = member(arrays, name + suffix).template values<V>();
                if (v.size() != dst.size())
                    throw std::runtime_error("'" + name + suffix + "' has " + std::to_string(v.size()) +
                                             " values, expected " + std::to_string(dst.size()));
                dst = std::move(v);
            };
            load(".counts", q.counts);
            load(".n", q.n);
            load(".sum", q.sum);
            load(".sum_sq", q.sumSq);
            if (q.positions > 0) {
                load(".pos_n", q.posN);
                load(".pos_sum", q.posSum);
            }
            s.quantities.emplace(name, std::move(q));
        }
    } catch (const json::exception& e) {
        throw std::runtime_error("'" + path + "': bad meta.json: " + e.what());
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error("'" + path + "': " + e.what());
    }
    return s;
}

std::vector<double> linearEdges(double lo, double hi, int n) {
    std::vector<double> e(static_cast<size_t>(n) + 1);
    for (int i = 0; i <= n; ++i)
        e[static_cast<size_t>(i)] = lo + (hi - lo) * i / n;
    return e;
}

std::vector<double> logEdges(double lo, double hi, int n) {
    std::vector<double> e(static_cast<size_t>(n) + 1);
    for (int i = 0; i <= n; ++i)
        e[static_cast<size_t>(i)] = lo * std::pow(hi / lo, static_cast<double>(i) / n);
    return e;
}

} // namespace gwb::engine
