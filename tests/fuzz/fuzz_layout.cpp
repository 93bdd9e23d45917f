// libFuzzer harness: checkpoint layout files (import/layout_file.cpp parseLayout), as `gwb import
// --layout-file F.json` reads them and as resources/layouts/*.json are compiled in. An accepted
// layout must give key mappings for its kinds at any depth, apply its variant flags, and
// recognise a checkpoint named by its own mappings. Seeds: tests/fuzz/corpus/layout.

#include "fuzz_util.h"

#include "import/layout_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string text(reinterpret_cast<const char*>(data), size);
    engine::Layout layout;
    if (!fuzz::readOrRefuse([&] { layout = engine::parseLayout(text, "fuzz.json"); })) return 0;
    fuzz::mustWork("an accepted layout", [&] {
        for (int64_t n : {1, 2, 3, 6, 12})
            (void)layout.defaultOffsets(n);
        for (const auto& [kind, k] : layout.kinds) {
            engine::ModelConfig c;
            c.kind = kind;
            engine::applyLayoutVariant(layout, c);
            std::vector<std::string> names;
            for (bool mixer : {false, true})
                for (int64_t n : {1, 3})
                    for (const engine::KeyMapping& m : engine::layoutMappings(layout, kind, n, mixer))
                        names.insert(names.end(), m.theirs.begin(), m.theirs.end());
            (void)engine::rankLayouts({layout}, names);
        }
    });
    return 0;
}
