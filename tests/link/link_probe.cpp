// Links like every gwb binary (gwb_bind_libstdcxx_first) against a library that exports an
// unversioned copy of std::filesystem::remove_all, named after the objects as libtorch is. Passes
// when our call reaches libstdc++'s remove_all: the directory is gone and dladdr names libstdc++.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

extern "C" int gwb_shadow_stdcxx_present();

int main() {
    namespace fs = std::filesystem;
    if (gwb_shadow_stdcxx_present() != 1) return 2;
    const fs::path dir = fs::temp_directory_path() / ("gwb-link-probe-" + std::to_string(::getpid()));
    fs::create_directories(dir / "sub");
    std::ofstream(dir / "sub" / "file.txt") << "x";
    std::error_code ec;
    const std::uintmax_t removed = fs::remove_all(dir, ec);
    if (ec || fs::exists(dir) || removed != 3) {
        std::fprintf(stderr, "link_probe: remove_all removed %ju entries (expected 3): %s\n", removed,
                     ec.message().c_str());
        return 1;
    }
    using RemoveAll = std::uintmax_t (*)(const fs::path&, std::error_code&);
    const RemoveAll fn = &fs::remove_all;
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(fn), &info) || !info.dli_fname ||
        std::string(info.dli_fname).find("libstdc++") == std::string::npos) {
        std::fprintf(stderr, "link_probe: std::filesystem::remove_all resolves into %s, not libstdc++\n",
                     info.dli_fname ? info.dli_fname : "(unknown)");
        return 1;
    }
    std::printf("std::filesystem::remove_all resolves into %s\n", info.dli_fname);
    return 0;
}
