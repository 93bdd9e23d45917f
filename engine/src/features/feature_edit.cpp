// Features as causal tests: ablate, clamp or steer one feature at its site and read the metric.

#include "features/feature_util.h"

#include "gwb/engine/hooks.h"

#include <cmath>
#include <stdexcept>

namespace gwb::engine {

std::pair<std::string, int64_t> parseFeatureName(const std::string& name) {
    const size_t last = name.rfind('.');
    auto bad = [&] {
        throw std::invalid_argument("'" + name +
                                    "' is not a feature name (feature.<site>.<index>, e.g. feature.resid.3.17)");
    };
    if (name.rfind("feature.", 0) != 0 || last == std::string::npos || last <= 8 || last + 1 == name.size()) bad();
    const std::string index = name.substr(last + 1);
    for (char c : index)
        if (c < '0' || c > '9') bad();
    if (index.size() > 9) bad();
    const std::string site = name.substr(8, last - 8);
    if (site.find('.') == std::string::npos) bad(); // a site is kind.L or kind.L.D
    return {site, std::stoll(index)};
}

FloatArray featureActivations(const Model& model, const Dictionary& d, const std::vector<int32_t>& ids,
                              const Model* second) {
    checkDictionaryFits(d, model, second);
    if (ids.empty()) throw std::invalid_argument("the prompt is empty");
    std::vector<FloatArray> values;
    std::vector<std::pair<const Model*, std::string>> sources{{&model, d.config.site}};
    if (d.config.crosscoder()) sources.push_back({second, d.config.secondSite});
    for (const auto& [m, site] : sources) {
        FloatArray value;
        std::map<std::string, SiteHook> read;
        read[site] = [&value](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            value = v;
            return std::nullopt;
        };
        runWithHooks(*m, std::vector<int64_t>(ids.begin(), ids.end()), read);
        values.push_back(std::move(value));
    }
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> parts;
    for (const FloatArray& v : values)
        parts.push_back(features::toTensor(v));
    const torch::Tensor x = parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
    const int64_t D = std::min<int64_t>(features::offsetOfSite(d.config.site), x.size(0));
    torch::Tensor z = features::encodeRows(d, x);
    if (D > 0) z.slice(0, 0, D).zero_();
    return features::toArray(z);
}

namespace {
/// The rows to move and how much of W_dec[f] each gets: the edit's coefficients (T - D rows) from
/// the activations z of `input`'s rows t >= D, masked to e.position when it is given.
torch::Tensor editCoefficients(const Dictionary& d, const torch::Tensor& rows, int64_t D, const FeatureEdit& e) {
    torch::Tensor coef; // per row: how much of W_dec[f] to add
    if (e.mode == "steer") {
        coef = torch::full({rows.size(0)}, static_cast<float>(e.value));
    } else {
        const torch::Tensor z = features::encodeRows(d, rows).select(1, e.feature);
        coef = e.mode == "ablate" ? -z : static_cast<float>(e.value) - z;
    }
    if (e.position >= 0) {
        torch::Tensor mask = torch::zeros({rows.size(0)});
        if (e.position >= D) mask[e.position - D] = 1;
        coef = coef * mask;
    }
    return coef;
}

void checkEdit(const Dictionary& d, const FeatureEdit& e) {
    if (e.mode != "ablate" && e.mode != "clamp" && e.mode != "steer")
        throw std::invalid_argument("feature edit mode '" + e.mode + "' is not ablate, clamp or steer");
    if (e.feature < 0 || e.feature >= d.config.dSae)
        throw std::invalid_argument("feature " + std::to_string(e.feature) + " does not exist (0.." +
                                    std::to_string(d.config.dSae - 1) + ")");
}
} // namespace

FloatArray applyTranscoderEdit(const Dictionary& d, const FloatArray& input, const FloatArray& output,
                               const FeatureEdit& e) {
    torch::NoGradGuard noGrad;
    if (!d.config.transcoder())
        throw std::invalid_argument("this dictionary is not a transcoder: edit its site with applyFeatureEdit");
    checkEdit(d, e);
    if (input.rank() != 2 || input.dim(1) != d.config.dIn)
        throw std::invalid_argument("the input site's value has shape " + shapeText(input.shape) +
                                    ", the transcoder reads " + std::to_string(d.config.dIn) + " values a row");
    if (output.rank() != 2 || output.dim(1) != d.config.dOut || output.dim(0) != input.dim(0))
        throw std::invalid_argument("the target site's value has shape " + shapeText(output.shape) +
                                    ", the transcoder writes " + std::to_string(d.config.dOut) +
                                    " values for each of " + std::to_string(input.dim(0)) + " rows");
    if (e.position >= input.dim(0))
        throw std::invalid_argument("position " + std::to_string(e.position) + " is outside the prompt (" +
                                    std::to_string(input.dim(0)) + " tokens)");
    const int64_t D = std::min<int64_t>(features::offsetOfSite(d.config.site), input.dim(0));
    const torch::Tensor x = features::toTensor(input);
    const torch::Tensor coef = editCoefficients(d, x.slice(0, D, x.size(0)), D, e);
    const torch::Tensor dir = features::toTensor(d.wDec).select(0, e.feature);
    torch::Tensor out = features::toTensor(output).clone();
    out.slice(0, D, out.size(0)).add_(coef.unsqueeze(1) * dir.unsqueeze(0));
    return features::toArray(out);
}

FloatArray applyFeatureEdit(const Dictionary& d, const FloatArray& value, const FeatureEdit& e) {
    torch::NoGradGuard noGrad;
    if (d.config.transcoder())
        throw std::invalid_argument("a transcoder's feature reads " + d.config.site + " and writes " +
                                    d.config.targetSite + ": edit it with applyTranscoderEdit (both values)");
    if (e.mode != "ablate" && e.mode != "clamp" && e.mode != "steer")
        throw std::invalid_argument("feature edit mode '" + e.mode + "' is not ablate, clamp or steer");
    if (e.feature < 0 || e.feature >= d.config.dSae)
        throw std::invalid_argument("feature " + std::to_string(e.feature) + " does not exist (0.." +
                                    std::to_string(d.config.dSae - 1) + ")");
    if (value.rank() != 2 || value.dim(1) != d.config.dIn)
        throw std::invalid_argument("the site's value has shape " + shapeText(value.shape) + ", the dictionary reads " +
                                    std::to_string(d.config.dIn) + " values a row");
    if (e.position >= value.dim(0))
        throw std::invalid_argument("position " + std::to_string(e.position) + " is outside the prompt (" +
                                    std::to_string(value.dim(0)) + " tokens)");
    const int64_t D = std::min<int64_t>(features::offsetOfSite(d.config.site), value.dim(0));
    const torch::Tensor x = features::toTensor(value);
    const torch::Tensor rows = x.slice(0, D, x.size(0));
    const torch::Tensor dir = features::toTensor(d.wDec).select(0, e.feature);
    const torch::Tensor coef = editCoefficients(d, rows, D, e);
    torch::Tensor out = x.clone();
    out.slice(0, D, x.size(0)).add_(coef.unsqueeze(1) * dir.unsqueeze(0));
    return features::toArray(out);
}

FeatureEditResult runFeatureEdit(const Model& model, const Dictionary& d, const FeatureEdit& e,
                                 const std::vector<int32_t>& ids, int32_t answer, int32_t wrong, int64_t position) {
    checkDictionaryFits(d, model);
    const int64_t T = static_cast<int64_t>(ids.size());
    if (T < 1) throw std::invalid_argument("the prompt is empty");
    if (position < 0) position = T - 1;
    if (position >= T)
        throw std::invalid_argument("metric position " + std::to_string(position) + " is outside the prompt (" +
                                    std::to_string(T) + " tokens)");
    const int64_t V = model.config().vocabSize;
    for (int32_t id : {answer, wrong})
        if (id < 0 || id >= V)
            throw std::invalid_argument("piece id " + std::to_string(id) + " is outside the vocabulary");
    const std::vector<int64_t> ids64(ids.begin(), ids.end());
    FeatureEditResult r;
    r.name = d.featureName(e.feature);
    r.position = position;
    FloatArray value;
    std::map<std::string, SiteHook> read, edit;
    read[d.config.site] = [&value](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        value = v;
        return std::nullopt;
    };
    if (d.config.transcoder()) {
        // One pass: the FFN's input is read (it comes first in the block), its output edited.
        checkEdit(d, e);
        auto input = std::make_shared<FloatArray>();
        edit[d.config.site] = [input](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            *input = v;
            return std::nullopt;
        };
        edit[d.config.targetSite] = [&d, &e, input](const FloatArray& v,
                                                    const std::string&) -> std::optional<FloatArray> {
            if (input->empty())
                throw std::runtime_error("the transcoder's input site " + d.config.site + " was not read before " +
                                         d.config.targetSite);
            return applyTranscoderEdit(d, *input, v, e);
        };
    } else {
        edit[d.config.site] = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            return applyFeatureEdit(d, v, e);
        };
    }
    const FloatArray clean = runWithHooks(model, ids64, read);
    const FloatArray edited = runWithHooks(model, ids64, edit);
    {
        torch::NoGradGuard noGrad;
        const int64_t D = std::min<int64_t>(features::offsetOfSite(d.config.site), value.dim(0));
        r.activation.assign(static_cast<size_t>(D), 0.0f);
        const torch::Tensor x = features::toTensor(value).slice(0, D, value.dim(0));
        const torch::Tensor z = features::encodeRows(d, x).select(1, e.feature).contiguous();
        r.activation.insert(r.activation.end(), z.data_ptr<float>(), z.data_ptr<float>() + z.numel());
    }
    auto read2 = [&](const FloatArray& logits, double& metric, std::vector<std::pair<int32_t, float>>& top) {
        const float* row = logits.row(position);
        metric = static_cast<double>(row[answer]) - static_cast<double>(row[wrong]);
        const torch::Tensor p = torch::from_blob(const_cast<float*>(row), {V}, torch::kFloat).softmax(0);
        const auto [v, i] = p.topk(std::min<int64_t>(5, V));
        for (int64_t j = 0; j < v.size(0); ++j)
            top.push_back({static_cast<int32_t>(i[j].item<int64_t>()), v[j].item<float>()});
    };
    read2(clean, r.metricClean, r.topClean);
    read2(edited, r.metricEdited, r.topEdited);
    return r;
}

std::vector<FeatureEditResult> runCrosscoderEdit(const Model& first, const Model& second, const Dictionary& d,
                                                 const FeatureEdit& e, const std::vector<int32_t>& ids, int32_t answer,
                                                 int32_t wrong, int64_t position) {
    if (!d.config.crosscoder()) throw std::invalid_argument("this dictionary reads one model: use runFeatureEdit");
    checkDictionaryFits(d, first, &second);
    if (e.mode != "ablate" && e.mode != "clamp" && e.mode != "steer")
        throw std::invalid_argument("feature edit mode '" + e.mode + "' is not ablate, clamp or steer");
    if (e.feature < 0 || e.feature >= d.config.dSae)
        throw std::invalid_argument("feature " + std::to_string(e.feature) + " does not exist (0.." +
                                    std::to_string(d.config.dSae - 1) + ")");
    const int64_t T = static_cast<int64_t>(ids.size());
    if (T < 1) throw std::invalid_argument("the prompt is empty");
    if (position < 0) position = T - 1;
    if (position >= T || e.position >= T)
        throw std::invalid_argument("a position is outside the prompt (" + std::to_string(T) + " tokens)");
    const std::vector<int64_t> ids64(ids.begin(), ids.end());
    const Model* models[] = {&first, &second};
    const std::string sites[] = {d.config.site, d.config.secondSite};
    FloatArray values[2];
    FloatArray clean[2];
    for (int m = 0; m < 2; ++m) {
        std::map<std::string, SiteHook> read;
        read[sites[m]] = [&values, m](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            values[m] = v;
            return std::nullopt;
        };
        clean[m] = runWithHooks(*models[m], ids64, read);
    }
    torch::NoGradGuard noGrad;
    const torch::Tensor x = torch::cat({features::toTensor(values[0]), features::toTensor(values[1])}, 1);
    const torch::Tensor z = features::encodeRows(d, x).select(1, e.feature).contiguous();
    torch::Tensor coef = e.mode == "steer"    ? torch::full({T}, static_cast<float>(e.value))
                         : e.mode == "ablate" ? -z
                                              : static_cast<float>(e.value) - z;
    if (e.position >= 0) {
        torch::Tensor mask = torch::zeros({T});
        mask[e.position] = 1;
        coef = coef * mask;
    }
    const torch::Tensor dir = features::toTensor(d.wDec).select(0, e.feature);
    std::vector<FeatureEditResult> out(2);
    const int64_t V = first.config().vocabSize;
    for (int32_t id : {answer, wrong})
        if (id < 0 || id >= V)
            throw std::invalid_argument("piece id " + std::to_string(id) + " is outside the vocabulary");
    for (int m = 0; m < 2; ++m) {
        const int64_t at = m == 0 ? 0 : d.config.firstWidth, w = values[m].dim(1);
        const FloatArray edited = features::toArray(features::toTensor(values[m]) +
                                                    coef.unsqueeze(1) * dir.slice(0, at, at + w).unsqueeze(0));
        std::map<std::string, SiteHook> hook;
        hook[sites[m]] = [&edited](const FloatArray&, const std::string&) -> std::optional<FloatArray> {
            return edited;
        };
        const FloatArray logits = runWithHooks(*models[m], ids64, hook);
        FeatureEditResult& r = out[static_cast<size_t>(m)];
        r.name = d.featureName(e.feature);
        r.position = position;
        r.activation.assign(z.data_ptr<float>(), z.data_ptr<float>() + z.numel());
        auto read2 = [&](const FloatArray& l, double& metric, std::vector<std::pair<int32_t, float>>& top) {
            const float* row = l.row(position);
            metric = static_cast<double>(row[answer]) - static_cast<double>(row[wrong]);
            const torch::Tensor p = torch::from_blob(const_cast<float*>(row), {V}, torch::kFloat).softmax(0);
            const auto [v, i] = p.topk(std::min<int64_t>(5, V));
            for (int64_t j = 0; j < v.size(0); ++j)
                top.push_back({static_cast<int32_t>(i[j].item<int64_t>()), v[j].item<float>()});
        };
        read2(clean[m], r.metricClean, r.topClean);
        read2(logits, r.metricEdited, r.topEdited);
    }
    return out;
}

} // namespace gwb::engine
