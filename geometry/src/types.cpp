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
    if (!m.allFinite()) throw std::invalid_argument(std::string(what) + ": input contains NaN or Inf");
}

} // namespace gwb::geometry
