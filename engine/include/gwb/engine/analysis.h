#pragma once
// Geometry analyses computed on a Trace (workbench-spec.md section 1). Torch-free: lives in the
// gwb_trace library with trace.h so that views, tests and the sanitizer build use it directly.
// NaN marks "not defined here" (e.g. an offset reaching before the prompt); definitions are
// repeated in definitions() so exports can carry them.

#include "gwb/engine/array.h"
#include "gwb/engine/trace.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gwb::engine {

struct GrassmannLayerAnalysis {
    std::vector<int> offsets;     ///< the layer's offsets (columns of the per-offset arrays)
    std::vector<float> residual;  ///< T   rho(B_t) of the mean bivector B_t; NaN at t with no valid offset
    std::vector<float> planarity; ///< T   s1^2 / sum s_k^2 of B_t; NaN at t with no valid offset
    /// T  coherence ||B_t|| of the mean of the unit planes p^(D): 1 when every offset gives the
    /// same oriented plane, smaller as the planes spread. Every p^(D) contains z_t, so B_t is
    /// always a plane (residual ~ 0, planarity ~ 1): coherence is what varies. NaN where no offset.
    std::vector<float> coherence;
    FloatArray pairNorm; ///< T x O  ||z_t ^ z_{t-D}|| (unnormalized); NaN where t-D < 0
    /// T x O x 2  principal angles (rad, ascending) between this layer's lifted plane of (t, D)
    /// and the next layer's lifted plane of the same (t, D); NaN for the last layer or t-D < 0.
    FloatArray anglesNext;
    /// T x O  Grassmann influence share c(t, t-D) = ||s_t * W_plu p^(D)|| / |W_t| (s_t = 1-a_t for the
    /// paper gate, a_t for geometry_only and residual; per_offset_mlp: the offset's MLP output in place
    /// of W_plu p^(D)), rows normalized to sum 1 over valid offsets; NaN where t-D < 0.
    FloatArray influence;
    std::vector<float> meanGate;      ///< T  mean over channels of a_t
    std::vector<float> gateAboveHalf; ///< T  fraction of channels with a_t > 0.5

    // Read-out planes: row c of W_plu as the antisymmetric r x r matrix A_c (workbench-spec.md).
    std::vector<float> readoutResidual;  ///< d  rho(A_c); NaN for an all-zero channel
    std::vector<float> readoutPlanarity; ///< d  s_1^2 / sum_k s_k^2 of A_c (1 = reads one plane); NaN for zero
    FloatArray readoutSpectrum;          ///< d x floor(r/2)  distinct singular values of A_c, descending
    FloatArray readoutTopPlane;          ///< d x r x 2  orthonormal basis (u, v) of A_c's top plane in R^r
    /// T x d  W_plu[c] . B_t = z_t^T A_c y_t = g_{t,c} - b_c (the channel's read-out of the token's
    /// plane); NaN where the token has no valid offset.
    FloatArray readoutContribution;
    /// T x d x 2  principal angles (rad, ascending) between the token plane span(z_t, y_t) and A_c's
    /// top plane in R^r; NaN where no valid offset (or a zero channel).
    FloatArray readoutAngles;
};

/// The k channels with the largest |readoutContribution| at token t, largest first (fewer when
/// the row has fewer finite values; empty for a token without a valid offset).
std::vector<int> topReadoutChannels(const GrassmannLayerAnalysis& layer, int64_t t, int k);

/// Per head and query row of an attention layer (H x T each).
struct AttentionLayerAnalysis {
    FloatArray entropy;       ///< H x T  H = -sum a log a (nats)
    FloatArray normEntropy;   ///< H x T  H / log(t+1); NaN at t = 0
    FloatArray sparsity;      ///< H x T  S(a) = E|a| / sqrt(E a^2) over the row's t+1 entries
    FloatArray top1;          ///< H x T  largest probability
    FloatArray effSupport;    ///< H x T  exp(H)
    FloatArray transportCost; ///< H x T  sum_j a_j C_j with C_j = -q_t.k_j
};

/// The parts of a Grassmann trace's analysis, so that a window can compute first what its visible
/// views show and the rest after. A Transformer trace's analysis is always whole (kAnalysisAll).
enum AnalysisPart : unsigned {
    kAnalysisCore = 1u,             ///< residual, planarity, coherence, pair norms, influence, gates
    kAnalysisReadout = 2u,          ///< the read-out planes and every readout* field
    kAnalysisLayerAngles = 4u,      ///< anglesNext (each layer's W_red pseudo-inverse)
    kAnalysisReadingSubspaces = 8u, ///< readingSubspaceDistance (row spaces of W_red)
    /// promptSubspaceDistance (a d x d covariance and its top eigenvectors per layer: at 4,096
    /// tokens of a d = 640 model, more than the rest of the core analysis)
    kAnalysisPromptSubspaces = 16u,
    kAnalysisAll = 31u,
};
/// Human names of the parts in a mask ("read-out planes", "angles between layers", ...); of a
/// Transformer's analysis (`grassmann` false): "attention-row metrics" (its core part) and
/// "prompt subspaces", the only parts it has.
std::vector<std::string> analysisPartNames(unsigned parts, bool grassmann = true);

struct TraceAnalysis {
    /// The parts computed (AnalysisPart bits); the fields of the others are empty. Whole when
    /// (parts & kAnalysisAll) == kAnalysisAll.
    unsigned parts = kAnalysisAll;
    bool has(unsigned part) const { return (parts & part) == part; }
    std::vector<GrassmannLayerAnalysis> grassmann; ///< N entries for a Grassmann trace, else empty
    std::vector<AttentionLayerAnalysis> attention; ///< N entries for a Transformer trace, else empty
    int promptSubspaceK = 4;                       ///< k of the prompt subspaces
    FloatArray promptSubspaceDistance;             ///< N x N  geodesic distance between layers' top-k prompt subspaces
    FloatArray readingSubspaceDistance;            ///< N x N  geodesic distance between row spaces of W_red (Grassmann)
    std::vector<std::string> warnings;             ///< rank drops and other flagged conditions, human-readable
    std::vector<unsigned> warningParts;            ///< the part each warning belongs to (parallel to warnings)
};

using AnalysisPtr = std::shared_ptr<const TraceAnalysis>;

/// Weight-only results (the read-out planes of each layer's W_plu: d small eigenproblems per
/// layer) kept between analyzeTrace calls, since a corpus run or a session in the window analyses
/// many traces of the same weights. Entries are keyed by the exact weight values, so one cache can
/// serve any number of models and never returns another model's planes. Thread-safe; it keeps
/// the most recent 64 layers in memory. Below it, with or without such a cache, the planes are
/// kept on disk ($GWB_CACHE_DIR, else $XDG_CACHE_HOME/gwb or ~/.cache/gwb; GWB_CACHE_DIR=none
/// turns it off) under a 128-bit hash of the weights, so a reopened model pays nothing for them;
/// the layers' reading subspaces row(W_red) and their distances are kept there too.
class AnalysisCache;
std::shared_ptr<AnalysisCache> makeAnalysisCache();

struct AnalysisOptions {
    int promptSubspaceK = 4;              ///< k of the prompt subspaces
    bool centerPromptSubspace = true;     ///< subtract the mean state before the principal subspace
    std::shared_ptr<AnalysisCache> cache; ///< optional: reuse weight-only results (see AnalysisCache)
    /// Threads analysing layers in parallel (<= 0: one per core). The result does not depend on it.
    int threads = 1;
    /// The parts of a Grassmann trace's analysis to compute (AnalysisPart bits).
    unsigned parts = kAnalysisAll;
};

/// Progress callback: (done, total) -> false to cancel.
using ProgressFn = std::function<bool(int64_t done, int64_t total)>;

/// Runs every analysis above (of a Grassmann trace: the parts in options.parts). Throws
/// gwb::engine::Cancelled when progress returns false.
TraceAnalysis analyzeTrace(const Trace& trace, const AnalysisOptions& options = {}, const ProgressFn& progress = {});

/// The analysis `partial` (of this trace) with the parts it lacks computed: equal to one
/// analyzeTrace of every part, warnings in the same order. options.parts is ignored.
TraceAnalysis completeAnalysis(const Trace& trace, const TraceAnalysis& partial, const AnalysisOptions& options = {},
                               const ProgressFn& progress = {});

/// Grassmann influence matrix of one layer as a dense T x T array (banded; zero elsewhere),
/// the row for token t over past tokens, from GrassmannLayerAnalysis::influence.
FloatArray influenceMatrix(const GrassmannLayerAnalysis& layer, int64_t T);

/// Jensen-Shannon divergence (nats) between token t's Grassmann influence row and an attention
/// row of the same length, and whether their argmax agree. Rows are renormalized first.
struct RowAgreement {
    double jsDivergence = 0;
    bool top1Agrees = false;
};
RowAgreement compareRows(const std::vector<float>& influenceRow, const std::vector<float>& attentionRow);

/// One-line definitions of every quantity, keyed by array name, for JSON side files and captions.
const std::map<std::string, std::string>& definitions();

/// Thrown when a long computation is cancelled through its progress callback.
struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace gwb::engine
