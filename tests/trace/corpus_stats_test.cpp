// Torch-free corpus statistics (built under ASan too): histogram binning against hand counts,
// exact merge of split streams, shape checks, NPZ round trip and rejection of other files.

#include "gwb/engine/corpus_stats.h"
#include "gwb/engine/npy.h"

#include <gtest/gtest.h>

#include <fstream>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <unistd.h>

using namespace gwb::engine;

namespace {

std::string tempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("gwb-stats-" + std::to_string(::getpid()) + "-" + name)).string();
}

CorpusStats emptyStats() {
    CorpusStats s;
    s.window = 8;
    s.stride = 8;
    s.windowsTotal = 6;
    s.files = {"a.txt"};
    s.models["model"] = "m (m.gwb)";
    return s;
}

/// Adds window w's synthetic values (deterministic in w) to s.
void addWindow(CorpusStats& s, int64_t w) {
    std::mt19937 rng(static_cast<unsigned>(w) + 11);
    std::normal_distribution<double> normal(0.5, 0.4);
    StatQuantity& q = s.quantity("model.x", "synthetic", {"layer", "head"}, {2, 3}, linearEdges(0, 1, 10), 8);
    StatQuantity& r = s.quantity("model.y", "synthetic", {}, {}, logEdges(1e-2, 1e2, 8), 0);
    for (int64_t t = 0; t < 8; ++t)
        for (int64_t g = 0; g < 6; ++g)
            q.add(g, normal(rng), t);
    r.add(0, std::exp(normal(rng) * 4));
    s.totals["model.bits"] += 1.5 * static_cast<double>(w);
    s.windows.push_back(w);
}

} // namespace

TEST(CorpusStatsTrace, HistogramBinsAndMoments) {
    CorpusStats s;
    StatQuantity& q = s.quantity("x", "test", {"layer"}, {2}, {0.0, 1.0, 2.0}, 3);
    for (double v : {-1.0, 0.0, 0.5, 1.0, 1.999, 2.0, 7.0})
        q.add(1, v, 2);
    q.add(0, std::nan(""), 0); // ignored
    q.add(0, INFINITY, 0);     // ignored
    EXPECT_EQ(q.counts, (std::vector<int64_t>{0, 0, 0, 0, 1, 2, 2, 2}));
    EXPECT_EQ(q.n, (std::vector<int64_t>{0, 7}));
    EXPECT_TRUE(std::isnan(q.mean(0)));
    EXPECT_NEAR(q.mean(1), (-1 + 0 + 0.5 + 1 + 1.999 + 2 + 7) / 7.0, 1e-12);
    EXPECT_NEAR(q.sumSq[1], 1 + 0 + 0.25 + 1 + 1.999 * 1.999 + 4 + 49, 1e-12);
    EXPECT_EQ(q.posN, (std::vector<int64_t>{0, 0, 0, 0, 0, 7}));
    EXPECT_THROW(s.quantity("x", "test", {"layer"}, {3}, {0.0, 1.0, 2.0}, 3), std::invalid_argument);
    EXPECT_THROW(q.add(2, 0.5), std::out_of_range);
    EXPECT_THROW(s.quantity("bad", "test", {}, {}, {1.0, 0.0}, 0), std::invalid_argument);
    const auto e = logEdges(1e-3, 1e3, 60);
    EXPECT_NEAR(e[10], 1e-2, 1e-15);
    EXPECT_DOUBLE_EQ(linearEdges(0, 1, 50)[25], 0.5);
}

TEST(CorpusStatsTrace, MergingSplitStreamsEqualsOneStream) {
    CorpusStats one = emptyStats(), a = emptyStats(), b = emptyStats();
    for (int64_t w = 0; w < 6; ++w) {
        addWindow(one, w);
        addWindow(w % 2 ? b : a, w);
    }
    one.windowsPlanned = 6;
    a.windowsPlanned = b.windowsPlanned = 3;
    a.shardCount = b.shardCount = 2;
    b.shardIndex = 1;
    b.merge(a); // order does not matter for counts
    EXPECT_TRUE(b.complete);
    EXPECT_EQ(b.shardCount, 1);
    EXPECT_EQ(b.windows, one.windows);
    for (const auto& [name, q] : one.quantities) {
        const StatQuantity& m = b.quantities.at(name);
        EXPECT_EQ(m.counts, q.counts);
        EXPECT_EQ(m.n, q.n);
        EXPECT_EQ(m.posN, q.posN);
        for (int64_t g = 0; g < q.groups(); ++g)
            EXPECT_NEAR(m.mean(g), q.mean(g), 1e-12);
    }
    EXPECT_DOUBLE_EQ(b.totals.at("model.bits"), one.totals.at("model.bits"));
    EXPECT_THROW(b.merge(a), std::invalid_argument); // windows covered twice
    CorpusStats other = emptyStats();
    other.stride = 4;
    EXPECT_THROW(one.merge(other), std::invalid_argument);
}

TEST(CorpusStatsTrace, NpzRoundTripAndOtherFilesRejected) {
    CorpusStats s = emptyStats();
    for (int64_t w : {1, 4})
        addWindow(s, w);
    s.windowsPlanned = 3;
    s.skipped.push_back({"bad.txt", "not UTF-8"});
    const std::string path = tempPath("rt.npz");
    s.write(path);
    const CorpusStats r = CorpusStats::read(path);
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.windows, s.windows);
    EXPECT_EQ(r.windowsPlanned, 3);
    EXPECT_EQ(r.skipped.size(), 1u);
    EXPECT_EQ(r.models, s.models);
    EXPECT_EQ(r.totals, s.totals);
    for (const auto& [name, q] : s.quantities) {
        const StatQuantity& x = r.quantities.at(name);
        EXPECT_EQ(x.counts, q.counts);
        EXPECT_EQ(x.sum, q.sum);
        EXPECT_EQ(x.sumSq, q.sumSq);
        EXPECT_EQ(x.posSum, q.posSum);
        EXPECT_EQ(x.edges, q.edges);
        EXPECT_EQ(x.axes, q.axes);
        EXPECT_EQ(x.definition, q.definition);
    }
    const std::string plain = tempPath("plain.npz");
    NpzWriter w;
    w.add("x", FloatArray({2}, {1.f, 2.f}));
    w.write(plain);
    EXPECT_THROW(CorpusStats::read(plain), std::runtime_error);
    EXPECT_THROW(CorpusStats::read(tempPath("missing.npz")), std::runtime_error);
    // Not an archive at all: said in the user's words, not the zip reader's (issue 31).
    const std::string text = tempPath("notes.npz");
    std::ofstream(text) << "these are my notes, not statistics";
    try {
        (void)CorpusStats::read(text);
        ADD_FAILURE() << "a text file was read as statistics";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("is not a statistics file from gwb stats"), std::string::npos) << e.what();
    }
    std::remove(text.c_str());
    std::remove(path.c_str());
    std::remove(plain.c_str());
}

// Statistics files found by tests/fuzz/fuzz_stats (libFuzzer): a meta.json whose group_shape
// asked for terabytes before any size was checked, a negative extent, floats where integers
// belong (undefined behaviour when converted). Each is refused with a message naming the field.
namespace {
/// A statistics file with one quantity "q" (2 groups, 2 bins, no positions) whose meta.json
/// carries `groupShape` and `shard` as given.
std::vector<uint8_t> oneQuantityStats(const std::string& groupShape, const std::string& shard,
                                      const Array<double>& windows = Array<double>({1}, {0.0})) {
    const std::string meta =
        R"({"format": "gwb-corpus-stats", "complete": true, "windows_planned": 1, "windows_total": 1,
            "window": 4, "stride": 4, "max_windows": 0, "shard": )" +
        shard + R"(, "files": ["a.txt"], "skipped": [], "models": {"model": "m"}, "totals": {},
            "quantities": {"q": {"definition": "d", "axes": ["layer"], "group_shape": )" +
        groupShape + R"(, "positions": 0}}})";
    NpzWriter w;
    w.add("windows", windows);
    w.add("q.edges", Array<double>({3}, {0.0, 1.0, 2.0}));
    w.add("q.counts", Array<int64_t>({2, 4}, std::vector<int64_t>(8, 1)));
    w.add("q.n", Array<int64_t>({2}, {4, 4}));
    w.add("q.sum", Array<double>({2}, {1.0, 2.0}));
    w.add("q.sum_sq", Array<double>({2}, {1.0, 2.0}));
    w.addFile("meta.json", meta);
    return w.archive();
}

std::string statsRefusal(const std::vector<uint8_t>& bytes) {
    try {
        (void)CorpusStats::parse(bytes, "fuzz.npz");
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST(CorpusStatsTrace, FuzzFoundMetadataIsRefusedWithAMessage) {
    const CorpusStats ok = CorpusStats::parse(oneQuantityStats("[2]", "[0, 1]"), "ok.npz");
    EXPECT_EQ(ok.quantities.at("q").n, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(ok.windows, (std::vector<int64_t>{0}));
    EXPECT_NE(statsRefusal(oneQuantityStats("[1000000000000]", "[0, 1]")).find("group_shape"), std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[1000000, 1000000, 1000000]", "[0, 1]")).find("group_shape"),
              std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[-2]", "[0, 1]")).find("negative"), std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[2.5e300]", "[0, 1]")).find("not an integer"), std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[2]", "[1e300, 1]")).find("not an integer"), std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[2]", "[5, 2]")).find("shard"), std::string::npos);
    EXPECT_NE(statsRefusal(oneQuantityStats("[2]", "[0, 1]", Array<double>({1}, {1e300}))).find("not an integer"),
              std::string::npos);
}
