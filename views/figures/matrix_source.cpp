#include "gwb/views/matrix_source.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gwb::views {

DenseMatrixSource::DenseMatrixSource(int64_t rows, int64_t cols, std::vector<float> values)
    : m_rows(rows), m_cols(cols), m_values(std::move(values)) {
    if (rows < 0 || cols < 0 || static_cast<int64_t>(m_values.size()) != rows * cols)
        throw std::invalid_argument("DenseMatrixSource: " + std::to_string(m_values.size()) + " values do not fill a " +
                                    std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
}

void DenseMatrixSource::row(int64_t r, float* out) const {
    std::copy_n(m_values.data() + r * m_cols, m_cols, out);
}

RowFunctionSource::RowFunctionSource(int64_t rows, int64_t cols, RowFn fn)
    : m_rows(rows), m_cols(cols), m_fn(std::move(fn)) {
    if (rows < 0 || cols < 0 || !m_fn)
        throw std::invalid_argument("RowFunctionSource: negative extent or no row function");
}

CachedRowSource::CachedRowSource(MatrixSourcePtr inner, int64_t maxRows)
    : m_inner(std::move(inner)), m_maxRows(std::max<int64_t>(1, maxRows)) {
    if (!m_inner) throw std::invalid_argument("CachedRowSource: no source");
}

void CachedRowSource::row(int64_t r, float* out) const {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_index.find(r);
        if (it != m_index.end()) {
            m_lru.splice(m_lru.begin(), m_lru, it->second);
            std::copy(it->second->second.begin(), it->second->second.end(), out);
            return;
        }
    }
    std::vector<float> values(static_cast<size_t>(m_inner->cols()));
    m_inner->row(r, values.data()); // computed outside the lock: other threads keep reading
    std::copy(values.begin(), values.end(), out);
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_index.count(r)) return;
    m_lru.emplace_front(r, std::move(values));
    m_index[r] = m_lru.begin();
    while (static_cast<int64_t>(m_lru.size()) > m_maxRows) {
        m_index.erase(m_lru.back().first);
        m_lru.pop_back();
    }
}

MatrixSourcePtr makeDenseSource(int64_t rows, int64_t cols, std::vector<float> values) {
    return std::make_shared<DenseMatrixSource>(rows, cols, std::move(values));
}

} // namespace gwb::views
