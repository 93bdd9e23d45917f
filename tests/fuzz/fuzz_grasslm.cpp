// libFuzzer harness: GrassLM's .grasslm weight file (import/grasslm_file.h), as `gwb import`, the
// window and gwb.load read it (built only with clang, see CMakeLists.txt). TensorFileError is the
// expected outcome for a malformed file; anything else (a crash, a sanitizer report, another
// exception, an allocation past the limit) is a finding.

#include "import/grasslm_file.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb::engine;
    const std::vector<uint8_t> bytes(data, data + size);
    try {
        const TensorFile f = readGrassLMBytes(bytes);
        for (const auto& [name, t] : f.tensors)
            (void)t.toFloat();
    } catch (const TensorFileError&) {
    }
    return 0;
}
