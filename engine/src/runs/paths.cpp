// Path patching and direct effects (gwb/engine/patching.h, pathPatching): one frozen run of the
// corrupted prompt per sender, every component but the sender held at its corrupted value through
// BlockEdit's freeze fields, then the receivers: the metric of that run, and for each later block
// input h^M a plain run of the corrupted prompt from h^M on with the recorded h^M put in.

#include "gwb/engine/patching.h"

#include "model/model_impl.h"

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

/// The frozen run of one sender (pathPatching's definition): the block inputs h^l it produces,
/// inputs[l] for l >= the sender's layer and inputs[N] = the final state.
std::vector<torch::Tensor>
senderRun(LanguageModelImpl& net, const Sender& s, const Recorded& clean, const Recorded& corrupt,
          const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& mixed, bool grassmann, int N,
          int64_t T, const torch::Device& device) {
    const size_t l = static_cast<size_t>(s.layer);
    // Layers before the sender's see the corrupted run unchanged: start from its h^l.
    torch::Tensor h = corrupt.blocks[l].h;
    std::vector<torch::Tensor> inputs(static_cast<size_t>(N + 1));
    inputs[l] = h;
    for (int b = s.layer; b < N; ++b) {
        const BlockRecord& cr = corrupt.blocks[static_cast<size_t>(b)];
        BlockEdit e;
        e.site = Site::None;
        if (b == s.layer) {
            const BlockRecord& cl = clean.blocks[l];
            e.freezeFfn = cr.ffn; // nothing of the sublayer after the sender depends on it but the FFN's input
            if (s.kind == "offset") {
                e.site = Site::Offset;
                torch::Tensor v = cr.plucker.clone();
                v.select(2, s.index).copy_(mixed(cl.plucker.select(2, s.index), cr.plucker.select(2, s.index)));
                e.value = v;
                e.mask = torch::ones({1, T, v.size(2), 1}, torch::kBool).to(device);
            } else if (s.kind == "head") {
                e.site = Site::Head;
                torch::Tensor v = cr.heads.clone();
                v.select(2, s.index).copy_(mixed(cl.heads.select(2, s.index), cr.heads.select(2, s.index)));
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
            e.freezeMixer = cr.mixer;
            if (grassmann) e.freezeGate = cr.gate;
            e.freezeFfn = cr.ffn;
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
    PatchRequest check;
    check.clean = q.clean;
    check.corrupt = q.corrupt;
    check.answer = q.answer;
    check.wrong = q.wrong;
    check.position = q.position;
    check.site = PatchSite::Resid;
    check.mode = PatchMode::Patch;
    validatePatchRequest(model, check);
    if (q.corrupt.empty()) throw std::invalid_argument("path patching needs a corrupted prompt");
    if (q.answer < 0 || q.wrong < 0)
        throw std::invalid_argument("path patching needs the metric's answer and wrong pieces");
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
                    senders.push_back({"offset." + std::to_string(l) + "." + std::to_string(offs[o]), "offset", l,
                                       static_cast<int>(o)});
        }
        if (!grassmann && wanted("head"))
            for (int hd = 0; hd < c.nHeads; ++hd)
                senders.push_back({"head." + std::to_string(l) + "." + std::to_string(hd), "head", l, hd});
        if (wanted("mixer")) senders.push_back({"mixer." + std::to_string(l), "mixer", l, 0});
        if (grassmann && wanted("gate")) senders.push_back({"gate." + std::to_string(l), "gate", l, 0});
        if (wanted("ffn")) senders.push_back({"ffn." + std::to_string(l), "ffn", l, 0});
    }
    PathResult res;
    res.metricPosition = q.position < 0 ? T - 1 : q.position;
    if (q.logits) res.receiverLabels.push_back("logits");
    if (q.resid)
        for (int M = 1; M <= N; ++M)
            res.receiverLabels.push_back("resid." + std::to_string(M));
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
    res.effectDefined = res.cleanMetric != res.corruptMetric;
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
    for (size_t si = 0; si < senders.size(); ++si) {
        if (progress && !progress(static_cast<double>(si) / static_cast<double>(senders.size())))
            throw PatchCancelled();
        const Sender& s = senders[si];
        if (cell && s.label != cell->sender) continue;
        const std::vector<torch::Tensor> inputs = senderRun(net, s, clean, corrupt, mixed, grassmann, N, T, device);
        const torch::Tensor& h = inputs[static_cast<size_t>(N)];
        size_t col = 0;
        const double direct = metricOf(net, h, m, q.answer, q.wrong);
        if (q.logits) res.metric[si * R + col++] = direct;
        if (cell && q.logits && cell->receiver == "logits") *cell->logits = logitsAt(net, h, m);
        if (q.resid)
            for (int M = 1; M <= N; ++M, ++col) {
                if (M <= s.layer) continue;
                const std::string label = "resid." + std::to_string(M);
                if (cell && cell->receiver != label) continue;
                // The corrupted prompt, run normally from h^M with the recorded h^M put in.
                torch::Tensor x = inputs[static_cast<size_t>(M)];
                for (int b = M; b < N; ++b)
                    x = net.blocks()[static_cast<size_t>(b)]->run(x, SuffixContext{}, nullptr, nullptr);
                res.metric[si * R + col] = metricOf(net, x, m, q.answer, q.wrong);
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
