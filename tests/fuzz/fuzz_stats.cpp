// libFuzzer harness: corpus statistics NPZ files (File > Open Statistics, `gwb stats merge`):
// the stored-zip reader and the NPY parser (trace/npy_zip.cpp, trace/npy.cpp) and the statistics
// reader on top (stats/corpus_stats.cpp CorpusStats::parse).
//
// Two input forms. Raw: the bytes of an .npz file. Members: an input starting with "@@@@ " is a
// list of members, each "@@@@ <name>\n<contents>" up to the next "\n@@@@ "; the harness packs
// them into a valid stored zip (correct CRCs) first, so that mutations reach meta.json and the
// NPY headers instead of stopping at the CRC check. Seeds: tests/fuzz/corpus/stats.

#include "fuzz_util.h"

#include "gwb/engine/corpus_stats.h"
#include "gwb/engine/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::vector<uint8_t> bytes = fuzz::archiveOf(data, size);
    if (bytes.empty()) return 0;
    // Every member on its own, as `gwb trace` results and tests read them.
    std::map<std::string, std::vector<uint8_t>> members;
    if (fuzz::readOrRefuse([&] { members = engine::readZipStored(bytes); }))
        for (const auto& member : members)
            if (member.first.ends_with(".npy"))
                fuzz::readOrRefuse([&] { (void)engine::parseNpy(member.second).values<double>(); });
    engine::CorpusStats s;
    if (!fuzz::readOrRefuse([&] { s = engine::CorpusStats::parse(bytes, "fuzz.npz"); })) return 0;
    fuzz::mustWork("accepted statistics", [&] {
        for (const auto& [name, q] : s.quantities) {
            const int64_t g = q.groups(), b = q.bins();
            if (g < 0 || b < 1 || static_cast<int64_t>(q.counts.size()) != g * (b + 2) ||
                static_cast<int64_t>(q.n.size()) != g || static_cast<int64_t>(q.posN.size()) != g * q.positions)
                fuzz::finding("quantity '" + name + "' was accepted with inconsistent sizes");
            for (int64_t i = 0; i < g; ++i)
                (void)q.mean(i);
        }
    });
    return 0;
}
