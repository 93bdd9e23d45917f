#include "analysis_util.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <stdexcept>

namespace gwb::engine::analysis_detail {

geometry::RowMatrixXd matrixOf(const FloatArray& a, const char* what) {
    if (a.rank() != 2) throw std::invalid_argument(std::string("analysis: ") + what + " must be a 2-D array");
    return geometry::toDouble(a.data.data(), a.dim(0), a.dim(1), what);
}

FloatArray toFloatArray(const geometry::RowMatrixXd& m) {
    FloatArray out = FloatArray::zeros({m.rows(), m.cols()});
    Eigen::Map<geometry::RowMatrixXf>(out.data.data(), m.rows(), m.cols()) = m.cast<float>();
    return out;
}

void Progress::advance(int64_t units) {
    const std::lock_guard<std::mutex> lock(m_mutex);
    m_done = std::min(m_total, m_done + units);
    if (m_fn && !m_fn(m_done, m_total)) throw Cancelled();
}

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

} // namespace gwb::engine::analysis_detail
