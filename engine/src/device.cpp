// Device resolution and thread count.

#include "gwb/engine/device.h"

#include <torch/torch.h>

#include <stdexcept>
#include <thread>

namespace gwb::engine {

bool cudaAvailable() {
    return torch::cuda::is_available();
}

std::string resolveDevice(const std::string& choice) {
    if (choice.empty() || choice == "auto") return cudaAvailable() ? "cuda:0" : "cpu";
    if (choice == "cpu") return "cpu";
    if (choice == "cuda" || choice.rfind("cuda:", 0) == 0) {
        if (!cudaAvailable())
            throw std::invalid_argument("device '" + choice + "' requested but this build has no usable CUDA GPU");
        const std::string name = choice == "cuda" ? "cuda:0" : choice;
        try {
            const torch::Device dev(name);
            if (dev.index() >= static_cast<int>(torch::cuda::device_count()))
                throw std::invalid_argument("device '" + choice + "' does not exist (" +
                                            std::to_string(torch::cuda::device_count()) + " GPUs)");
        } catch (const c10::Error&) {
            throw std::invalid_argument("device '" + choice + "' is not a valid device name");
        }
        return name;
    }
    throw std::invalid_argument("device must be auto, cpu or cuda (got '" + choice + "')");
}

void setThreads(int n) {
    if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(n);
}

int threads() {
    return at::get_num_threads();
}

std::string deviceSummary(const std::string& device) {
    return device + ", " + std::to_string(threads()) + " CPU thread" + (threads() == 1 ? "" : "s");
}

} // namespace gwb::engine
