#pragma once
// Compute device and thread settings of the engine. Std types only.

#include <string>

namespace gwb::engine {

/// True when the engine was built with CUDA and a GPU is usable.
bool cudaAvailable();
/// "auto" (CUDA when available, else CPU), "cpu" or "cuda" / "cuda:N" -> a concrete device name
/// ("cpu", "cuda:0"). Throws std::invalid_argument for an unknown name or CUDA when unavailable.
std::string resolveDevice(const std::string& choice);
/// Intra-op threads; n <= 0 means all cores.
void setThreads(int n);
int threads();
/// One line: "cpu, 2 threads" / "cuda:0 (NVIDIA ...), CPU threads 16".
std::string deviceSummary(const std::string& device);

} // namespace gwb::engine
