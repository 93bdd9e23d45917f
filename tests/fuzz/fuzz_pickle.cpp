// libFuzzer harness: the Torch-free checkpoint readers of `gwb import` (built only with clang, see
// CMakeLists.txt). The first byte picks the reader; reader exceptions are expected outcomes,
// anything else (a crash, a sanitizer report, a foreign exception) is a finding.

#include "import/import_tensor_file.h"
#include "import/pickle_reader.h"
#include "import/zip_reader.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb::engine;
    if (size == 0) return 0;
    const std::vector<uint8_t> rest(data + 1, data + size);
    try {
        switch (data[0] % 3) {
        case 0: {
            const PickleDocument d =
                parsePickle(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()));
            for (size_t v = 0; v < d.size(); ++v)
                (void)d.describe(static_cast<PickleId>(v));
            break;
        }
        case 1:
            readTorchArchive(rest);
            break;
        default:
            readSafetensorsBytes(rest);
            break;
        }
    } catch (const PickleError&) {
    } catch (const ZipError&) {
    } catch (const TensorFileError&) {
    }
    return 0;
}
