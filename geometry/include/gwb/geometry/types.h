#pragma once
// Common Eigen types of the geometry library. Batched entry points take row-major arrays so
// that trace arrays (row-major std::vector) map onto them without copies.

#include <Eigen/Dense>

#include <cstdint>
#include <string>

namespace gwb::geometry {

using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Maps a row-major float buffer (e.g. a trace's T x r array) as a double matrix copy.
RowMatrixXd toDouble(const float* data, int64_t rows, int64_t cols, const char* what);

/// Throws std::invalid_argument("<what>: ...") when m is empty or holds NaN/Inf.
void requireFinite(const Eigen::Ref<const Eigen::MatrixXd>& m, const char* what);
void requireFiniteRows(const Eigen::Ref<const RowMatrixXd>& m, const char* what);

} // namespace gwb::geometry
