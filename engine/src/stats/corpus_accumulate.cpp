// Which quantities one window adds to CorpusStats, with their fixed bin edges and definitions.
// Every per-token quantity is also accumulated against its position t in the window.

#include "gwb/engine/analysis.h"
#include "gwb/engine/corpus_stats.h"
#include "gwb/engine/trace.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gwb::engine {
namespace {

constexpr double kHalfPi = std::numbers::pi / 2;

// Fixed edges (documented in the README and in each file's meta.json through the .edges arrays).
std::vector<double> unitEdges() {
    return linearEdges(0, 1, 50);
} // gates, coherence, S(a), top-1
std::vector<double> angleEdges() {
    return linearEdges(0, kHalfPi, 45);
} // principal angles, 2 degrees
std::vector<double> distanceEdges() {
    return linearEdges(0, 8, 80);
} // geodesic distances (rad)
std::vector<double> pairNormEdges() {
    return logEdges(1e-3, 1e3, 60);
} // ||z_t ^ z_{t-D}||, 10 bins/decade
std::vector<double> surprisalEdges() {
    return linearEdges(0, 20, 80);
} // nats
std::vector<double> entropyEdges() {
    return linearEdges(0, 8, 80);
} // nats
std::vector<double> costEdges() {
    return linearEdges(-64, 64, 128);
} // -q.k
std::vector<double> jsEdges() {
    return linearEdges(0, std::numbers::ln2, 40);
}

void addMatrix(CorpusStats& s, const std::string& name, const std::string& def, const FloatArray& m) {
    if (m.empty() || m.rank() != 2) return;
    const int64_t N = m.dim(0);
    StatQuantity& q = s.quantity(name, def, {"layer", "layer"}, {N, N}, distanceEdges(), 0);
    for (int64_t i = 0; i < N * N; ++i)
        q.add(i, m.data[static_cast<size_t>(i)]);
}

void addGrassmann(CorpusStats& s, const std::string& p, const Trace& t, const TraceAnalysis& a) {
    const auto N = static_cast<int64_t>(a.grassmann.size());
    const int64_t T = t.length(), P = s.window, d = t.config.dModel;
    int64_t O = 0;
    std::string offsetText; // "[1,2,4] [1,3,8]": the offset of each slot, per layer
    for (const auto& l : a.grassmann) {
        O = std::max<int64_t>(O, static_cast<int64_t>(l.offsets.size()));
        offsetText += offsetText.empty() ? "[" : " [";
        for (size_t k = 0; k < l.offsets.size(); ++k) {
            if (k) offsetText += ',';
            offsetText += std::to_string(l.offsets[k]);
        }
        offsetText += "]";
    }
    StatQuantity& gm =
        s.quantity(p + ".gate_mean", "mean over channels of the gate a_t, per token", {"layer"}, {N}, unitEdges(), P);
    StatQuantity& ga = s.quantity(p + ".gate_above_half", "fraction of channels with a_t > 0.5, per token", {"layer"},
                                  {N}, unitEdges(), P);
    StatQuantity& gc = s.quantity(p + ".gate_channel", "gate a_t of one channel, per token", {"layer", "channel"},
                                  {N, d}, linearEdges(0, 1, 20), 0);
    StatQuantity& co = s.quantity(p + ".coherence", "coherence ||B_t|| of the mean unit offset plane, per token",
                                  {"layer"}, {N}, unitEdges(), P);
    StatQuantity& pn =
        s.quantity(p + ".pair_norm",
                   "||z_t ^ z_{t-D}|| (unnormalized), per token and offset slot; slot offsets per layer: " + offsetText,
                   {"layer", "offset"}, {N, O}, pairNormEdges(), P);
    StatQuantity* an = nullptr;
    if (N > 1)
        an = &s.quantity(p + ".angle_next",
                         "principal angles (rad) between a token's lifted plane of (t, D) in layer l and layer l+1; "
                         "slot offsets per layer: " +
                             offsetText,
                         {"transition", "offset", "angle"}, {N - 1, O, 2}, angleEdges(), 0);
    for (int64_t l = 0; l < N; ++l) {
        const GrassmannLayerAnalysis& la = a.grassmann[static_cast<size_t>(l)];
        const auto& gate = t.layers[static_cast<size_t>(l)].grassmann->gate;
        const auto Ol = static_cast<int64_t>(la.offsets.size());
        for (int64_t tok = 0; tok < T; ++tok) {
            const auto ti = static_cast<size_t>(tok);
            gm.add(l, la.meanGate[ti], tok);
            ga.add(l, la.gateAboveHalf[ti], tok);
            co.add(l, la.coherence[ti], tok);
            for (int64_t c = 0; c < d; ++c)
                gc.add(l * d + c, gate.at2(tok, c));
            for (int64_t k = 0; k < Ol; ++k) {
                pn.add(l * O + k, la.pairNorm.at2(tok, k), tok);
                if (an && l + 1 < N)
                    for (int64_t j = 0; j < 2; ++j)
                        an->add((l * O + k) * 2 + j, la.anglesNext.at3(tok, k, j));
            }
        }
    }
}

void addAttention(CorpusStats& s, const std::string& p, const TraceAnalysis& a) {
    const auto N = static_cast<int64_t>(a.attention.size());
    if (N == 0) return;
    const int64_t H = a.attention[0].entropy.dim(0), T = a.attention[0].entropy.dim(1), P = s.window;
    struct Item {
        const char* name;
        const char* def;
        std::vector<double> edges;
        FloatArray AttentionLayerAnalysis::*field;
        bool position;
    };
    const Item items[] = {
        {".attn_entropy", "entropy -sum a log a (nats) of a query row", entropyEdges(),
         &AttentionLayerAnalysis::entropy, true},
        {".attn_sparsity", "S(a) = E|a| / sqrt(E a^2) over the row's t+1 entries", unitEdges(),
         &AttentionLayerAnalysis::sparsity, true},
        {".attn_top1", "largest attention probability of a query row", unitEdges(), &AttentionLayerAnalysis::top1,
         true},
        {".attn_eot_cost", "transport cost sum_j a_j C_j with C_j = -q_t.k_j", costEdges(),
         &AttentionLayerAnalysis::transportCost, false},
    };
    for (const Item& it : items) {
        StatQuantity& q = s.quantity(p + it.name, it.def, {"layer", "head"}, {N, H}, it.edges, it.position ? P : 0);
        for (int64_t l = 0; l < N; ++l) {
            const FloatArray& v = a.attention[static_cast<size_t>(l)].*(it.field);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t tok = 0; tok < T; ++tok)
                    q.add(l * H + h, v.at2(h, tok), it.position ? tok : -1);
        }
    }
}

void addLensAndSurprisal(CorpusStats& s, const std::string& p, const Trace& t, int64_t characters) {
    const int64_t T = t.length(), P = s.window;
    StatQuantity& su =
        s.quantity(p + ".surprisal", "-log p(x_t | x_<t) in nats, tokens t >= 1", {}, {}, surprisalEdges(), P);
    double nats = 0;
    for (int64_t tok = 1; tok < T; ++tok) {
        const double v = t.surprisal[static_cast<size_t>(tok)];
        su.add(0, v, tok);
        if (std::isfinite(v)) nats += v;
    }
    const double bits = nats / std::numbers::ln2;
    s.totals[p + ".bits"] += bits;
    s.totals[p + ".characters"] += static_cast<double>(characters);
    s.totals[p + ".tokens_scored"] += static_cast<double>(std::max<int64_t>(0, T - 1));
    StatQuantity& bpc =
        s.quantity(p + ".bits_per_char", "per window: surprisal of tokens 1..T-1 in bits / their Unicode code points",
                   {}, {}, linearEdges(0, 10, 100), 0);
    if (characters > 0) bpc.add(0, bits / static_cast<double>(characters));
    if (!t.lens || t.lens->topIds.empty()) return;
    const IntArray& top = t.lens->topIds;
    const int64_t L = top.dim(0), K = top.dim(2);
    std::vector<double> edges;
    for (int64_t k = 0; k <= K + 1; ++k)
        edges.push_back(static_cast<double>(k) + 0.5);
    StatQuantity& lr = s.quantity(p + ".lens_rank",
                                  "logit-lens rank (1 = top) of the actual next token x_{t+1} from block l's input "
                                  "(l = N: final state); K+1 means 'not in the top K'",
                                  {"lens_layer"}, {L}, edges, P);
    for (int64_t l = 0; l < L; ++l)
        for (int64_t tok = 0; tok + 1 < T; ++tok) {
            const int32_t next = t.tokens[static_cast<size_t>(tok + 1)].id;
            int64_t rank = K + 1;
            for (int64_t k = 0; k < K; ++k)
                if (top.at3(l, tok, k) == next) {
                    rank = k + 1;
                    break;
                }
            lr.add(l, static_cast<double>(rank), tok);
        }
}

} // namespace

void accumulateWindow(CorpusStats& s, const std::string& role, const Trace& t, const TraceAnalysis& a,
                      int64_t characters) {
    if (!a.grassmann.empty()) addGrassmann(s, role, t, a);
    addAttention(s, role, a);
    addMatrix(s, role + ".prompt_subspace_distance",
              "geodesic distance (rad) between layers' top-k principal subspaces of the window's states",
              a.promptSubspaceDistance);
    addMatrix(s, role + ".reading_subspace_distance", "geodesic distance (rad) between layers' row(W_red)",
              a.readingSubspaceDistance);
    addLensAndSurprisal(s, role, t, characters);
}

void accumulateComparison(CorpusStats& s, const Trace& g, const TraceAnalysis& ga, const Trace& at) {
    const int64_t N =
        std::min<int64_t>(static_cast<int64_t>(ga.grassmann.size()), static_cast<int64_t>(at.layers.size()));
    const int64_t T = std::min(g.length(), at.length()), P = s.window;
    if (N == 0 || !at.layers[0].attention) return;
    const int64_t H = at.layers[0].attention->nHeads;
    StatQuantity& js = s.quantity("compare.influence_attention_js",
                                  "Jensen-Shannon divergence (nats) between token t's Grassmann influence row (model "
                                  "layer l) and the attention row of head h (baseline layer l), t >= 1",
                                  {"layer", "head"}, {N, H}, jsEdges(), P);
    StatQuantity& top = s.quantity("compare.influence_attention_top1",
                                   "1 when the argmax of the influence row equals the attention row's, else 0; t >= 1",
                                   {"layer", "head"}, {N, H}, {-0.5, 0.5, 1.5}, P);
    for (int64_t l = 0; l < N; ++l) {
        const FloatArray inf = influenceMatrix(ga.grassmann[static_cast<size_t>(l)], T);
        const AttentionLayerTrace& att = *at.layers[static_cast<size_t>(l)].attention;
        for (int64_t tok = 1; tok < T; ++tok) {
            const std::vector<float> row(inf.row(tok), inf.row(tok) + tok + 1);
            for (int64_t h = 0; h < H; ++h) {
                const RowAgreement r = compareRows(row, attentionRow(att, h, tok));
                js.add(l * H + h, r.jsDivergence, tok);
                top.add(l * H + h, r.top1Agrees ? 1.0 : 0.0, tok);
            }
        }
    }
}

} // namespace gwb::engine
