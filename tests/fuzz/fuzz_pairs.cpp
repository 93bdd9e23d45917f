// libFuzzer harness: pairs files (gwb patch --pairs; stats/patch_pairs.cpp parsePairs). The first
// byte picks the format (odd: CSV, even: JSONL), the rest is the file. The parser never throws:
// every input gives pairs and skipped lines, each skipped line with a reason and a line number
// inside the file, each pair with its required fields non-empty; the summary over pairs of any
// values keeps its means inside their intervals.

#include "fuzz_util.h"

#include "gwb/engine/patch_pairs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool csv = (data[0] & 1) != 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    gwb::engine::PairsFile f;
    try {
        f = gwb::engine::parsePairs(text, csv);
    } catch (const std::exception& e) {
        gwb::fuzz::finding(std::string("parsePairs threw: ") + e.what());
    }
    const int64_t lines = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    for (const auto& s : f.skipped)
        if (s.reason.empty() || s.line < 1 || s.line > lines) __builtin_trap();
    for (const auto& p : f.pairs)
        if (p.clean.empty() || p.corrupt.empty() || p.answer.empty() || p.wrong.empty() || p.line < 1 ||
            p.line > lines || p.position < -1)
            __builtin_trap();
    // Values made from the input's bytes, some NaN: each mean lies in its interval.
    const int64_t cells = 3, pairs = std::min<int64_t>(static_cast<int64_t>(size) / 3, 40);
    std::vector<double> v(static_cast<size_t>(pairs * cells));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = data[i % size] % 7 == 0 ? std::nan("") : static_cast<double>(data[i % size]) - 100.0;
    const auto s = gwb::engine::summarizeOverPairs(v, pairs, cells, 50, size);
    for (int64_t c = 0; c < cells; ++c)
        if (s.n[static_cast<size_t>(c)] > 0 &&
            !(s.low[static_cast<size_t>(c)] <= s.mean[static_cast<size_t>(c)] + 1e-9 &&
              s.mean[static_cast<size_t>(c)] <= s.high[static_cast<size_t>(c)] + 1e-9))
            __builtin_trap();
    return 0;
}
