// A forward pass with hooks at named sites (gwb/engine/hooks.h). Each block with a hook runs once
// with a record of its site values; a replacement is put in through BlockEdit (an offset's or a
// head's value as an edit, mixer / gate / ffn as frozen values) and the block runs again from
// there, so that every later value (and every later hook) sees it.

#include "gwb/engine/hooks.h"

#include "model/model_impl.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gwb::engine {
namespace {

using Site = BlockEdit::Site;

enum class Kind { Resid, Mixer, Gate, Ffn, FfnIn, Offset, Head };

struct Parsed {
    Kind kind = Kind::Resid;
    int layer = 0;
    int index = 0; ///< offset D's slot in its layer, or the head
    int value = 0; ///< D, or the head
};

std::string validSites(const ModelConfig& c) {
    const bool g = c.kind == ModelKind::Grassmann;
    const int N = static_cast<int>(c.nLayers);
    std::string out = "resid.0 .. resid." + std::to_string(N) + ", mixer.L, ffn_in.L (read only)";
    if (g) out += ", gate.L";
    out += ", ffn.L";
    out += g ? ", offset.L.D" : ", head.L.H (H = 0.." + std::to_string(c.nHeads - 1) + ")";
    out += " with L = 0.." + std::to_string(N - 1);
    if (g) {
        std::string offs;
        const auto& first = c.layerOffsets.empty() ? std::vector<int>{} : c.layerOffsets.front();
        bool same = std::all_of(c.layerOffsets.begin(), c.layerOffsets.end(),
                                [&](const std::vector<int>& o) { return o == first; });
        if (same) {
            for (int D : first)
                offs += (offs.empty() ? "" : ",") + std::to_string(D);
            out += " and D in {" + offs + "}";
        } else {
            out += " and D in the layer's offsets (";
            for (size_t l = 0; l < c.layerOffsets.size(); ++l) {
                std::string s;
                for (int D : c.layerOffsets[l])
                    s += (s.empty() ? "" : ",") + std::to_string(D);
                out += (l ? "; " : "") + std::to_string(l) + ": " + s;
            }
            out += ")";
        }
    }
    return out;
}

Parsed parseSite(const ModelConfig& c, const std::string& name) {
    auto fail = [&](const std::string& why) -> Parsed {
        throw std::invalid_argument("unknown hook site '" + name + "'" + (why.empty() ? "" : " (" + why + ")") +
                                    "; the " + (c.kind == ModelKind::Grassmann ? "Grassmann" : "Transformer") +
                                    " model's sites are " + validSites(c));
    };
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    auto number = [&](const std::string& s) -> int {
        if (s.empty() || s.size() > 6 ||
            !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
            fail("'" + s + "' is not a number");
        return std::stoi(s);
    };
    const bool grassmann = c.kind == ModelKind::Grassmann;
    const int N = static_cast<int>(c.nLayers);
    Parsed p;
    const std::string& k = parts[0];
    if (k == "resid" || k == "mixer" || k == "gate" || k == "ffn" || k == "ffn_in") {
        if (parts.size() != 2) fail("expected " + k + ".L");
        p.kind = k == "resid"    ? Kind::Resid
                 : k == "mixer"  ? Kind::Mixer
                 : k == "gate"   ? Kind::Gate
                 : k == "ffn_in" ? Kind::FfnIn
                                 : Kind::Ffn;
        if (p.kind == Kind::Gate && !grassmann) fail("a Transformer has no gate");
        p.layer = number(parts[1]);
        if (p.layer > N || (p.layer == N && p.kind != Kind::Resid)) fail("layer " + parts[1] + " does not exist");
        return p;
    }
    if (k == "offset" || k == "head") {
        if (parts.size() != 3) fail("expected " + k + (k == "offset" ? ".L.D" : ".L.H"));
        p.kind = k == "offset" ? Kind::Offset : Kind::Head;
        if (p.kind == Kind::Offset && !grassmann) fail("a Transformer has no offsets");
        if (p.kind == Kind::Head && grassmann) fail("a Grassmann model has no heads");
        p.layer = number(parts[1]);
        if (p.layer >= N) fail("layer " + parts[1] + " does not exist");
        p.value = number(parts[2]);
        if (p.kind == Kind::Head) {
            if (p.value >= c.nHeads) fail("head " + parts[2] + " does not exist");
            p.index = p.value;
        } else {
            const auto& offs = c.layerOffsets[static_cast<size_t>(p.layer)];
            const auto it = std::find(offs.begin(), offs.end(), p.value);
            if (it == offs.end()) fail("layer " + parts[1] + " has no offset " + parts[2]);
            p.index = static_cast<int>(it - offs.begin());
        }
        return p;
    }
    return fail("");
}

FloatArray toArray(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    FloatArray a;
    a.shape.assign(c.sizes().begin(), c.sizes().end());
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return a;
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
                           "are rounding noise, so the logits after them are not well defined (a zeroed residual "
                           "makes every later position alike; mean-ablate instead)");
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
        const std::string suffix = "." + std::to_string(l);
        if (const torch::Tensor r = call("mixer" + suffix, rec.mixer); r.defined()) {
            e.freezeMixer = r;
            rerun();
        }
        if (grassmann)
            if (const torch::Tensor r = call("gate" + suffix, rec.gate); r.defined()) {
                e.freezeMixer = rec.mixer;
                e.freezeGate = r;
                rerun();
            }
        // The FFN's input (after its LayerNorm): read only (a transcoder's input); a change goes in at ffn.L.
        if (has(Kind::FfnIn, l) && call("ffn_in" + suffix, rec.ffnIn).defined())
            throw std::invalid_argument("ffn_in" + suffix + " can be read, not replaced: replace ffn" + suffix +
                                        " (the FFN's output) instead");
        if (const torch::Tensor r = call("ffn" + suffix, rec.ffn); r.defined()) {
            e.freezeFfn = r;
            rerun();
        }
        return out;
    }
};

} // namespace

std::vector<std::string> hookSiteNames(const Model& model) {
    const ModelConfig& c = model.config();
    const bool grassmann = c.kind == ModelKind::Grassmann;
    std::vector<std::string> out;
    for (int l = 0; l < c.nLayers; ++l) {
        const std::string L = std::to_string(l);
        out.push_back("resid." + L);
        if (grassmann)
            for (int D : c.layerOffsets[static_cast<size_t>(l)])
                out.push_back("offset." + L + "." + std::to_string(D));
        else
            for (int hd = 0; hd < c.nHeads; ++hd)
                out.push_back("head." + L + "." + std::to_string(hd));
        out.push_back("mixer." + L);
        if (grassmann) out.push_back("gate." + L);
        out.push_back("ffn." + L);
    }
    out.push_back("resid." + std::to_string(c.nLayers));
    return out;
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
        if (const torch::Tensor r = run.call("resid." + std::to_string(l), h); r.defined()) h = r;
        if (l == c.nLayers) break;
        h = run.block(*net.blocks()[static_cast<size_t>(l)], l, h);
    }
    if (warnings) *warnings = run.warnings;
    return toArray(net.head(h).squeeze(0));
}

} // namespace gwb::engine
