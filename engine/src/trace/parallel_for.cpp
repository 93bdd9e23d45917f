#include "parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace gwb::engine::detail {

namespace {

/// Threads kept between parallel loops: starting and joining a thread per loop cost about a tenth
/// of a paper-size trace, whose forward pass runs some forty short loops (perf, 2026-11-24). One
/// loop at a time uses the pool; a loop that finds it busy (another thread's, or one nested in a
/// pool thread) starts threads of its own as before. Idle pool threads sleep on a condition.
class Pool {
public:
    /// Runs `work` on `extra` pool threads and the caller, and returns when all have finished;
    /// false (nothing run) when the pool is busy.
    bool run(size_t extra, const std::function<void()>& work) {
        std::unique_lock<std::mutex> lock(m_mutex);
        if (m_busy) return false;
        try {
            while (m_threads.size() < extra) {
                const size_t index = m_threads.size();
                m_threads.emplace_back([this, index] { loop(index); });
            }
        } catch (...) { // no thread to be had: the pool stays usable with the ones it has
            if (m_threads.size() < extra) return false;
        }
        m_busy = true;
        m_work = &work;
        m_wanted = extra;
        m_pending = extra;
        ++m_generation;
        lock.unlock();
        m_wake.notify_all();
        work();
        lock.lock();
        m_done.wait(lock, [&] { return m_pending == 0; });
        m_work = nullptr;
        m_busy = false;
        return true;
    }

private:
    void loop(size_t index) {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(m_mutex);
        for (;;) {
            m_wake.wait(lock, [&] { return m_generation != seen; });
            seen = m_generation;
            if (index >= m_wanted) continue;
            const std::function<void()>* work = m_work;
            lock.unlock();
            (*work)(); // never throws: parallelFor's work catches
            lock.lock();
            if (--m_pending == 0) m_done.notify_one();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake, m_done;
    std::vector<std::thread> m_threads;
    const std::function<void()>* m_work = nullptr;
    size_t m_wanted = 0, m_pending = 0;
    uint64_t m_generation = 0;
    bool m_busy = false;
};

/// The process's pool: never destroyed (its threads sleep until the process ends), so no loop
/// can outlive it during static destruction.
Pool& pool() {
    static Pool* p = new Pool();
    return *p;
}

} // namespace

void parallelFor(size_t n, int workers, const std::function<void(size_t)>& fn) {
    const size_t threads = std::min(n, static_cast<size_t>(std::max(1, workers)));
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex errorMutex;
    const std::function<void()> work = [&] {
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
    if (threads <= 1) {
        work();
    } else if (!pool().run(threads - 1, work)) {
        std::vector<std::thread> own;
        try {
            for (size_t t = 1; t < threads; ++t)
                own.emplace_back(work);
        } catch (const std::system_error&) { // fewer threads to be had: the others take the items
        }
        work();
        for (std::thread& t : own)
            t.join();
    }
    if (error) std::rethrow_exception(error);
}

} // namespace gwb::engine::detail
