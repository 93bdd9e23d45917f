// libFuzzer harness: the configs found beside a foreign checkpoint (import/import_config.cpp
// findConfig, which `gwb import` and File > Import read): config.json, and a Hydra run folder's
// .hydra/config.yaml. The input is written into a private temporary folder: the text before a
// line "@@.hydra/config.yaml@@" becomes config.json, the text after it .hydra/config.yaml (absent
// without that line). Seeds: tests/fuzz/corpus/import_config.

#include "fuzz_util.h"

#include "import/import_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {
void writeFile(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    static const std::filesystem::path folder = [] {
        auto p = std::filesystem::temp_directory_path() / ("gwb_fuzz_import_config_" + std::to_string(::getpid()));
        std::filesystem::create_directories(p / ".hydra");
        return p;
    }();
    static const std::string kSeparator = "\n@@.hydra/config.yaml@@\n";
    const std::string input(reinterpret_cast<const char*>(data), size);
    const size_t cut = input.find(kSeparator);
    writeFile(folder / "config.json", input.substr(0, cut));
    if (cut == std::string::npos)
        std::filesystem::remove(folder / ".hydra" / "config.yaml");
    else
        writeFile(folder / ".hydra" / "config.yaml", input.substr(cut + kSeparator.size()));
    engine::FoundConfig found;
    if (!fuzz::readOrRefuse([&] { found = engine::findConfig(folder.string(), {{"args.d_model", "8"}}); })) return 0;
    fuzz::mustWork("an accepted config.json", [&] {
        (void)found.get({"d_model", "n_embd", "hidden_size"});
        (void)found.get({"window_schedule", "pre_norm", "n_layers"});
    });
    // Lists written as strings: a changed value is digits and commas only, and normalising twice
    // changes nothing.
    for (const auto& [key, setting] : found.values) {
        const std::string once = engine::normalizeListText(setting.value);
        if (engine::normalizeListText(once) != once) __builtin_trap();
        if (once != setting.value && once.find_first_not_of("0123456789,") != std::string::npos) __builtin_trap();
    }
    {
        const std::string raw = input.substr(0, std::min<size_t>(input.size(), 256));
        const std::string once = engine::normalizeListText(raw);
        if (engine::normalizeListText(once) != once) __builtin_trap();
    }
    return 0;
}
