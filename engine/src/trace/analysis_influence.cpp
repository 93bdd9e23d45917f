// The Grassmann influence of each offset on a token's g (analysis.h, GrassmannLayerAnalysis::influence):
// the linear read-out's projections (which also give the read-out contributions) and the per-offset
// MLP's outputs.
#include "analysis_util.h"

#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/product.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace gwb::engine::analysis_detail {

namespace geo = gwb::geometry;

namespace {
constexpr int64_t kChunk = 256; ///< tokens per progress step / GEMM block
} // namespace

/// The share of g in the block's mix, per channel: 1 - a for the paper gate (a x + (1 - a) g), a for
/// the others (a g; x + a g s).
Eigen::ArrayXd gShare(const GateVariant gate, const geo::RowMatrixXd& a, int64_t t) {
    return gate == GateVariant::Paper ? (1.0 - a.row(t).array()).transpose().eval()
                                      : a.row(t).array().transpose().eval();
}

/// Influence for aggregation per_offset_mlp: g = mean_D m_D with m_D = W_out GELU(W_in p^(D) + b_in)
/// + b_out, so offset D's share of g is exactly m_D / |W_t|: c(t, t-D) = ||share * m_D|| / |W_t|,
/// rows normalised. The (t, D) planes of a chunk of tokens go through the MLP as two GEMMs.
void mlpInfluence(const GrassmannLayerTrace& g, const geo::RowMatrixXd& z, const geo::RowMatrixXd& gate,
                  const ModelConfig& cfg, double eps, GrassmannLayerAnalysis& out, int64_t& zeroRows,
                  Progress& progress) {
    const int64_t T = z.rows(), r = z.cols(), C = geo::pairCount(r);
    const auto O = static_cast<int64_t>(g.offsets.size());
    const geo::RowMatrixXd wIn = matrixOf(g.wGeoIn, "wGeoIn"), wOut = matrixOf(g.wGeoOut, "wGeoOut");
    const Eigen::RowVectorXd bIn =
        Eigen::Map<const Eigen::RowVectorXf>(g.bGeoIn.data.data(), static_cast<int64_t>(g.bGeoIn.data.size()))
            .cast<double>();
    const Eigen::RowVectorXd bOut =
        Eigen::Map<const Eigen::RowVectorXf>(g.bGeoOut.data.data(), static_cast<int64_t>(g.bGeoOut.data.size()))
            .cast<double>();
    const double sign = cfg.stages.wedgePastFirst ? -1.0 : 1.0;
    for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
        const int64_t n = std::min(kChunk, T - t0);
        std::vector<std::pair<int64_t, int64_t>> pairs; // (t, o) valid
        for (int64_t t = t0; t < t0 + n; ++t)
            for (int64_t o = 0; o < O; ++o)
                if (t - g.offsets[static_cast<size_t>(o)] >= 0) pairs.emplace_back(t, o);
        geo::RowMatrixXd P(static_cast<int64_t>(pairs.size()), C);
        for (size_t k = 0; k < pairs.size(); ++k) {
            const auto [t, o] = pairs[k];
            const auto s = t - g.offsets[static_cast<size_t>(o)];
            double* row = P.row(static_cast<int64_t>(k)).data();
            double nn = 0;
            for (int64_t i = 0, c = 0; i < r; ++i)
                for (int64_t j = i + 1; j < r; ++j, ++c) {
                    row[c] = sign * (z(t, i) * z(s, j) - z(t, j) * z(s, i));
                    nn += row[c] * row[c];
                }
            const double scale = 1.0 / std::max(std::sqrt(nn), eps);
            for (int64_t c = 0; c < C; ++c)
                row[c] *= scale;
        }
        geo::RowMatrixXd hidden = (P * wIn.transpose()).rowwise() + bIn;
        hidden = hidden.unaryExpr([](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
        const geo::RowMatrixXd m = (hidden * wOut.transpose()).rowwise() + bOut; // pairs x d
        std::vector<double> c(static_cast<size_t>(O));
        size_t k = 0;
        for (int64_t t = t0; t < t0 + n; ++t) {
            std::fill(c.begin(), c.end(), -1.0);
            const Eigen::ArrayXd share = gShare(cfg.gate, gate, t);
            const size_t first = k; // the token's (t, o) pairs are pairs[first, k)
            while (k < pairs.size() && pairs[k].first == t)
                ++k;
            const int count = static_cast<int>(k - first);
            double sum = 0;
            for (size_t q = first; q < k; ++q) {
                const double v = (share * m.row(static_cast<int64_t>(q)).array().transpose()).matrix().norm() / count;
                c[static_cast<size_t>(pairs[q].second)] = v;
                sum += v;
            }
            if (count > 0 && !(sum > 0)) ++zeroRows;
            float* row = out.influence.row(t);
            for (int64_t o = 0; o < O; ++o)
                row[o] = count > 0 && sum > 0 && c[static_cast<size_t>(o)] >= 0
                             ? static_cast<float>(c[static_cast<size_t>(o)] / sum)
                             : kNaNf;
        }
        progress.advance(n);
    }
}

void singleOffsetInfluence(const geo::AggregatedBivectors& agg, const geo::RowMatrixXd& gate, const ModelConfig& cfg,
                           GrassmannLayerAnalysis& out, int64_t& zeroRows, Progress& progress) {
    const int64_t T = gate.rows();
    for (int64_t t = 0; t < T; ++t) {
        float* row = out.influence.row(t);
        row[0] = kNaNf;
        if (agg.validCount[static_cast<size_t>(t)] == 0) continue;
        // W_plu p = 0 only for p = 0 (z_t parallel to z_{t-D}, or zero); g's share of the mix is
        // zero only where every channel's share is.
        const bool some = agg.norms(t, 0) > 0 && (gShare(cfg.gate, gate, t) != 0.0).any();
        if (some)
            row[0] = 1.0f;
        else
            ++zeroRows;
    }
    progress.advance(T);
}

/// Influence for the linear read-out: c(t, t-D) = ||share * (W_plu p^(D))|| / |W_t|, rows normalised
/// (mean then normalise: the raw p(D), since the common factor 1 / (|W_t| sqrt(||q||^2 + eps))
/// cancels). W_plu (z_t ^ z_s) is bilinear: = M_t z_s with M_t = sum_i z_{t,i} A_i, A the
/// antisymmetric d x r x r tensor of W_plu's columns. One (T x r) x (r x d r) GEMM gives every M_t,
/// which costs r^2 d per token instead of |W| C(r,2) d for projecting each p^ separately; each
/// token's offsets then take one (|W| x r) x (r x d) product.
/// With unit planes the projections W_plu p^(D) also give every read-out contribution W_plu B_t
/// (their mean over the token's valid offsets, since B_t is the mean of the unit planes), which is
/// then written to `contribution` (T x d) and not computed a second time by analyzeReadout.
void planeInfluence(const GrassmannLayerTrace& g, const geo::RowMatrixXd& z, const geo::RowMatrixXd& gate,
                    const geo::AggregatedBivectors& agg, bool normalized, const ModelConfig& cfg, double eps,
                    GrassmannLayerAnalysis& out, int64_t& zeroRows, Progress& progress,
                    std::optional<geo::RowMatrixXd>& contribution) {
    const int64_t T = z.rows(), r = z.cols(), d = gate.cols();
    const auto O = static_cast<int64_t>(g.offsets.size());
    const geo::RowMatrixXd wPlu = matrixOf(g.wPlu, "wPlu"); // d x C(r,2)
    // With one or two offsets a layer (GrassLM: one), projecting each pair's unit plane,
    // O C(r,2) d per token, is cheaper than forming M_t, r^2 d per token.
    const bool pairRoute = normalized && O * (r - 1) < 2 * r;
    std::optional<geo::TransposedRhs> packed; // W_plu (pair route) or the tensor A, packed once for every chunk
    if (pairRoute) {
        packed.emplace(wPlu);
    } else {
        // Row j d + c, column i: A[c, i, j], so that row t of z A^T is M_t as an r x d row-major matrix.
        geo::RowMatrixXd tensor = geo::RowMatrixXd::Zero(d * r, r);
        for (int64_t i = 0, k = 0; i < r; ++i)
            for (int64_t j = i + 1; j < r; ++j, ++k)
                for (int64_t c = 0; c < d; ++c) {
                    tensor(j * d + c, i) = wPlu(c, k);
                    tensor(i * d + c, j) = -wPlu(c, k);
                }
        packed.emplace(tensor);
    }
    if (normalized) contribution.emplace(geo::RowMatrixXd::Zero(T, d));
    const double contributionSign = cfg.stages.wedgePastFirst ? -1.0 : 1.0; // as agg.b's
    std::vector<double> c(static_cast<size_t>(O));
    geo::RowMatrixXd past(O, r), projections(O, d); // a token's z_{t-D} and W_plu p^(D) (tensor route)
    geo::RowMatrixXd shares(T, d);                  // g's share of each token's mix (gShare), row by row
    for (int64_t t = 0; t < T; ++t)
        shares.row(t) = gShare(cfg.gate, gate, t).transpose();
    // The tensor route's chunk product holds r x d values per token: 16 tokens keep it in L2.
    const int64_t chunk = pairRoute ? kChunk : 16;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t n = std::min(chunk, T - t0);
        // Pair route: row i O + o is W_plu p^(D_o) / max(||p||, eps) of token t0 + i (zero where t - D < 0).
        // Tensor route: row i is M_{t0+i} (r x d).
        const geo::RowMatrixXd product = packed->multiply(
            pairRoute ? geo::pairPlanes(z, g.offsets, eps, t0, t0 + n).planes : geo::RowMatrixXd(z.middleRows(t0, n)));
        for (int64_t i = 0; i < n; ++i) {
            const int64_t t = t0 + i;
            const int count = agg.validCount[static_cast<size_t>(t)];
            if (!pairRoute) {
                for (int64_t o = 0; o < O; ++o) {
                    const int64_t s = t - g.offsets[static_cast<size_t>(o)];
                    if (s >= 0)
                        past.row(o) = z.row(s);
                    else
                        past.row(o).setZero();
                }
                geo::multiplyRowMajor(past.data(), O, r, product.row(i).data(), d, projections.data());
                if (normalized)
                    for (int64_t o = 0; o < O; ++o)
                        if (t - g.offsets[static_cast<size_t>(o)] >= 0)
                            projections.row(o) /= std::max(agg.norms(t, o), eps);
            }
            const auto share = shares.row(t).array();
            double sum = 0;
            for (int64_t o = 0; o < O; ++o) {
                if (t - g.offsets[static_cast<size_t>(o)] < 0) continue;
                const geo::RowMatrixXd& source = pairRoute ? product : projections;
                const auto y = source.row(pairRoute ? i * O + o : o);
                if (contribution) contribution->row(t) += y;
                const double v = (share * y.array()).matrix().norm() / count;
                c[static_cast<size_t>(o)] = v;
                sum += v;
            }
            if (contribution && count > 0) contribution->row(t) *= contributionSign / count;
            if (count > 0 && !(sum > 0)) ++zeroRows;
            float* row = out.influence.row(t);
            for (int64_t o = 0; o < O; ++o)
                row[o] = (count > 0 && sum > 0 && t - g.offsets[static_cast<size_t>(o)] >= 0)
                             ? static_cast<float>(c[static_cast<size_t>(o)] / sum)
                             : kNaNf;
        }
        progress.advance(n);
    }
}

} // namespace gwb::engine::analysis_detail
