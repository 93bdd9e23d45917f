// A stand-in for a pip or conda libtorch: a shared library that exports, without a symbol version,
// its own copy of a libstdc++ function (std::filesystem::remove_all(const path&, error_code&),
// libstdc++'s GLIBCXX_3.4.26 symbol). PyTorch's wheels export such copies of the libstdc++ parts
// they link statically (pytorch/pytorch#133437); a binary that searches libtorch before libstdc++
// binds its std::filesystem calls to them and crashed there. This copy says so and exits instead.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) std::uintmax_t
_ZNSt10filesystem10remove_allERKNS_7__cxx114pathERSt10error_code(const void*, void*) {
    std::fputs("link_probe: std::filesystem::remove_all ran the shadow library's copy, not libstdc++'s: "
               "libstdc++ is not searched first (see gwb_bind_libstdcxx_first)\n",
               stderr);
    std::_Exit(3);
}

/// Something for the probe to call, so that the shadow library is a real dependency (DT_NEEDED
/// stays even under --as-needed), placed after the objects as libtorch is.
extern "C" __attribute__((visibility("default"))) int gwb_shadow_stdcxx_present() {
    return 1;
}
