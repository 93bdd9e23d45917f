#pragma once
// A parallel loop on plain std::threads, for the engine's own kernels and analyses. (LibTorch's
// at::parallel_for is a header template: built without OpenMP, as the engine is, it runs serially.)

#include <cstddef>
#include <functional>

namespace gwb::engine::detail {

/// Runs fn(0) ... fn(n-1) on up to `workers` threads (the caller's among them). The first
/// exception thrown by any fn is rethrown here after every thread has stopped; the others then
/// start no further items.
void parallelFor(size_t n, int workers, const std::function<void(size_t)>& fn);

} // namespace gwb::engine::detail
