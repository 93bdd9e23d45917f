#pragma once
// Read-only matrices for heatmaps: dense, or rows computed on demand (attention rows of long
// prompts), so that a T x T matrix never has to be materialized to be looked at.

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <memory>
#include <vector>

namespace gwb::views {

/// A rows x cols matrix of floats read row by row. Implementations must allow concurrent row()
/// calls from several threads (the heatmap downsamples off the GUI thread).
class MatrixSource {
public:
    virtual ~MatrixSource() = default;
    virtual int64_t rows() const = 0;
    virtual int64_t cols() const = 0;
    /// Writes row r (cols() values, NaN = undefined) into out.
    virtual void row(int64_t r, float* out) const = 0;
    /// Pointer to contiguous row-major storage when the matrix is dense, else nullptr.
    virtual const float* dense() const { return nullptr; }
};

using MatrixSourcePtr = std::shared_ptr<const MatrixSource>;

/// Row-major dense matrix held in memory.
class DenseMatrixSource final : public MatrixSource {
public:
    /// Throws std::invalid_argument when values.size() != rows * cols.
    DenseMatrixSource(int64_t rows, int64_t cols, std::vector<float> values);
    int64_t rows() const override { return m_rows; }
    int64_t cols() const override { return m_cols; }
    void row(int64_t r, float* out) const override;
    const float* dense() const override { return m_values.data(); }

private:
    int64_t m_rows;
    int64_t m_cols;
    std::vector<float> m_values; ///< rows x cols, row-major
};

/// Matrix whose rows come from a function (e.g. gwb::engine::attentionRow padded to T).
class RowFunctionSource final : public MatrixSource {
public:
    /// fn(r, out) writes cols values of row r; it must be thread-safe.
    using RowFn = std::function<void(int64_t r, float* out)>;
    RowFunctionSource(int64_t rows, int64_t cols, RowFn fn);
    int64_t rows() const override { return m_rows; }
    int64_t cols() const override { return m_cols; }
    void row(int64_t r, float* out) const override { m_fn(r, out); }

private:
    int64_t m_rows;
    int64_t m_cols;
    RowFn m_fn;
};

/// Keeps the most recently read rows of an expensive source (e.g. attention rows recomputed from
/// q and k), so that repaints while panning do not recompute them. Thread-safe.
class CachedRowSource final : public MatrixSource {
public:
    CachedRowSource(MatrixSourcePtr inner, int64_t maxRows);
    int64_t rows() const override { return m_inner->rows(); }
    int64_t cols() const override { return m_inner->cols(); }
    void row(int64_t r, float* out) const override;

private:
    MatrixSourcePtr m_inner;
    int64_t m_maxRows;
    mutable std::mutex m_mutex;
    mutable std::list<std::pair<int64_t, std::vector<float>>> m_lru; ///< most recent first
    mutable std::unordered_map<int64_t, std::list<std::pair<int64_t, std::vector<float>>>::iterator> m_index;
};

MatrixSourcePtr makeDenseSource(int64_t rows, int64_t cols, std::vector<float> values);

} // namespace gwb::views
