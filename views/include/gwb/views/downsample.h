#pragma once
// Tile downsampling of big matrices: each output cell summarizes a blockRows x blockCols tile
// (max or mean of the tile's finite values; NaN when the tile has none), and a cache of such
// levels keyed by the power-of-two block sizes so that each zoom level is computed once.

#include "gwb/views/matrix_source.h"

#include <QString>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace gwb::views {

enum class DownsampleMode { Max, Mean };
QString downsampleModeName(DownsampleMode mode); ///< "max", "mean"

/// One downsampled level. Edge tiles are partial (the matrix need not divide evenly).
struct MatrixLevel {
    int64_t rows = 0;          ///< ceil(source rows / blockRows)
    int64_t cols = 0;          ///< ceil(source cols / blockCols)
    int64_t blockRows = 1;     ///< source rows per output row
    int64_t blockCols = 1;     ///< source cols per output col
    std::vector<float> values; ///< rows x cols row-major, summaries (same units as the source)
    float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

/// Summarizes `source` by blockRows x blockCols tiles. Returns an empty level when `cancel` is set.
MatrixLevel downsample(const MatrixSource& source, int64_t blockRows, int64_t blockCols, DownsampleMode mode,
                       const std::atomic<bool>* cancel = nullptr);

/// Finite min and max of a source (NaN, NaN when it has no finite value).
std::pair<double, double> finiteRange(const MatrixSource& source);

/// Thread-safe cache of levels of one source; level (0, 0) is the source itself.
class MatrixPyramid {
public:
    MatrixPyramid(MatrixSourcePtr source, DownsampleMode mode);
    const MatrixSource& source() const { return *m_source; }
    MatrixSourcePtr sourcePtr() const { return m_source; }
    DownsampleMode mode() const { return m_mode; }

    /// Power-of-two exponents (rows, cols) whose blocks are the largest not exceeding the given
    /// number of source cells per output pixel in each direction.
    static std::pair<int, int> levelFor(double cellsPerPixelRows, double cellsPerPixelCols);
    /// The level for block 2^ly x 2^lx if cached (or (0,0)), else nullptr.
    std::shared_ptr<const MatrixLevel> cached(int ly, int lx) const;
    /// The level, computing and caching it when absent (may take long for big sources).
    std::shared_ptr<const MatrixLevel> level(int ly, int lx, const std::atomic<bool>* cancel = nullptr);
    /// The coarsest-cached level with exponents >= (ly, lx), for a preview while computing.
    std::shared_ptr<const MatrixLevel> bestCachedCoarser(int ly, int lx) const;

private:
    MatrixSourcePtr m_source;
    DownsampleMode m_mode;
    mutable std::mutex m_mutex;
    std::map<std::pair<int, int>, std::shared_ptr<const MatrixLevel>> m_levels;
};

} // namespace gwb::views
