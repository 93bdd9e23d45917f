// Path patching and direct effects (gwb/engine/patching.h, pathPatching): one frozen run of the
// corrupted prompt per sender, every component but the sender held at its corrupted value through
// BlockEdit's freeze fields, then the receivers: the metric of that run, and for each later block
// input h^M a plain run of the corrupted prompt from h^M on with the recorded h^M put in.

#include "gwb/engine/patching.h"
#include "gwb/engine/sites.h"

#include "model/model_impl.h"
#include "runs/patching_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace gwb::engine {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Site = BlockEdit::Site;

struct Recorded {
    std::vector<BlockRecord> blocks;
    torch::Tensor final;
};

Recorded recordRun(LanguageModelImpl& net, const std::vector<int64_t>& ids, const torch::Device& device, bool plucker) {
    Recorded r;
    torch::Tensor h = net.embed(torch::tensor(ids, torch::kLong).view({1, -1}).to(device));
    for (const auto& block : net.blocks()) {
        BlockRecord br;
        br.wantPlucker = plucker;
        h = block->run(h, SuffixContext{}, nullptr, &br);
        r.blocks.push_back(std::move(br));
    }
    r.final = h;
    return r;
}

double metricOf(LanguageModelImpl& net, const torch::Tensor& final, int64_t m, int64_t answer, int64_t wrong) {
    const torch::Tensor logits =
        net.head(final.select(1, m).unsqueeze(0)).squeeze(0).to(torch::kDouble).to(torch::kCPU);
    return (logits.select(1, answer) - logits.select(1, wrong))[0].item<double>();
}

struct Sender {
    std::string label;
    std::string kind; ///< offset, mixer, gate, ffn, head
    int layer = 0;
    int index = 0; ///< offset D's slot in the layer, or the head
};

/// The frozen runs of a group of senders of one layer and kind (pathPatching's definition), one
/// batch row each: the block inputs h^l they produce, inputs[l] for l >= the layer and inputs[N] =
/// the final states (B x T x d). Offsets of a layer, or heads, run as one batch; mixer, gate and
/// ffn senders are one per layer and kind.
std::vector<torch::Tensor>
senderRun(LanguageModelImpl& net, const std::vector<const Sender*>& group, const Recorded& clean,
          const Recorded& corrupt,
          const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& mixed, bool grassmann, int N,
          int64_t T, const torch::Device& device) {
    const Sender& s = *group.front();
    const int64_t B = static_cast<int64_t>(group.size());
    const size_t l = static_cast<size_t>(s.layer);
    auto batch = [B](const torch::Tensor& t) { return t.expand({B, -1, -1}); };
    // Layers before the sender's see the corrupted run unchanged: start from its h^l.
    torch::Tensor h = batch(corrupt.blocks[l].h);
    std::vector<torch::Tensor> inputs(static_cast<size_t>(N + 1));
    inputs[l] = h;
    for (int b = s.layer; b < N; ++b) {
        const BlockRecord& cr = corrupt.blocks[static_cast<size_t>(b)];
        BlockEdit e;
        e.site = Site::None;
        if (b == s.layer) {
            const BlockRecord& cl = clean.blocks[l];
            e.freezeFfn = batch(cr.ffn); // nothing of the sublayer after the sender depends on it but the FFN's input
            if (s.kind == "offset" || s.kind == "head") {
                // Row i: the corrupted values with sender i's offset (head) at its clean value.
                const torch::Tensor& cv = s.kind == "offset" ? cr.plucker : cr.heads;
                const torch::Tensor& kv = s.kind == "offset" ? cl.plucker : cl.heads;
                torch::Tensor v = cv.expand({B, -1, -1, -1}).clone();
                for (int64_t i = 0; i < B; ++i) {
                    const int slot = group[static_cast<size_t>(i)]->index;
                    v[i].select(1, slot).copy_(mixed(kv.select(2, slot), cv.select(2, slot))[0]);
                }
                e.site = s.kind == "offset" ? Site::Offset : Site::Head;
                e.value = v;
                e.mask = torch::ones({1, T, v.size(2), 1}, torch::kBool).to(device);
            } else if (s.kind == "mixer") {
                e.site = Site::Mixer;
                e.value = mixed(cl.mixer, cr.mixer);
                e.mask = torch::ones({1, T, 1}, torch::kBool).to(device);
            } else if (s.kind == "gate") {
                e.site = Site::Gate;
                e.value = mixed(cl.gate, cr.gate);
                e.mask = torch::ones({1, T, 1}, torch::kBool).to(device);
                e.freezeMixer = cr.mixer;
            } else { // ffn: the mixer and gate of its layer are frozen too
                e.freezeFfn = mixed(cl.ffn, cr.ffn);
                e.freezeMixer = cr.mixer;
                if (grassmann) e.freezeGate = cr.gate;
            }
        } else {
            e.freezeMixer = batch(cr.mixer);
            if (grassmann) e.freezeGate = batch(cr.gate);
            e.freezeFfn = batch(cr.ffn);
        }
        h = net.blocks()[static_cast<size_t>(b)]->run(h, SuffixContext{}, &e, nullptr);
        inputs[static_cast<size_t>(b + 1)] = h;
    }
    return inputs;
}

} // namespace

namespace {

/// One cell's run wanted instead of the whole matrix (pathCellLogits): its sender and receiver
/// labels, and where its logits at the metric position go.
struct CellWanted {
    std::string sender, receiver;
    std::vector<float>* logits = nullptr;
};

std::vector<float> logitsAt(LanguageModelImpl& net, const torch::Tensor& final, int64_t m) {
    const torch::Tensor l =
        net.head(final.select(1, m).unsqueeze(0)).view({-1}).to(torch::kFloat).to(torch::kCPU).contiguous();
    return std::vector<float>(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
}

PathResult runPaths(const Model& model, const PathRequest& q, const PatchProgress& progress, const CellWanted* cell);

} // namespace

PathResult pathPatching(const Model& model, const PathRequest& q, const PatchProgress& progress) {
    return runPaths(model, q, progress, nullptr);
}

std::vector<float> pathCellLogits(const Model& model, const PathRequest& q, const std::string& sender,
                                  const std::string& receiver) {
    std::vector<float> out;
    CellWanted cell{sender, receiver, &out};
    const PathResult r = runPaths(model, q, {}, &cell);
    if (std::find(r.senderLabels.begin(), r.senderLabels.end(), sender) == r.senderLabels.end())
        throw std::invalid_argument("no sender '" + sender + "' in this request");
    if (std::find(r.receiverLabels.begin(), r.receiverLabels.end(), receiver) == r.receiverLabels.end())
        throw std::invalid_argument("no receiver '" + receiver + "' in this request");
    if (out.empty())
        throw std::invalid_argument("the cell " + sender + " x " + receiver +
                                    " is undefined: the receiver is at or before the sender's layer");
    return out;
}

namespace {

PathResult runPaths(const Model& model, const PathRequest& q, const PatchProgress& progress, const CellWanted* cell) {
    detail::validatePathRequest(model, q, "path patching");
    const ModelConfig& c = model.config();
    const bool grassmann = c.kind == ModelKind::Grassmann;
    const int64_t T = static_cast<int64_t>(q.clean.size());
    if (q.senderPosition >= T)
        throw std::invalid_argument("sender position " + std::to_string(q.senderPosition) +
                                    " is outside the prompt (tokens 0.." + std::to_string(T - 1) + ")");
    const std::vector<std::string> kinds = grassmann ? std::vector<std::string>{"offset", "mixer", "gate", "ffn"}
                                                     : std::vector<std::string>{"head", "mixer", "ffn"};
    for (const std::string& k : q.senders)
        if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
            throw std::invalid_argument("sender '" + k + "' does not exist in a " +
                                        (grassmann ? std::string("Grassmann model (its senders: offset, mixer, gate, "
                                                                 "ffn)")
                                                   : std::string("Transformer (its senders: head, mixer, ffn)")));
    auto wanted = [&](const std::string& k) {
        return q.senders.empty() || std::find(q.senders.begin(), q.senders.end(), k) != q.senders.end();
    };
    const int N = static_cast<int>(c.nLayers);
    std::vector<Sender> senders;
    for (int l = 0; l < N; ++l) {
        if (grassmann && wanted("offset")) {
            const auto& offs = c.layerOffsets[static_cast<size_t>(l)];
            for (size_t o = 0; o < offs.size(); ++o)
                if (offs[o] < T)
                    senders.push_back({siteName(SiteKind::Offset, l, offs[o]), "offset", l, static_cast<int>(o)});
        }
        if (!grassmann && wanted("head"))
            for (int hd = 0; hd < c.nHeads; ++hd)
                senders.push_back({siteName(SiteKind::Head, l, hd), "head", l, hd});
        if (wanted("mixer")) senders.push_back({siteName(SiteKind::Mixer, l), "mixer", l, 0});
        if (grassmann && wanted("gate")) senders.push_back({siteName(SiteKind::Gate, l), "gate", l, 0});
        if (wanted("ffn")) senders.push_back({siteName(SiteKind::Ffn, l), "ffn", l, 0});
    }
    PathResult res;
    res.metricPosition = q.position < 0 ? T - 1 : q.position;
    if (q.logits) res.receiverLabels.push_back("logits");
    if (q.resid)
        for (int M = 1; M <= N; ++M)
            res.receiverLabels.push_back(siteName(SiteKind::Resid, M));
    for (const Sender& s : senders) {
        res.senderLabels.push_back(s.label);
        res.senderLayers.push_back(s.layer);
    }
    const size_t R = res.receiverLabels.size();
    res.metric.assign(senders.size() * R, kNaN);
    res.effect.assign(senders.size() * R, kNaN);

    std::lock_guard<std::mutex> lock(model.impl().mutex);
    torch::NoGradGuard noGrad;
    LanguageModelImpl& net = *model.impl().net;
    net.eval();
    const torch::Device device = model.impl().device;
    const int64_t m = res.metricPosition;
    const Recorded clean = recordRun(net, q.clean, device, grassmann);
    const Recorded corrupt = recordRun(net, q.corrupt, device, grassmann);
    res.cleanMetric = metricOf(net, clean.final, m, q.answer, q.wrong);
    res.corruptMetric = metricOf(net, corrupt.final, m, q.answer, q.wrong);
    const EffectCondition ec =
        effectCondition(res.cleanMetric, res.corruptMetric, q.minDifference, true, "path-patched - corrupted");
    res.minDifference = q.minDifference;
    res.effectDefined = ec.defined;
    res.effectNote = ec.reason;
    // Rows of the sender's clean value: every position, or one.
    const torch::Tensor rows = [&] {
        torch::Tensor t = torch::ones({1, T, 1}, torch::kBool);
        if (q.senderPosition >= 0) {
            t = torch::zeros({1, T, 1}, torch::kBool);
            t[0][q.senderPosition][0] = true;
        }
        return t.to(device);
    }();
    // Clean where the sender acts, corrupted elsewhere (every value here is 1 x T x width).
    auto mixed = [&](const torch::Tensor& cleanV, const torch::Tensor& corruptV) {
        return torch::where(rows.expand_as(cleanV), cleanV, corruptV);
    };
    // Senders in groups: the offsets (heads) of a layer together, every other sender alone.
    std::vector<std::vector<size_t>> groups;
    for (size_t si = 0; si < senders.size(); ++si) {
        const Sender& s = senders[si];
        const bool batched = s.kind == "offset" || s.kind == "head";
        if (batched && !groups.empty()) {
            const Sender& last = senders[groups.back().front()];
            if (last.kind == s.kind && last.layer == s.layer) {
                groups.back().push_back(si);
                continue;
            }
        }
        groups.push_back({si});
    }
    auto metricsOf = [&](const torch::Tensor& final) { // B x T x d -> B metrics
        const torch::Tensor logits = net.head(final.select(1, m)).to(torch::kDouble).to(torch::kCPU);
        const torch::Tensor d = (logits.select(1, q.answer) - logits.select(1, q.wrong)).contiguous();
        return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    };
    size_t doneSenders = 0;
    for (const std::vector<size_t>& g : groups) {
        if (progress && !progress(static_cast<double>(doneSenders) / static_cast<double>(senders.size())))
            throw PatchCancelled();
        doneSenders += g.size();
        std::vector<size_t> run = g;
        if (cell) { // one cell: only its sender's row
            run.clear();
            for (size_t si : g)
                if (senders[si].label == cell->sender) run.push_back(si);
            if (run.empty()) continue;
        }
        std::vector<const Sender*> group;
        for (size_t si : run)
            group.push_back(&senders[si]);
        const int layer = group.front()->layer;
        const std::vector<torch::Tensor> inputs = senderRun(net, group, clean, corrupt, mixed, grassmann, N, T, device);
        const torch::Tensor& h = inputs[static_cast<size_t>(N)];
        size_t col = 0;
        if (q.logits) {
            const std::vector<double> direct = metricsOf(h);
            for (size_t i = 0; i < run.size(); ++i)
                res.metric[run[i] * R + col] = direct[i];
            ++col;
            if (cell && cell->receiver == "logits") *cell->logits = logitsAt(net, h, m);
        }
        if (q.resid)
            for (int M = 1; M <= N; ++M, ++col) {
                if (M <= layer) continue;
                const std::string label = siteName(SiteKind::Resid, M);
                if (cell && cell->receiver != label) continue;
                // The corrupted prompt, run normally from h^M with the recorded h^M put in.
                torch::Tensor x = inputs[static_cast<size_t>(M)];
                for (int b = M; b < N; ++b)
                    x = net.blocks()[static_cast<size_t>(b)]->run(x, SuffixContext{}, nullptr, nullptr);
                const std::vector<double> through = metricsOf(x);
                for (size_t i = 0; i < run.size(); ++i)
                    res.metric[run[i] * R + col] = through[i];
                if (cell) *cell->logits = logitsAt(net, x, m);
            }
    }
    if (res.effectDefined)
        for (size_t i = 0; i < res.metric.size(); ++i)
            res.effect[i] = (res.metric[i] - res.corruptMetric) / (res.cleanMetric - res.corruptMetric);
    if (progress) progress(1.0);
    return res;
}

} // namespace
} // namespace gwb::engine
