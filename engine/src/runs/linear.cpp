// Direct logit attribution of the pre-norm residual stream (gwb/engine/patching.h,
// linearAttribution): every write at the metric position, split per offset and read-out channel
// (Grassmann) or per head (attention), read through the final LayerNorm with its scale frozen at
// the corrupted run's value.

#include "gwb/engine/config_io.h"
#include "gwb/engine/patching.h"
#include "gwb/engine/sites.h"

#include "model/model_impl.h"
#include "runs/patching_request.h"

#include <cmath>

#include <stdexcept>

namespace gwb::engine {
namespace {

using torch::indexing::Slice;

/// The affine map of a LayerNorm with its scale frozen: w -> P(w) * gamma / sigma, as a direction
/// for dot products: P(gamma * u) / sigma (P symmetric). sigma from the row x it saw.
torch::Tensor throughNorm(const torch::nn::LayerNorm& ln, const torch::Tensor& x, const torch::Tensor& u, double eps) {
    const torch::Tensor xc = x - x.mean();
    const torch::Tensor sigma = (xc * xc).mean().add(eps).sqrt();
    const torch::Tensor gu = ln->weight.to(torch::kDouble) * u;
    return (gu - gu.mean()) / sigma;
}

struct Terms {
    std::vector<std::string> labels;
    std::vector<int> layers;
    std::vector<torch::Tensor> writes;  ///< d each (double), in the residual stream's coordinates
    std::vector<torch::Tensor> channel; ///< per block: d-vector of the offsets' summed write before LN_mix
    std::vector<int> channelBlock;
};

} // namespace

LinearResult linearAttribution(const Model& model, const PathRequest& q) {
    detail::validatePathRequest(model, q, "direct logit attribution");
    const ModelConfig& c = model.config();
    if (c.norm != NormPlacement::Pre)
        throw std::invalid_argument(
            std::string("--linear needs a pre-norm model, whose residual stream is the embedding plus each block's "
                        "writes; this model is ") +
            normName(c.norm) +
            (c.norm == NormPlacement::Post ? " (a LayerNorm after every residual addition mixes the writes)"
                                           : " (no skip path around the mixer: the block's output is not h plus a "
                                             "write)") +
            ". Its direct effects are `gwb paths` without --linear.");
    // The past x current orientation only flips every plane's sign, which the planes recorded here carry.
    if (c.kind == ModelKind::Grassmann && (c.stages.anyBeyondOrientation() || c.gate == GateVariant::Residual))
        throw std::invalid_argument(
            "--linear splits the mixer's write into its offsets' terms for the paper's mixer; this model's mixer has "
            "further stages (a norm on z or g, a gate of x alone, x + a g s, an output projection: "
            "GrassmannGPTv3's), whose write does not split that way. Its direct effects are `gwb paths` without "
            "--linear.");
    const bool grassmann = c.kind == ModelKind::Grassmann;
    const int64_t T = static_cast<int64_t>(q.clean.size());
    const int64_t m = q.position < 0 ? T - 1 : q.position;

    std::lock_guard<std::mutex> lock(model.impl().mutex);
    torch::NoGradGuard noGrad;
    LanguageModelImpl& net = *model.impl().net;
    net.eval();
    const torch::Device device = model.impl().device;
    const auto D = torch::kDouble;

    // Writes of one run at position m; LN_mix scales of the corrupted run are kept for both.
    std::vector<torch::Tensor> mixX; // per block: the input of LN_mix (corrupted run), for its sigma
    auto writesOf = [&](const std::vector<int64_t>& ids, bool corrupted, Terms& t, torch::Tensor& final) {
        torch::Tensor h = net.embed(torch::tensor(ids, torch::kLong).view({1, -1}).to(device));
        t.labels.push_back("embed");
        t.layers.push_back(-1);
        t.writes.push_back(h[0][m].to(D));
        for (int l = 0; l < c.nLayers; ++l) {
            const std::string L = std::to_string(l);
            BlockImpl& b = *net.blocks()[static_cast<size_t>(l)];
            BlockRecord rec;
            rec.wantPlucker = grassmann;
            const torch::Tensor out = b.run(h, SuffixContext{}, nullptr, &rec);
            torch::Tensor mixWrite; // the whole mixer write before LN_mix (for its sigma)
            if (grassmann) {
                auto& g = static_cast<GrassmannBlockImpl&>(b);
                const torch::Tensor x = g.ln1(h)[0][m].to(D);
                const torch::Tensor a = rec.gate[0][m].to(D);
                const bool paper = c.gate == GateVariant::Paper;
                const torch::Tensor share = paper ? 1 - a : a;
                const auto& offs = g.offsets();
                const torch::Tensor P = rec.plucker[0][m].to(D); // |W| x C
                int64_t count = 0;
                for (int Dd : offs)
                    count += Dd <= m;
                double scale = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
                if (count > 0 && c.aggregation == Aggregation::MeanThenNormalize) {
                    torch::Tensor qv = torch::zeros({P.size(1)}, P.options());
                    for (size_t o = 0; o < offs.size(); ++o)
                        if (offs[o] <= m) qv += P[static_cast<int64_t>(o)];
                    qv /= static_cast<double>(count);
                    scale /= std::sqrt((qv * qv).sum().item<double>() + c.pluckerEps);
                }
                // The map of one plane without its bias: W_plu p, or W_out GELU(W_in p + b_in) for the
                // per-offset MLP (each offset's MLP output is its own term; b_out is the mixer bias).
                const bool mlp = c.aggregation == Aggregation::PerOffsetMlp;
                Dense& last = mlp ? g.geoOut : g.wPlu;
                const torch::Tensor W = last->weight.to(D); // d x C (W_plu) or d x d_geom (W_out)
                auto project = [&](const torch::Tensor& p) {
                    if (!mlp) return torch::mv(W, p);
                    return torch::mv(W, torch::gelu(torch::mv(g.geoIn->weight.to(D), p) + g.geoIn->bias.to(D)));
                };
                torch::Tensor channel = torch::zeros({c.dModel}, W.options());
                mixWrite = torch::zeros({c.dModel}, W.options());
                for (size_t o = 0; o < offs.size(); ++o) {
                    if (offs[o] > m) continue;
                    const torch::Tensor w = share * project(P[static_cast<int64_t>(o)]) * scale;
                    t.labels.push_back(siteName(SiteKind::Offset, l, offs[o]));
                    t.layers.push_back(l);
                    t.writes.push_back(w);
                    channel += w;
                    mixWrite += w;
                }
                if (count > 0 || c.empty == EmptyRule::Bias) {
                    const torch::Tensor w = share * last->bias.to(D);
                    t.labels.push_back("mixer_bias." + L);
                    t.layers.push_back(l);
                    t.writes.push_back(w);
                    mixWrite += w;
                }
                if (paper) {
                    const torch::Tensor w = a * x;
                    t.labels.push_back("gate_skip." + L);
                    t.layers.push_back(l);
                    t.writes.push_back(w);
                    mixWrite += w;
                }
                t.channel.push_back(channel);
                t.channelBlock.push_back(l);
            } else {
                auto& at = static_cast<AttentionBlockImpl&>(b);
                const int64_t H = c.nHeads, dh = c.dModel / H;
                const torch::Tensor Wo = at.outProj->weight.to(D); // d x d
                const torch::Tensor ctx = rec.heads[0][m].to(D);   // H x dh
                mixWrite = torch::zeros({c.dModel}, Wo.options());
                for (int64_t hd = 0; hd < H; ++hd) {
                    const torch::Tensor w = torch::mv(Wo.index({Slice(), Slice(hd * dh, (hd + 1) * dh)}), ctx[hd]);
                    t.labels.push_back(siteName(SiteKind::Head, l, hd));
                    t.layers.push_back(l);
                    t.writes.push_back(w);
                    mixWrite += w;
                }
                const torch::Tensor w = at.outProj->bias.to(D);
                t.labels.push_back("attn_bias." + L);
                t.layers.push_back(l);
                t.writes.push_back(w);
                mixWrite += w;
            }
            // LN_mix: the mixer writes pass through it with the corrupted run's scale; its beta is a term.
            torch::nn::LayerNorm lnMix =
                grassmann ? static_cast<GrassmannBlockImpl&>(b).lnMix : static_cast<AttentionBlockImpl&>(b).lnMix;
            if (lnMix) {
                if (corrupted) mixX.push_back(mixWrite);
                t.labels.push_back("ln_mix_bias." + L);
                t.layers.push_back(l);
                t.writes.push_back(lnMix->bias.to(D));
            }
            t.labels.push_back(siteName(SiteKind::Ffn, l));
            t.layers.push_back(l);
            t.writes.push_back(rec.ffn[0][m].to(D));
            h = out;
        }
        final = h[0][m].to(D);
    };
    Terms corrupt, clean;
    torch::Tensor finalCorrupt, finalClean;
    writesOf(q.corrupt, true, corrupt, finalCorrupt);
    writesOf(q.clean, false, clean, finalClean);

    // The readout direction of the final LayerNorm + tied head, its scale from the corrupted run.
    const torch::Tensor E = net.tokEmbed->weight;
    const torch::Tensor delta = (E[q.answer] - E[q.wrong]).to(D);
    const double eps = c.layerNormEps;
    const torch::Tensor v = throughNorm(net.lnFinal, finalCorrupt, delta, eps);

    LinearResult res;
    res.metricPosition = m;
    res.labels = corrupt.labels;
    res.layers = corrupt.layers;
    res.bias = (net.lnFinal->bias.to(D) * delta).sum().item<double>();
    auto metricOf = [&](const torch::Tensor& fin) {
        const torch::Tensor logits = net.head(fin.to(torch::kFloat).view({1, 1, -1})).view({-1}).to(D);
        return (logits[q.answer] - logits[q.wrong]).item<double>();
    };
    res.corruptMetric = metricOf(finalCorrupt);
    res.cleanMetric = metricOf(finalClean);
    // Each term's direction: v, or through LN_mix (frozen at the corrupted run's scale) for mixer writes.
    std::vector<torch::Tensor> layerDir(static_cast<size_t>(c.nLayers));
    for (int l = 0, k = 0; l < c.nLayers; ++l) {
        BlockImpl& b = *net.blocks()[static_cast<size_t>(l)];
        torch::nn::LayerNorm lnMix =
            grassmann ? static_cast<GrassmannBlockImpl&>(b).lnMix : static_cast<AttentionBlockImpl&>(b).lnMix;
        layerDir[static_cast<size_t>(l)] = lnMix ? throughNorm(lnMix, mixX[static_cast<size_t>(k++)], v, eps) : v;
    }
    auto termValue = [&](const Terms& t, size_t i) {
        const std::string& name = t.labels[i];
        const bool throughMix = t.layers[i] >= 0 && name.rfind("ffn.", 0) != 0 && name.rfind("ln_mix_bias.", 0) != 0;
        const torch::Tensor& dir = throughMix ? layerDir[static_cast<size_t>(t.layers[i])] : v;
        return (t.writes[i] * dir).sum().item<double>();
    };
    for (size_t i = 0; i < corrupt.labels.size(); ++i) {
        res.corrupt.push_back(termValue(corrupt, i));
        res.clean.push_back(termValue(clean, i));
    }
    if (grassmann) {
        res.channels = c.dModel;
        for (size_t k = 0; k < corrupt.channel.size(); ++k) {
            const torch::Tensor& dir = layerDir[static_cast<size_t>(corrupt.channelBlock[k])];
            const torch::Tensor a = (corrupt.channel[k] * dir).contiguous().to(torch::kCPU);
            const torch::Tensor b = (clean.channel[k] * dir).contiguous().to(torch::kCPU);
            res.channelCorrupt.insert(res.channelCorrupt.end(), a.data_ptr<double>(), a.data_ptr<double>() + a.numel());
            res.channelClean.insert(res.channelClean.end(), b.data_ptr<double>(), b.data_ptr<double>() + b.numel());
        }
    }
    return res;
}

} // namespace gwb::engine
