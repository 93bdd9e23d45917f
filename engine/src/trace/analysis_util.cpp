#include "analysis_util.h"

#include <algorithm>
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

} // namespace gwb::engine::analysis_detail
