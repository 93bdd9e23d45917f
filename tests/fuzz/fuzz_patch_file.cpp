// libFuzzer harness: a patching sweep's file as `gwb patch --resume` reads it
// (trace/patch_file_reader.cpp: parsePatchFile, then checkPatchResume against a small sweep).
//
// Two input forms, as fuzz_stats: the raw bytes of an .npz, or "@@@@ <name>\n<contents>" members
// packed into a valid stored zip first. Seeds: tests/fuzz/corpus/patch_file.

#include "fuzz_util.h"

#include "gwb/engine/patch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::vector<uint8_t> bytes = fuzz::archiveOf(data, size);
    if (bytes.empty()) return 0;
    engine::PatchFileCells cells;
    if (!fuzz::readOrRefuse([&] { cells = engine::parsePatchFile(bytes, "fuzz.npz"); })) return 0;
    // A 2 x 3 sweep with a metric, as --resume checks an earlier file against the run it carries on.
    engine::PatchSweep shape;
    shape.rows = 2;
    shape.cols = 3;
    shape.hasMetric = true;
    const std::string meta = R"({"model_name": "m", "site": "resid", "mode": "patch", "row_labels": ["a", "b"],
                                 "column_labels": ["x", "y", "z"]})";
    fuzz::readOrRefuse([&] { engine::checkPatchResume(shape, meta, cells, "fuzz.npz"); });
    return 0;
}
