// Read-out planes of a Grassmann layer (analysis.h, workbench-spec.md "Read-out planes").
#include "analysis_util.h"
#include "readout_disk_cache.h"

#include "gwb/geometry/product.h"
#include "gwb/geometry/readout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>

namespace gwb::engine {

namespace geo = gwb::geometry;

namespace analysis_detail {
/// The read-out planes of these weights from the disk cache, or computed and stored there.
std::shared_ptr<const geo::ReadoutPlanes> diskCachedReadoutPlanes(const FloatArray& wPlu, const geo::RowMatrixXd& w);
/// The lifter of these W_red from the disk cache, or computed and stored there.
std::shared_ptr<const geo::PlaneLifter> diskCachedLifter(const FloatArray& wRed);
} // namespace analysis_detail

class AnalysisCache {
public:
    /// The read-out planes of wPlu (d x C(r,2)), computed on a miss.
    std::shared_ptr<const geo::ReadoutPlanes> readoutPlanes(const FloatArray& wPlu, const geo::RowMatrixXd& w) {
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            for (const Entry& e : m_entries)
                if (e.shape == wPlu.shape && e.weights.size() == wPlu.data.size() &&
                    std::memcmp(e.weights.data(), wPlu.data.data(), e.weights.size() * sizeof(float)) == 0)
                    return e.planes;
        }
        // Computed (or read from disk) outside the lock: two threads missing at once both compute,
        // and both results are equal.
        auto planes = analysis_detail::diskCachedReadoutPlanes(wPlu, w);
        const std::lock_guard<std::mutex> lock(m_mutex);
        m_entries.push_front({wPlu.shape, wPlu.data, planes});
        if (m_entries.size() > kMaxEntries) m_entries.pop_back();
        return planes;
    }

    /// The pseudo-inverse lifter of wRed (r x d), read from disk or computed on a miss.
    std::shared_ptr<const geo::PlaneLifter> lifter(const FloatArray& wRed) {
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            for (const LifterEntry& e : m_lifters)
                if (e.shape == wRed.shape && e.weights.size() == wRed.data.size() &&
                    std::memcmp(e.weights.data(), wRed.data.data(), e.weights.size() * sizeof(float)) == 0)
                    return e.lifter;
        }
        auto lifter = analysis_detail::diskCachedLifter(wRed);
        const std::lock_guard<std::mutex> lock(m_mutex);
        m_lifters.push_front({wRed.shape, wRed.data, lifter});
        if (m_lifters.size() > kMaxEntries) m_lifters.pop_back();
        return lifter;
    }

private:
    static constexpr size_t kMaxEntries = 64;
    struct LifterEntry {
        std::vector<int64_t> shape;
        std::vector<float> weights;
        std::shared_ptr<const geo::PlaneLifter> lifter;
    };
    std::deque<LifterEntry> m_lifters;
    struct Entry {
        std::vector<int64_t> shape;
        std::vector<float> weights;
        std::shared_ptr<const geo::ReadoutPlanes> planes;
    };
    std::mutex m_mutex;
    std::deque<Entry> m_entries;
};

namespace analysis_detail {

std::shared_ptr<const geo::ReadoutPlanes> diskCachedReadoutPlanes(const FloatArray& wPlu, const geo::RowMatrixXd& w) {
    if (auto stored = loadReadoutPlanes(wPlu)) return stored;
    auto planes = std::make_shared<const geo::ReadoutPlanes>(geo::readoutPlanes(w));
    saveReadoutPlanes(wPlu, *planes);
    return planes;
}

std::shared_ptr<const geo::PlaneLifter> diskCachedLifter(const FloatArray& wRed) {
    if (auto stored = loadLifter(wRed)) return stored;
    auto lifter = std::make_shared<const geo::PlaneLifter>(matrixOf(wRed, "wRed"));
    saveLifter(wRed, *lifter);
    return lifter;
}

std::shared_ptr<const geo::PlaneLifter> cachedLifter(AnalysisCache* cache, const FloatArray& wRed) {
    return cache ? cache->lifter(wRed) : diskCachedLifter(wRed);
}

} // namespace analysis_detail

std::shared_ptr<AnalysisCache> makeAnalysisCache() {
    return std::make_shared<AnalysisCache>();
}

namespace analysis_detail {

void analyzeReadout(const GrassmannLayerTrace& g, const geo::RowMatrixXd& z, const geo::AggregatedBivectors& agg,
                    const geo::RowMatrixXd* contribution, GrassmannLayerAnalysis& out, Progress& progress,
                    std::vector<std::string>& warnings, const std::string& at, AnalysisCache* cache) {
    const int64_t T = z.rows(), r = z.cols();
    const geo::RowMatrixXd wPlu = matrixOf(g.wPlu, "wPlu"); // d x C(r,2)
    const int64_t d = wPlu.rows();
    const std::shared_ptr<const geo::ReadoutPlanes> shared =
        cache ? cache->readoutPlanes(g.wPlu, wPlu) : diskCachedReadoutPlanes(g.wPlu, wPlu);
    const geo::ReadoutPlanes& planes = *shared;
    if (planes.zeroRows > 0)
        warnings.push_back(at + std::to_string(planes.zeroRows) + " W_plu rows are zero (read-out values left NaN)");
    out.readoutResidual.resize(static_cast<size_t>(d));
    out.readoutPlanarity.resize(static_cast<size_t>(d));
    for (int64_t c = 0; c < d; ++c) {
        out.readoutResidual[static_cast<size_t>(c)] = static_cast<float>(planes.residual[c]);
        out.readoutPlanarity[static_cast<size_t>(c)] = static_cast<float>(planes.planarity[c]);
    }
    out.readoutSpectrum = toFloatArray(planes.spectrum);
    out.readoutTopPlane = FloatArray::zeros({d, r, 2});
    for (int64_t c = 0; c < d; ++c) {
        const Eigen::MatrixXd& q = planes.topPlane[static_cast<size_t>(c)];
        float* dst = out.readoutTopPlane.data.data() + c * r * 2;
        for (int64_t i = 0; i < r; ++i) {
            dst[i * 2] = static_cast<float>(q(i, 0));
            dst[i * 2 + 1] = static_cast<float>(q(i, 1));
        }
    }

    // Contributions W_plu[c] . B_t (one GEMM) and angles to the token plane span(z_t, y_t).
    geo::RowMatrixXd computed;
    if (!contribution) computed = geo::multiplyTransposed(agg.b, wPlu); // T x d
    const geo::RowMatrixXd& contrib = contribution ? *contribution : computed;
    const std::vector<int>& validCount = agg.validCount;
    const geo::RowMatrixXd& y = agg.y; // B_t = z_t ^ y_t: the token's plane is span(z_t, y_t)
    out.readoutContribution = FloatArray::zeros({T, d});
    out.readoutAngles = FloatArray::zeros({T, d, 2});
    constexpr int64_t kChunk = 256; // tokens per progress step
    for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
        const int64_t n = std::min(kChunk, T - t0);
        const geo::RowMatrixXd ang = geo::readoutPlaneAnglesBatch(z.middleRows(t0, n), y.middleRows(t0, n), planes);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t t = t0 + i;
            float* cRow = out.readoutContribution.row(t);
            float* aRow = out.readoutAngles.data.data() + t * d * 2;
            if (validCount[static_cast<size_t>(t)] == 0) {
                std::fill(cRow, cRow + d, kNaNf);
                std::fill(aRow, aRow + d * 2, kNaNf);
                continue;
            }
            for (int64_t c = 0; c < d; ++c)
                cRow[c] = static_cast<float>(contrib(t, c));
            for (int64_t k = 0; k < 2 * d; ++k)
                aRow[k] = static_cast<float>(ang(i, k));
        }
        progress.advance(n);
    }
}

void markReadoutUndefined(GrassmannLayerAnalysis& out, int64_t T, int64_t d, int64_t r, Progress& progress,
                          std::vector<std::string>& warnings, const std::string& at) {
    auto undefined = [](std::vector<int64_t> shape) {
        return FloatArray(shape, std::vector<float>(static_cast<size_t>(FloatArray::count(shape)), kNaNf));
    };
    out.readoutResidual.assign(static_cast<size_t>(d), kNaNf);
    out.readoutPlanarity.assign(static_cast<size_t>(d), kNaNf);
    out.readoutSpectrum = undefined({d, r / 2});
    out.readoutTopPlane = undefined({d, r, 2});
    out.readoutContribution = undefined({T, d});
    out.readoutAngles = undefined({T, d, 2});
    warnings.push_back(at + "read-out planes are not defined (left NaN): no linear W_plu reads the planes; each goes "
                            "through the per-offset MLP");
    progress.advance(T);
}

} // namespace analysis_detail

std::vector<int> topReadoutChannels(const GrassmannLayerAnalysis& layer, int64_t t, int k) {
    const FloatArray& c = layer.readoutContribution;
    if (c.rank() != 2 || t < 0 || t >= c.dim(0) || k <= 0) return {};
    const int64_t d = c.dim(1);
    const float* row = c.data.data() + t * d;
    std::vector<int> idx;
    for (int64_t i = 0; i < d; ++i)
        if (std::isfinite(row[i])) idx.push_back(static_cast<int>(i));
    const size_t n = std::min(idx.size(), static_cast<size_t>(k));
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                      [row](int a, int b) { return std::abs(row[a]) > std::abs(row[b]); });
    idx.resize(n);
    return idx;
}

} // namespace gwb::engine
