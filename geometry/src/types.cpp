#include "gwb/geometry/types.h"

#include <stdexcept>

namespace gwb::geometry {

RowMatrixXd toDouble(const float* data, int64_t rows, int64_t cols, const char* what) {
    if (rows <= 0 || cols <= 0)
        throw std::invalid_argument(std::string(what) + ": empty array (" + std::to_string(rows) + " x " +
                                    std::to_string(cols) + ")");
    if (data == nullptr) throw std::invalid_argument(std::string(what) + ": null data pointer");
    return Eigen::Map<const RowMatrixXf>(data, rows, cols).cast<double>();
}

void requireFinite(const Eigen::Ref<const Eigen::MatrixXd>& m, const char* what) {
    if (m.size() == 0) throw std::invalid_argument(std::string(what) + ": empty input");
    if (!m.allFinite()) throw std::invalid_argument(std::string(what) + ": input contains NaN or Inf");
}

void requireFiniteRows(const Eigen::Ref<const RowMatrixXd>& m, const char* what) {
    if (m.size() == 0) throw std::invalid_argument(std::string(what) + ": empty input");
    // x * 0 is 0 for every finite x and NaN for NaN and +-Inf: four running sums of it stay 0
    // exactly when every value is finite (one pass, no branch per value).
    double acc[4] = {0, 0, 0, 0};
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const double* row = m.row(i).data();
        const Eigen::Index n = m.cols();
        Eigen::Index j = 0;
        for (; j + 4 <= n; j += 4)
            for (int k = 0; k < 4; ++k)
                acc[k] += row[j + k] * 0.0;
        for (; j < n; ++j)
            acc[0] += row[j] * 0.0;
    }
    if (!(acc[0] == 0 && acc[1] == 0 && acc[2] == 0 && acc[3] == 0))
        throw std::invalid_argument(std::string(what) + ": input contains NaN or Inf");
}

} // namespace gwb::geometry
