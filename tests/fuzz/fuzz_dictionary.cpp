// libFuzzer harness: a sparse dictionary's cfg.json (features/dictionary_config.cpp
// dictionaryConfigFromJson), as loadDictionary reads gwb's own files, SAELens 5.x's flat ones and
// what SAELens 6.x's trainer writes. An accepted config must write cfg.json (SAELens 6.x's layout)
// that reads back to the same config. Seeds: tests/fuzz/corpus/dictionary.

#include "fuzz_util.h"

#include "features/dictionary_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string text(reinterpret_cast<const char*>(data), size);
    engine::DictionaryConfig c;
    bool rescale = false;
    if (!fuzz::readOrRefuse([&] { c = engine::dictionaryConfigFromJson(text, &rescale); })) return 0;
    fuzz::mustWork("an accepted dictionary config", [&] {
        const std::string written = engine::dictionaryConfigJson(c);
        const engine::DictionaryConfig back = engine::dictionaryConfigFromJson(written);
        if (engine::dictionaryConfigJson(back) != written) fuzz::finding("cfg.json round trip differs");
    });
    return 0;
}
