#include "gwb/engine/patch_pairs.h"

#include "gwb/engine/effect_claims.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {
namespace {

constexpr const char* kRequired[] = {"clean", "corrupt", "answer", "wrong"};
constexpr int64_t kMaxPosition = int64_t{1} << 40;

/// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool validUtf8(const std::string& s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/// A pair from named text fields; "" = usable, else the reason it is not.
std::string pairFromFields(const std::map<std::string, std::string>& fields, const std::map<std::string, bool>& isText,
                           PatchPair& p) {
    for (const char* key : kRequired) {
        const auto it = fields.find(key);
        if (it == fields.end()) return std::string("no \"") + key + "\" field";
        if (const auto t = isText.find(key); t != isText.end() && !t->second)
            return std::string("\"") + key + "\" is not a string";
        if (it->second.empty()) return std::string("\"") + key + "\" is empty";
    }
    p.clean = fields.at("clean");
    p.corrupt = fields.at("corrupt");
    p.answer = fields.at("answer");
    p.wrong = fields.at("wrong");
    if (const auto it = fields.find("position"); it != fields.end() && !it->second.empty()) {
        const std::string& v = it->second;
        size_t used = 0;
        long long pos = -1;
        try {
            pos = std::stoll(v, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != v.size() || pos < 0 || pos > kMaxPosition)
            return "\"position\" must be a token index >= 0, got '" + v.substr(0, 40) + "'";
        p.position = pos;
    }
    for (const auto& [k, v] : fields) {
        if (k == "clean" || k == "corrupt" || k == "answer" || k == "wrong" || k == "position") continue;
        p.tags[k] = v;
    }
    return {};
}

void parseJsonl(const std::string& bytes, PairsFile& out) {
    int64_t lineNo = 0;
    size_t start = 0;
    while (start < bytes.size()) {
        size_t end = bytes.find('\n', start);
        if (end == std::string::npos) end = bytes.size();
        std::string line = bytes.substr(start, end - start);
        start = end + 1;
        ++lineNo;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        ++out.lines;
        if (!validUtf8(line)) {
            out.skipped.push_back({lineNo, "not UTF-8 text"});
            continue;
        }
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const std::exception& e) {
            std::string what = e.what();
            if (const size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
            out.skipped.push_back({lineNo, "malformed JSON: " + what.substr(0, 160)});
            continue;
        }
        if (!j.is_object()) {
            out.skipped.push_back({lineNo, "not a JSON object"});
            continue;
        }
        std::map<std::string, std::string> fields;
        std::map<std::string, bool> isText;
        bool badPosition = false;
        for (const auto& [k, v] : j.items()) {
            isText[k] = v.is_string();
            if (v.is_string())
                fields[k] = v.get<std::string>();
            else if (k == "position" && v.is_number_integer())
                fields[k] = std::to_string(v.get<long long>());
            else if (k == "position" && !v.is_null()) {
                badPosition = true;
                fields[k] = v.dump();
            } else if (!v.is_null())
                fields[k] = v.dump();
        }
        if (badPosition) {
            out.skipped.push_back(
                {lineNo, "\"position\" must be an integer token index, got " + fields["position"].substr(0, 40)});
            continue;
        }
        PatchPair p;
        p.line = lineNo;
        if (const std::string why = pairFromFields(fields, isText, p); !why.empty())
            out.skipped.push_back({lineNo, why});
        else
            out.pairs.push_back(std::move(p));
    }
}

/// RFC 4180 records: fields separated by commas, quoted fields may hold commas, quotes ("") and
/// line breaks. Each record with the line it starts on; `error` set for an unterminated quote.
struct CsvRecord {
    int64_t line = 0;
    std::vector<std::string> fields;
    std::string error;
};

std::vector<CsvRecord> csvRecords(const std::string& bytes) {
    std::vector<CsvRecord> out;
    size_t i = 0;
    int64_t line = 1;
    const size_t n = bytes.size();
    while (i < n) {
        CsvRecord rec;
        rec.line = line;
        std::string field;
        bool done = false;
        bool any = false;
        while (!done) {
            if (i < n && bytes[i] == '"') {
                ++i;
                bool closed = false;
                while (i < n) {
                    if (bytes[i] == '"') {
                        if (i + 1 < n && bytes[i + 1] == '"') {
                            field += '"';
                            i += 2;
                            continue;
                        }
                        ++i;
                        closed = true;
                        break;
                    }
                    if (bytes[i] == '\n') ++line;
                    field += bytes[i++];
                }
                if (!closed) {
                    rec.error = "a quoted field is not closed";
                    i = n;
                }
                // Text after the closing quote up to the separator is kept (lenient).
                while (i < n && bytes[i] != ',' && bytes[i] != '\n')
                    if (bytes[i++] != '\r') field += bytes[i - 1];
            } else {
                while (i < n && bytes[i] != ',' && bytes[i] != '\n')
                    field += bytes[i++];
                if (!field.empty() && field.back() == '\r' && (i >= n || bytes[i] == '\n')) field.pop_back();
            }
            any = any || !field.empty();
            rec.fields.push_back(std::move(field));
            field.clear();
            if (i < n && bytes[i] == ',') {
                ++i;
                any = true;
                continue;
            }
            if (i < n && bytes[i] == '\n') {
                ++i;
                ++line;
            }
            done = true;
        }
        if (any || !rec.error.empty()) out.push_back(std::move(rec));
    }
    return out;
}

void parseCsv(const std::string& bytes, PairsFile& out) {
    const std::vector<CsvRecord> records = csvRecords(bytes);
    if (records.empty()) return;
    const CsvRecord& header = records.front();
    std::vector<std::string> names = header.fields;
    for (std::string& nm : names) {
        // A UTF-8 byte order mark and spaces around the names are not part of them.
        if (&nm == &names.front() && nm.rfind("\xEF\xBB\xBF", 0) == 0) nm.erase(0, 3);
        const size_t a = nm.find_first_not_of(" \t"), b = nm.find_last_not_of(" \t");
        nm = a == std::string::npos ? std::string() : nm.substr(a, b - a + 1);
    }
    std::string headerProblem;
    if (!header.error.empty()) headerProblem = "the header row: " + header.error;
    for (const char* key : kRequired)
        if (headerProblem.empty() && std::find(names.begin(), names.end(), key) == names.end())
            headerProblem = std::string("the header row has no column \"") + key +
                            "\" (it needs clean, corrupt, answer, wrong; position and tags optional)";
    for (size_t r = 1; r < records.size(); ++r) {
        const CsvRecord& rec = records[r];
        ++out.lines;
        if (!headerProblem.empty()) {
            out.skipped.push_back({rec.line, headerProblem});
            continue;
        }
        if (!rec.error.empty()) {
            out.skipped.push_back({rec.line, "malformed CSV: " + rec.error});
            continue;
        }
        if (rec.fields.size() != names.size()) {
            out.skipped.push_back({rec.line, "malformed CSV: " + std::to_string(rec.fields.size()) +
                                                 " fields, the header has " + std::to_string(names.size())});
            continue;
        }
        std::map<std::string, std::string> fields;
        bool utf8 = true;
        for (size_t k = 0; k < names.size(); ++k) {
            utf8 = utf8 && validUtf8(rec.fields[k]);
            if (!names[k].empty()) fields[names[k]] = rec.fields[k];
        }
        if (!utf8) {
            out.skipped.push_back({rec.line, "not UTF-8 text"});
            continue;
        }
        PatchPair p;
        p.line = rec.line;
        if (const std::string why = pairFromFields(fields, {}, p); !why.empty())
            out.skipped.push_back({rec.line, why});
        else
            out.pairs.push_back(std::move(p));
    }
}

} // namespace

PairsFile parsePairs(const std::string& bytes, bool csv) {
    PairsFile out;
    out.format = csv ? "csv" : "jsonl";
    if (csv)
        parseCsv(bytes, out);
    else
        parseJsonl(bytes, out);
    return out;
}

PairsFile readPairsFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the pairs file '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    const bool csv = path.size() >= 4 && [&] {
        std::string ext = path.substr(path.size() - 4);
        std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
        return ext == ".csv";
    }();
    PairsFile f = parsePairs(bytes, csv);
    if (f.pairs.empty()) {
        std::string why = f.skipped.empty() ? std::string("it has no pair") : std::string();
        for (size_t k = 0; k < f.skipped.size() && k < 3; ++k)
            why +=
                (k ? "; " : "") + std::string("line ") + std::to_string(f.skipped[k].line) + ": " + f.skipped[k].reason;
        throw std::runtime_error("the pairs file '" + path + "' has no usable pair (" + why + ")");
    }
    return f;
}

CellSummary summarizeOverPairs(const std::vector<double>& values, int64_t pairs, int64_t cells, int bootstrap,
                               uint64_t seed, double level) {
    if (pairs < 0 || cells < 0 || values.size() != static_cast<size_t>(pairs * cells))
        throw std::invalid_argument("summarizeOverPairs: values are not pairs x cells");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const size_t C = static_cast<size_t>(cells), P = static_cast<size_t>(pairs);
    CellSummary s;
    s.mean.assign(C, nan);
    s.low.assign(C, nan);
    s.high.assign(C, nan);
    s.n.assign(C, 0);
    std::vector<double> sum(C, 0.0);
    for (size_t p = 0; p < P; ++p)
        for (size_t c = 0; c < C; ++c)
            if (const double v = values[p * C + c]; std::isfinite(v)) {
                sum[c] += v;
                ++s.n[c];
            }
    for (size_t c = 0; c < C; ++c)
        if (s.n[c] > 0) s.mean[c] = sum[c] / static_cast<double>(s.n[c]);
    if (bootstrap <= 0 || P == 0) return s;
    // Resample pairs (not cells): one draw of P pair indices serves every cell, as a paper's
    // interval over pairs assumes.
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, P - 1);
    std::vector<std::vector<double>> means(C);
    for (auto& m : means)
        m.reserve(static_cast<size_t>(bootstrap));
    std::vector<double> bsum(C);
    std::vector<int64_t> bn(C);
    std::vector<size_t> draw(P);
    for (int b = 0; b < bootstrap; ++b) {
        for (size_t k = 0; k < P; ++k)
            draw[k] = pick(rng);
        std::fill(bsum.begin(), bsum.end(), 0.0);
        std::fill(bn.begin(), bn.end(), 0);
        for (size_t p : draw) {
            const double* row = values.data() + p * C;
            for (size_t c = 0; c < C; ++c)
                if (std::isfinite(row[c])) {
                    bsum[c] += row[c];
                    ++bn[c];
                }
        }
        for (size_t c = 0; c < C; ++c)
            if (bn[c] > 0) means[c].push_back(bsum[c] / static_cast<double>(bn[c]));
    }
    const double tail = (1.0 - level) / 2.0;
    for (size_t c = 0; c < C; ++c) {
        if (means[c].empty()) continue;
        s.low[c] = interpolatedQuantile(means[c], tail);
        s.high[c] = interpolatedQuantile(means[c], 1.0 - tail);
    }
    return s;
}

namespace {
std::pair<std::vector<double>, std::vector<double>> finitePairs(const std::vector<double>& a,
                                                                const std::vector<double>& b) {
    std::pair<std::vector<double>, std::vector<double>> out;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
        if (std::isfinite(a[i]) && std::isfinite(b[i])) {
            out.first.push_back(a[i]);
            out.second.push_back(b[i]);
        }
    return out;
}

std::vector<double> ranks(const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
        size_t j = i;
        while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]])
            ++j;
        for (size_t t = i; t <= j; ++t)
            r[idx[t]] = (static_cast<double>(i) + static_cast<double>(j)) / 2.0;
        i = j + 1;
    }
    return r;
}
} // namespace

double pearsonCorrelation(const std::vector<double>& a0, const std::vector<double>& b0) {
    const auto [a, b] = finitePairs(a0, b0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (a.size() < 2) return nan;
    const double n = static_cast<double>(a.size());
    const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : nan;
}

double spearmanCorrelation(const std::vector<double>& a0, const std::vector<double>& b0) {
    const auto [a, b] = finitePairs(a0, b0);
    return pearsonCorrelation(ranks(a), ranks(b));
}

} // namespace gwb::engine
