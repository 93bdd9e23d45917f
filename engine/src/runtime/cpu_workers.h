#pragma once
// Work side by side on the CPU (engine-internal): worker 0 runs on the calling thread (where progress
// and Python callbacks belong), workers 1..W-1 on threads of their own, and while more than one runs
// each has one intra-op thread (ScopedThreads), so W single-threaded workers share W cores instead of
// W thread pools spinning against each other.

#include "gwb/engine/device.h"

#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

namespace gwb::engine::detail {

/// Runs work(0) .. work(workers - 1) at once and returns when all have ended; an exception of
/// worker 0 is rethrown after the others are joined (the others must catch their own).
inline void runCpuWorkers(int workers, const std::function<void(int)>& work) {
    const std::optional<ScopedThreads> single =
        workers > 1 ? std::optional<ScopedThreads>(std::in_place, 1) : std::nullopt;
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w)
        pool.emplace_back(work, w);
    std::exception_ptr first;
    try {
        work(0);
    } catch (...) {
        first = std::current_exception();
    }
    for (std::thread& t : pool)
        t.join();
    if (first) std::rethrow_exception(first);
}

} // namespace gwb::engine::detail
