#include "gwb/views/downsample.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::views {

QString downsampleModeName(DownsampleMode mode) {
    return mode == DownsampleMode::Max ? QStringLiteral("max") : QStringLiteral("mean");
}

MatrixLevel downsample(const MatrixSource& source, int64_t blockRows, int64_t blockCols, DownsampleMode mode,
                       const std::atomic<bool>* cancel) {
    MatrixLevel level;
    blockRows = std::max<int64_t>(1, blockRows);
    blockCols = std::max<int64_t>(1, blockCols);
    const int64_t R = source.rows();
    const int64_t C = source.cols();
    level.blockRows = blockRows;
    level.blockCols = blockCols;
    level.rows = (R + blockRows - 1) / blockRows;
    level.cols = (C + blockCols - 1) / blockCols;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    level.values.assign(static_cast<size_t>(level.rows * level.cols), nan);
    std::vector<double> acc(static_cast<size_t>(level.cols));
    std::vector<int64_t> count(static_cast<size_t>(level.cols));
    std::vector<float> row(static_cast<size_t>(C));
    const float* dense = source.dense();
    for (int64_t orow = 0; orow < level.rows; ++orow) {
        if (cancel && cancel->load()) return {};
        std::fill(acc.begin(), acc.end(), mode == DownsampleMode::Max ? -std::numeric_limits<double>::infinity() : 0.0);
        std::fill(count.begin(), count.end(), 0);
        const int64_t r1 = std::min(R, (orow + 1) * blockRows);
        for (int64_t r = orow * blockRows; r < r1; ++r) {
            const float* v = dense ? dense + r * C : row.data();
            if (!dense) source.row(r, row.data());
            for (int64_t c = 0; c < C; ++c) {
                const float x = v[c];
                if (!std::isfinite(x)) continue;
                const size_t oc = static_cast<size_t>(c / blockCols);
                if (mode == DownsampleMode::Max)
                    acc[oc] = std::max(acc[oc], static_cast<double>(x));
                else
                    acc[oc] += x;
                ++count[oc];
            }
        }
        float* out = level.values.data() + orow * level.cols;
        for (int64_t oc = 0; oc < level.cols; ++oc) {
            const auto k = static_cast<size_t>(oc);
            if (count[k] == 0) continue; // tile without a finite value stays NaN
            out[oc] = static_cast<float>(mode == DownsampleMode::Max ? acc[k] : acc[k] / static_cast<double>(count[k]));
        }
    }
    return level;
}

std::pair<double, double> finiteRange(const MatrixSource& source) {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    std::vector<float> row(static_cast<size_t>(source.cols()));
    for (int64_t r = 0; r < source.rows(); ++r) {
        const float* v = source.dense() ? source.dense() + r * source.cols() : row.data();
        if (!source.dense()) source.row(r, row.data());
        for (int64_t c = 0; c < source.cols(); ++c)
            if (std::isfinite(v[c])) {
                lo = std::min(lo, static_cast<double>(v[c]));
                hi = std::max(hi, static_cast<double>(v[c]));
            }
    }
    if (lo > hi) return {std::nan(""), std::nan("")};
    return {lo, hi};
}

MatrixPyramid::MatrixPyramid(MatrixSourcePtr source, DownsampleMode mode) : m_source(std::move(source)), m_mode(mode) {}

std::pair<int, int> MatrixPyramid::levelFor(double cellsPerPixelRows, double cellsPerPixelCols) {
    auto exponent = [](double cpp) {
        int e = 0;
        while (cpp >= 2.0 && e < 40) {
            cpp /= 2.0;
            ++e;
        }
        return e;
    };
    return {exponent(cellsPerPixelRows), exponent(cellsPerPixelCols)};
}

std::shared_ptr<const MatrixLevel> MatrixPyramid::cached(int ly, int lx) const {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_levels.find({ly, lx});
    return it == m_levels.end() ? nullptr : it->second;
}

std::shared_ptr<const MatrixLevel> MatrixPyramid::level(int ly, int lx, const std::atomic<bool>* cancel) {
    if (auto c = cached(ly, lx)) return c;
    auto computed =
        std::make_shared<MatrixLevel>(downsample(*m_source, int64_t{1} << ly, int64_t{1} << lx, m_mode, cancel));
    if (computed->values.empty() && m_source->rows() * m_source->cols() > 0) return nullptr; // cancelled
    std::lock_guard<std::mutex> lock(m_mutex);
    auto& slot = m_levels[{ly, lx}];
    if (!slot) slot = std::move(computed);
    return slot;
}

std::shared_ptr<const MatrixLevel> MatrixPyramid::bestCachedCoarser(int ly, int lx) const {
    std::lock_guard<std::mutex> lock(m_mutex);
    std::shared_ptr<const MatrixLevel> best;
    int bestScore = std::numeric_limits<int>::max();
    for (const auto& [key, lvl] : m_levels) {
        if (key.first < ly || key.second < lx) continue;
        const int score = (key.first - ly) + (key.second - lx);
        if (score < bestScore) {
            bestScore = score;
            best = lvl;
        }
    }
    return best;
}

} // namespace gwb::views
