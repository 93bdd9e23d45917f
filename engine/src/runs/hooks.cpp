// A forward pass with hooks at named sites (gwb/engine/hooks.h). Each block with a hook runs once
// with a record of its site values; a replacement is put in through BlockEdit (an offset's or a
// head's value as an edit, mixer / gate / ffn as frozen values) and the block runs again from
// there, so that every later value (and every later hook) sees it.

#include "gwb/engine/hooks.h"
#include "runs/tensor_array.h"
#include "gwb/engine/sites.h"

#include "model/model_impl.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gwb::engine {
namespace {

using Site = BlockEdit::Site;

using Kind = SiteKind; // the one site vocabulary (gwb/engine/sites.h)

struct Parsed {
    Kind kind = Kind::Resid;
    int layer = 0;
    int index = 0; ///< offset D's slot in its layer, or the head
    int value = 0; ///< D, or the head
};

/// The site `name` (sites.h's parser, its messages naming hook sites), with an offset's slot in
/// its layer.
Parsed parseSite(const ModelConfig& c, const std::string& name) {
    const SiteRef s = parseSiteName(name, c, "hook site");
    Parsed p;
    p.kind = s.kind;
    p.layer = s.layer;
    p.value = std::max(s.unit, 0);
    p.index = p.value;
    if (s.kind == Kind::Offset) {
        const auto& offs = c.layerOffsets[static_cast<size_t>(s.layer)];
        p.index = static_cast<int>(std::find(offs.begin(), offs.end(), s.unit) - offs.begin());
    }
    return p;
}

/// A pair plane z_t ^ z_{t-D} whose two vectors are this close to parallel (sin of their angle)
/// is rounding noise once normalised: float32 products cancel to ~1e-7 relative, so the unit
/// Plucker vector of such a pair has errors of order 1e-7 / sin.
constexpr double kNoisePlaneSin = 1e-4;

struct Runner {
    const ModelConfig& c;
    const torch::Device device;
    const std::map<std::string, SiteHook>& hooks;
    std::map<std::string, Parsed> parsed;
    std::string firstReplaced; ///< the first site whose value a hook replaced ("" = none yet)
    std::vector<std::string> warnings;

    /// After a replacement: how many of layer l's pair planes (t, t - D), t >= D, are made of
    /// nearly parallel reduced vectors (or a zero one). A zeroed residual makes every later
    /// position alike, and such planes are noise: said in a warning, not passed off as an effect.
    void checkPlanes(int l, const torch::Tensor& z) {
        if (firstReplaced.empty() || !z.defined()) return;
        const torch::Tensor zz = z.squeeze(0).to(torch::kCPU, torch::kDouble); // T x r
        const int64_t T = zz.size(0);
        const torch::Tensor norms = zz.norm(2, {1});
        int64_t pairs = 0, noisy = 0;
        for (int D : c.layerOffsets[static_cast<size_t>(l)]) {
            if (D >= T) continue;
            const torch::Tensor a = zz.narrow(0, D, T - D), b = zz.narrow(0, 0, T - D);
            const torch::Tensor na = norms.narrow(0, D, T - D), nb = norms.narrow(0, 0, T - D);
            const torch::Tensor cosine = (a * b).sum(1) / (na * nb).clamp_min(1e-300);
            const torch::Tensor sine = (1 - cosine * cosine).clamp_min(0).sqrt();
            const torch::Tensor bad = (sine < kNoisePlaneSin).logical_or(na * nb <= 1e-300);
            pairs += T - D;
            noisy += bad.sum().item<int64_t>();
        }
        if (pairs == 0 || noisy * 20 < pairs) return; // fewer than 5%: a repeated token, not a collapse
        warnings.push_back("after the replacement at " + firstReplaced + ", " + std::to_string(noisy) + " of " +
                           std::to_string(pairs) + " pair planes of layer " + std::to_string(l) +
                           " join nearly parallel reduced vectors (sin < 1e-4): their normalised Plucker vectors "
                           "are rounding noise, so the logits after them are not well defined (one vector at every "
                           "position, zeros or the overall mean, makes every later position alike; replace each "
                           "position by its own mean over other windows, or resample it from another window, "
                           "instead)");
    }

    /// The hook's replacement of `value` (1 x T x ... ), or an undefined tensor when it observes
    /// only or returns the value unchanged.
    torch::Tensor call(const std::string& name, const torch::Tensor& value) {
        const auto it = hooks.find(name);
        if (it == hooks.end() || !it->second) return {};
        const torch::Tensor v = value.squeeze(0);
        const FloatArray in = toArray(v);
        std::optional<FloatArray> out = it->second(in, name);
        if (!out) return {};
        if (out->shape != in.shape)
            throw std::invalid_argument("hook '" + name + "' returned shape " + shapeText(out->shape) + ", expected " +
                                        shapeText(in.shape));
        if (out->data.size() != in.data.size())
            throw std::invalid_argument("hook '" + name + "' returned " + std::to_string(out->data.size()) +
                                        " values for shape " + shapeText(in.shape));
        if (std::memcmp(out->data.data(), in.data.data(), in.data.size() * sizeof(float)) == 0) return {};
        if (firstReplaced.empty()) firstReplaced = name;
        return torch::from_blob(out->data.data(), v.sizes(), torch::kFloat)
            .clone()
            .to(device, value.scalar_type())
            .unsqueeze(0);
    }

    bool has(Kind kind, int layer) const {
        for (const auto& [name, p] : parsed)
            if (p.kind == kind && p.layer == layer) return true;
        return false;
    }
    std::vector<std::pair<std::string, Parsed>> indexed(Kind kind, int layer) const {
        std::vector<std::pair<std::string, Parsed>> out;
        for (const auto& [name, p] : parsed)
            if (p.kind == kind && p.layer == layer) out.emplace_back(name, p);
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second.value < b.second.value; });
        return out;
    }

    torch::Tensor block(BlockImpl& b, int l, const torch::Tensor& h) {
        const bool grassmann = c.kind == ModelKind::Grassmann;
        const Kind slots = grassmann ? Kind::Offset : Kind::Head;
        const bool check = grassmann && !firstReplaced.empty(); // the planes after a replacement
        if (!has(slots, l) && !has(Kind::Mixer, l) && !has(Kind::Gate, l) && !has(Kind::Ffn, l) &&
            !has(Kind::FfnIn, l)) {
            if (!check) return b.run(h, SuffixContext{}, nullptr, nullptr);
            BlockRecord rec;
            torch::Tensor out = b.run(h, SuffixContext{}, nullptr, &rec);
            checkPlanes(l, rec.z);
            return out;
        }
        BlockEdit e;
        e.site = Site::None;
        BlockRecord rec;
        rec.wantPlucker = grassmann && has(Kind::Offset, l);
        torch::Tensor out = b.run(h, SuffixContext{}, nullptr, &rec);
        if (check) checkPlanes(l, rec.z);
        auto rerun = [&] {
            BlockRecord next;
            out = b.run(h, SuffixContext{}, &e, &next);
            rec = std::move(next);
        };
        // Offsets (normalised Plucker vectors, 1 x T x |W| x C) or heads (1 x T x H x d_head).
        const auto slotHooks = indexed(slots, l);
        if (!slotHooks.empty()) {
            const torch::Tensor all = grassmann ? rec.plucker : rec.heads;
            torch::Tensor edited;
            for (const auto& [name, p] : slotHooks) {
                const torch::Tensor r = call(name, all.select(2, p.index));
                if (!r.defined()) continue;
                if (!edited.defined()) edited = all.clone();
                edited.select(2, p.index).copy_(r);
            }
            if (edited.defined()) {
                e.site = grassmann ? Site::Offset : Site::Head;
                e.value = edited;
                e.mask = torch::ones({1, h.size(1), edited.size(2), 1}, torch::kBool).to(device);
                rerun();
            }
        }
        if (const torch::Tensor r = call(siteName(Kind::Mixer, l), rec.mixer); r.defined()) {
            e.freezeMixer = r;
            rerun();
        }
        if (grassmann)
            if (const torch::Tensor r = call(siteName(Kind::Gate, l), rec.gate); r.defined()) {
                e.freezeMixer = rec.mixer;
                e.freezeGate = r;
                rerun();
            }
        // The FFN's input (after its LayerNorm): read only (a transcoder's input); a change goes in at ffn.L.
        if (has(Kind::FfnIn, l) && call(siteName(Kind::FfnIn, l), rec.ffnIn).defined())
            throw std::invalid_argument(siteName(Kind::FfnIn, l) + " can be read, not replaced: replace " +
                                        siteName(Kind::Ffn, l) + " (the FFN's output) instead");
        if (const torch::Tensor r = call(siteName(Kind::Ffn, l), rec.ffn); r.defined()) {
            e.freezeFfn = r;
            rerun();
        }
        return out;
    }
};

} // namespace

std::vector<std::string> hookSiteNames(const Model& model) {
    return siteNames(model.config());
}

std::vector<int64_t> hookSiteShape(const Model& model, const std::string& name, int64_t T) {
    const ModelConfig& c = model.config();
    const Parsed p = parseSite(c, name);
    switch (p.kind) {
    case Kind::Offset:
        return {T, c.reduced * (c.reduced - 1) / 2};
    case Kind::Head:
        return {T, c.dModel / c.nHeads};
    default:
        return {T, c.dModel};
    }
}

FloatArray runWithHooks(const Model& model, const std::vector<int64_t>& ids,
                        const std::map<std::string, SiteHook>& hooks, std::vector<std::string>* warnings) {
    const ModelConfig& c = model.config();
    if (ids.empty()) throw std::invalid_argument("the prompt is empty: give at least one token id");
    if (static_cast<int64_t>(ids.size()) > c.maxLen)
        throw std::invalid_argument("the prompt is " + std::to_string(ids.size()) +
                                    " tokens, longer than the model's context (max_len " + std::to_string(c.maxLen) +
                                    ")");
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= c.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                        " is outside the vocabulary (0.." + std::to_string(c.vocabSize - 1) + ")");
    Runner run{c, model.impl().device, hooks, {}, {}, {}};
    for (const auto& [name, fn] : hooks)
        run.parsed[name] = parseSite(c, name);

    std::lock_guard<std::mutex> lock(model.impl().mutex);
    torch::NoGradGuard noGrad;
    LanguageModelImpl& net = *model.impl().net;
    net.eval();
    const torch::Tensor idt = torch::tensor(ids, torch::kLong).view({1, -1}).to(run.device);
    if (hooks.empty()) return toArray(net.forward(idt).squeeze(0));
    torch::Tensor h = net.embed(idt);
    for (int l = 0; l <= c.nLayers; ++l) {
        if (const torch::Tensor r = run.call(siteName(SiteKind::Resid, l), h); r.defined()) h = r;
        if (l == c.nLayers) break;
        h = run.block(*net.blocks()[static_cast<size_t>(l)], l, h);
    }
    if (warnings) *warnings = run.warnings;
    return toArray(net.head(h).squeeze(0));
}

} // namespace gwb::engine
