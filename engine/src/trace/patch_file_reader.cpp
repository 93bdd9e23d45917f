// The reading half of a patching sweep's file (gwb/engine/patch_file.h): Torch-free, so that the
// libFuzzer harness (tests/fuzz/fuzz_patch_file.cpp) and gwb_trace users reach it.
#include "gwb/engine/patch_file.h"

#include "gwb/engine/npy.h"

#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>

namespace gwb::engine {

namespace {
using nlohmann::json;
} // namespace

PatchFileCells parsePatchFile(const std::vector<uint8_t>& bytes, const std::string& path) {
    std::map<std::string, std::vector<uint8_t>> members;
    try {
        members = readZipStored(bytes);
    } catch (const std::exception& e) {
        throw std::invalid_argument(path + " is not a file from gwb patch: " + e.what());
    }
    const auto metaIt = members.find("meta.json");
    if (metaIt == members.end()) throw std::invalid_argument(path + " is not a file from gwb patch (no meta.json)");
    PatchFileCells out;
    out.metaJson.assign(metaIt->second.begin(), metaIt->second.end());
    const json meta = json::parse(out.metaJson, nullptr, false);
    if (meta.is_discarded()) throw std::invalid_argument(path + ": meta.json is not valid JSON");
    if (!meta.is_object()) throw std::invalid_argument(path + ": meta.json is not a JSON object");
    auto array = [&](const char* name) -> std::vector<double> {
        const auto it = members.find(std::string(name) + ".npy");
        if (it == members.end()) return {};
        try {
            return parseNpy(it->second).values<double>();
        } catch (const std::exception& e) {
            throw std::invalid_argument(path + ": " + name + ".npy: " + e.what());
        }
    };
    auto bytesOf = [&](const char* name) -> std::vector<uint8_t> {
        try {
            return parseNpy(members.at(std::string(name) + ".npy")).values<uint8_t>();
        } catch (const std::exception& e) {
            throw std::invalid_argument(path + ": " + name + ".npy: " + e.what());
        }
    };
    if (members.count("computed.npy")) {
        out.computed = bytesOf("computed");
    } else if (members.count("defined.npy")) {
        out.computed.assign(bytesOf("defined").size(), 1); // before partial sweeps: complete
    }
    out.metric = array("metric");
    out.deltaLogprob = array("delta_logprob");
    out.meanDeltaLogprob = array("mean_delta_logprob");
    return out;
}

PatchFileCells readPatchFile(const std::string& path) {
    std::vector<uint8_t> bytes;
    try {
        bytes = readBinaryFile(path);
    } catch (const std::exception& e) {
        throw std::invalid_argument(path + " is not a file from gwb patch: " + e.what());
    }
    return parsePatchFile(bytes, path);
}

void checkPatchResume(const PatchSweep& shape, const std::string& shapeMetaJson, const PatchFileCells& e,
                      const std::string& path) {
    // The same sweep: model, site, mode, prompts, metric and part, or the cells mean something else.
    const json meta = json::parse(e.metaJson), now = json::parse(shapeMetaJson);
    for (const char* key : {"model_name", "site", "mode", "clean_tokens", "corrupt_tokens", "metric_position", "answer",
                            "wrong", "selection", "row_labels", "column_labels"}) {
        const json a = meta.value(key, json()), b = now.value(key, json());
        if (a != b)
            throw std::invalid_argument(path + " is a different sweep: its " + key + " is " + a.dump().substr(0, 80) +
                                        ", this run's " + b.dump().substr(0, 80));
    }
    const auto n = static_cast<size_t>(shape.rows * shape.cols);
    if (e.computed.size() != n || (shape.hasMetric && e.metric.size() != n) ||
        (!shape.deltaLogprob.empty() && e.meanDeltaLogprob.size() != n))
        throw std::invalid_argument(path + " has arrays of another size than this sweep's");
}

} // namespace gwb::engine
