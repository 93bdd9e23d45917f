#include "gwb/views/matrix_source.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gwb::views {

DenseMatrixSource::DenseMatrixSource(int64_t rows, int64_t cols, std::vector<float> values)
    : m_rows(rows), m_cols(cols), m_values(std::move(values)) {
    if (rows < 0 || cols < 0 || static_cast<int64_t>(m_values.size()) != rows * cols)
        throw std::invalid_argument("DenseMatrixSource: " + std::to_string(m_values.size()) +
                                    " values do not fill a " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + " matrix");
}

void DenseMatrixSource::row(int64_t r, float* out) const {
    std::copy_n(m_values.data() + r * m_cols, m_cols, out);
}

RowFunctionSource::RowFunctionSource(int64_t rows, int64_t cols, RowFn fn)
    : m_rows(rows), m_cols(cols), m_fn(std::move(fn)) {
    if (rows < 0 || cols < 0 || !m_fn)
        throw std::invalid_argument("RowFunctionSource: negative extent or no row function");
}

MatrixSourcePtr makeDenseSource(int64_t rows, int64_t cols, std::vector<float> values) {
    return std::make_shared<DenseMatrixSource>(rows, cols, std::move(values));
}

} // namespace gwb::views
