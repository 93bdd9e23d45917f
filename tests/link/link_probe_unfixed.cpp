// The probe of Link.LibstdcxxSearchedFirst linked the default way, against the real LibTorch and
// without gwb_bind_libstdcxx_first: LibTorch's libraries come before libstdc++ among its DT_NEEDED
// entries, as in any program that links torch without the fix. Link.UnfixedProbeBindsIntoTorch
// runs check_std_bindings.py on it and expects to be told that std::filesystem binds into libtorch
// (on a pip or conda LibTorch, which exports copies of libstdc++; pytorch/pytorch#133437): the
// evidence that the check catches the fault the fix removes. It prints what it did; on the machine
// where the fault was found (an H200 with PyTorch 2.11) the same calls crashed.
#include <torch/cuda.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>

int main() {
    namespace fs = std::filesystem;
    const int devices = static_cast<int>(torch::cuda::device_count()); // a real use of libtorch
    const fs::path dir = fs::temp_directory_path() / ("gwb-link-unfixed-" + std::to_string(::getpid()));
    fs::create_directories(dir / "sub");
    std::ofstream(dir / "sub" / "file.txt") << "x";
    std::error_code ec;
    const std::uintmax_t removed = fs::remove_all(dir, ec);
    std::printf("link_probe_unfixed: %d CUDA devices; remove_all removed %ju entries (%s)\n", devices, removed,
                ec ? ec.message().c_str() : "no error");
    return 0;
}
