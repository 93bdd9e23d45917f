// Influence matrix, row agreement and the definitions table (analysis.h).
#include "gwb/engine/analysis.h"

#include "gwb/geometry/attention_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gwb::engine {

FloatArray influenceMatrix(const GrassmannLayerAnalysis& layer, int64_t T) {
    const auto O = static_cast<int64_t>(layer.offsets.size());
    if (T <= 0) throw std::invalid_argument("influenceMatrix: T must be positive");
    if (layer.influence.rank() != 2 || layer.influence.dim(0) != T || layer.influence.dim(1) != O)
        throw std::invalid_argument("influenceMatrix: influence must be T x O = " + std::to_string(T) + " x " +
                                    std::to_string(O));
    FloatArray m = FloatArray::zeros({T, T});
    for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < O; ++o) {
            const int64_t s = t - layer.offsets[static_cast<size_t>(o)];
            const float v = layer.influence.at2(t, o);
            if (s >= 0 && std::isfinite(v)) m.data[static_cast<size_t>(t * T + s)] = v;
        }
    return m;
}

RowAgreement compareRows(const std::vector<float>& influenceRow, const std::vector<float>& attentionRow) {
    if (influenceRow.size() != attentionRow.size())
        throw std::invalid_argument("compareRows: rows have different lengths (" + std::to_string(influenceRow.size()) +
                                    " vs " + std::to_string(attentionRow.size()) + ")");
    const std::vector<double> p(influenceRow.begin(), influenceRow.end());
    const std::vector<double> q(attentionRow.begin(), attentionRow.end());
    RowAgreement out;
    out.jsDivergence = geometry::jensenShannon(p, q); // validates: non-empty, finite, >= 0, nonzero sum
    out.top1Agrees =
        std::max_element(p.begin(), p.end()) - p.begin() == std::max_element(q.begin(), q.end()) - q.begin();
    return out;
}

const std::map<std::string, std::string>& definitions() {
    static const std::map<std::string, std::string> defs = {
        {"pairNorm", "||z_t ^ z_{t-D}||_2, Plücker norm of the reduced pair (current x past), before normalization"},
        {"residual",
         "Grassmann-Plücker residual rho(B_t) = sqrt(sum_{i<j<k<l} (B_ij B_kl - B_ik B_jl + B_il B_jk)^2) / "
         "||B_t||^2 of B_t = mean over valid offsets D of p^(D) = p / max(||p||, eps); 0 iff B_t is a plane. "
         "Note: every p^(D) contains z_t, so B_t = z_t ^ mean_D(z_{t-D} / max(||p_D||, eps)) is always a "
         "plane and this value measures rounding only"},
        {"coherence", "||B_t||, the norm of the mean of the unit Plücker vectors p^(D) over valid offsets; 1 when "
                      "every offset gives the same oriented plane, smaller as the offset planes spread"},
        {"planarity", "s1^2 / sum_k s_k^2 of B_t, s_k the distinct singular-value pairs of its antisymmetric matrix; "
                      "1 iff B_t is a plane (always, up to rounding: see residual)"},
        {"anglesNext", "principal angles (rad, Knyazev-Argentati sine-cosine) between span(pinv(W_red^l) z^l_t, "
                       "pinv(W_red^l) z^l_{t-D}) and the same lifted plane of layer l+1, in R^d"},
        {"influence", "c(t, t-D) = ||s_t * (W_plu p^(D))||_2 / |W_t| (no bias), normalized to sum 1 over the valid "
                      "offsets of token t; s_t the share of g in the mix: 1 - a_t for the paper gate (a x + (1 - a) "
                      "g), a_t for geometry_only (a g) and residual (x + a g s); for per_offset_mlp the offset's "
                      "MLP output m_D in place of W_plu p^(D) (g = mean_D m_D)"},
        {"meanGate", "mean over the d channels of the gate a_t"},
        {"readoutResidual", "Grassmann-Plücker residual rho(A_c) of channel c's read-out bivector, row c of W_plu "
                            "as the antisymmetric r x r matrix A_c; 0 iff the channel reads a single 2-plane"},
        {"readoutPlanarity", "s_1^2 / sum_k s_k^2 of A_c over its distinct singular-value pairs: 1 for one plane, "
                             "1/2 for two equal orthogonal planes"},
        {"readoutSpectrum", "distinct singular values s_1 >= s_2 >= ... of A_c (they come in equal pairs)"},
        {"readoutTopPlane", "orthonormal basis (u, v) in R^r of the invariant 2-plane of A_c's largest pair"},
        {"readoutContribution", "W_plu[c] . B_t = z_t^T A_c y_t = g_{t,c} - b_c, with y_t = mean_D z_{t-D} / "
                                "max(||z_t ^ z_{t-D}||, eps) so that B_t = z_t ^ y_t"},
        {"readoutAngles", "principal angles (rad) between the token plane span(z_t, y_t) and channel c's top "
                          "plane, in R^r"},
        {"gateAboveHalf", "fraction of the d channels with a_t > 0.5"},
        {"entropy", "H = -sum_j a_j log a_j (nats) of the attention row of query t (j <= t)"},
        {"normEntropy", "H / log(t + 1); NaN at t = 0"},
        {"sparsity", "S(a) = E|a| / sqrt(E a^2) over the row's t + 1 entries (1 uniform, 1/sqrt(t+1) one-hot)"},
        {"top1", "largest attention probability of the row"},
        {"effSupport", "exp(H), effective number of attended tokens"},
        {"transportCost", "sum_j a_j C_j with C_j = -q_t . k_j (unscaled; the row is the entropic-OT solution at "
                          "temperature sqrt(d_head))"},
        {"promptSubspaceDistance", "geodesic Grassmann distance ||theta||_2 between layers' top-k principal subspaces "
                                   "of their input states h (centred unless stated)"},
        {"readingSubspaceDistance", "geodesic Grassmann distance ||theta||_2 between the row spaces of W_red of two "
                                    "layers (Gr(r, d))"},
        {"jsDivergence", "Jensen-Shannon divergence (nats) between the renormalized Grassmann influence row and an "
                         "attention row"},
    };
    return defs;
}

} // namespace gwb::engine
