#include "parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gwb::engine::detail {

void parallelFor(size_t n, int workers, const std::function<void(size_t)>& fn) {
    const size_t threads = std::min(n, static_cast<size_t>(std::max(1, workers)));
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex errorMutex;
    auto work = [&] {
        for (size_t i = next++; i < n && !failed.load(); i = next++) {
            try {
                fn(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(errorMutex);
                if (!error) error = std::current_exception();
                failed.store(true);
            }
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& t : pool)
        t.join();
    if (error) std::rethrow_exception(error);
}

} // namespace gwb::engine::detail
