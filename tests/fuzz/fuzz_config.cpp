// libFuzzer harness: model config JSON (formats/config_io.cpp configFromJson), as `gwb init
// --config`, `gwb train` and a .gwb's model_config metadata read it. An accepted config must give
// parameter counts and names, and write JSON that reads back to the same config. Seeds:
// tests/fuzz/corpus/config.

#include "fuzz_util.h"

#include "gwb/engine/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string text(reinterpret_cast<const char*>(data), size);
    engine::ModelConfig c;
    if (!fuzz::readOrRefuse([&] { c = engine::configFromJson(text); })) return 0;
    fuzz::mustWork("an accepted config", [&] {
        const engine::ParameterCounts counts = engine::countParameters(c);
        if (counts.total < 1) fuzz::finding("accepted config has no parameters");
        (void)engine::parameterSpecs(c);
        const engine::ModelConfig back = engine::configFromJson(engine::configToJson(c));
        if (engine::configToJson(back) != engine::configToJson(c)) fuzz::finding("config JSON round trip differs");
    });
    return 0;
}
