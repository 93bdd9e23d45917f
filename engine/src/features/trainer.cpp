// Dictionary training: TopK (with the AuxK loss on dead features) or ReLU + L1 (with dead features
// resampled), Adam written out as torch.optim.Adam computes it, decoder rows kept at unit norm
// (the gradient's component along each row removed before the step, the rows renormalised
// after it), activations scaled by one factor measured on the first buffer. A stopped run keeps
// its state (weights, moments, counters, stream position) and resumes exactly.

#include "features/activation_stream.h"
#include "features/feature_util.h"

#include "formats/file_util.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/device.h"
#include "gwb/engine/file_error.h"
#include "gwb/engine/hooks.h"
#include "gwb/engine/tokenizer.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <stdexcept>

namespace gwb::engine {
namespace {

using features::Rng;

constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

/// The table's ranges (featureTrainOptions, the front ends' sentences), then what joins two options.
void checkTrainOptions(const FeatureTrainOptions& o, int64_t dIn) {
    checkOptions(featureTrainOptions(), o);
    if (o.architecture != "topk" && o.architecture != "relu")
        throw std::invalid_argument("architecture (--architecture) is topk or relu; got '" + o.architecture + "'");
    if (o.architecture == "topk" && o.k > o.dSae)
        throw std::invalid_argument("k (--k) must be at most d_sae (" + std::to_string(o.dSae) + "); got " +
                                    std::to_string(o.k));
    if (dIn < 1) throw std::invalid_argument("the site has no values");
}

/// Per row b: sum_j vals[b, j] * W[idx[b, j]] (embedding_bag: no B x k x d_in tensor is made).
torch::Tensor sparseDecode(const torch::Tensor& w, const torch::Tensor& idx, const torch::Tensor& vals) {
    const int64_t rows = idx.size(0), k = idx.size(1);
    const torch::Tensor offsets = torch::arange(0, rows * k, k, idx.options());
    return std::get<0>(torch::embedding_bag(w, idx.reshape({-1}), offsets, false, 0, false, vals.reshape({-1})));
}

/// Everything that changes during training, in scaled units, on the training device.
struct Trainer {
    FeatureTrainOptions o;
    int64_t dIn = 0;  // the encoder's input width
    int64_t dOut = 0; // the decoder's output width (= dIn but for a transcoder)
    bool transcoder() const { return !o.targetSite.empty(); }
    torch::Tensor scale;             // per column of x (CPU float): training sees x * scale
    std::vector<double> blockScales; // one per source (a crosscoder's two models)
    std::vector<int64_t> widths;     // the sources' widths, summing to dIn
    torch::Device device{torch::kCPU};
    torch::Tensor wEnc, bEnc, wDec, bDec; // requires_grad
    std::array<torch::Tensor, 4> m, v;    // Adam moments
    torch::Tensor stepsSinceFired;        // float, d_sae
    int64_t step = 0, steps = 0;
    double lastMse = 0, lastExplained = 0, lastL0 = 0;

    std::array<torch::Tensor*, 4> params() { return {&wEnc, &bEnc, &wDec, &bDec}; }

    int64_t deadAfterSteps() const {
        const int64_t rows = o.deadAfterTokens > 0 ? o.deadAfterTokens : std::max<int64_t>(o.tokens / 10, o.batch);
        return std::max<int64_t>(1, (rows + o.batch - 1) / o.batch);
    }

    /// W_dec rows drawn from the seed (normal, then unit norm), W_enc = W_dec^T, b_enc = 0,
    /// b_dec = the mean of `first` (scaled rows).
    void initialise(const torch::Tensor& first) {
        Rng rng(o.seed * 2654435761ull + 99991);
        std::vector<float> w(static_cast<size_t>(o.dSae * dOut));
        for (float& x : w)
            x = static_cast<float>(rng.normal());
        torch::Tensor dec = torch::from_blob(w.data(), {o.dSae, dOut}, torch::kFloat).clone();
        dec = dec / dec.norm(2, 1, true);
        wDec = dec.to(device).set_requires_grad(true);
        torch::Tensor enc = dec.t().contiguous();
        if (dIn != dOut) { // a transcoder between spaces of different widths: W_enc of its own
            std::vector<float> e(static_cast<size_t>(dIn * o.dSae));
            for (float& x : e)
                x = static_cast<float>(rng.normal() / std::sqrt(static_cast<double>(dIn)));
            enc = torch::from_blob(e.data(), {dIn, o.dSae}, torch::kFloat).clone();
        }
        wEnc = enc.to(device).set_requires_grad(true);
        bEnc = torch::zeros({o.dSae}, torch::kFloat).to(device).set_requires_grad(true);
        bDec = (transcoder() ? first.slice(1, dIn, dIn + dOut) : first).mean(0).to(device).set_requires_grad(true);
        for (size_t i = 0; i < 4; ++i) {
            m[i] = torch::zeros_like(*params()[i]).detach();
            v[i] = torch::zeros_like(*params()[i]).detach();
        }
        stepsSinceFired = torch::zeros({o.dSae}, torch::kFloat).to(device);
    }

    void trainStep(torch::Tensor rows) {
        rows = rows.to(device);
        // A transcoder's rows are [input, target]; a dictionary reconstructs its input.
        const torch::Tensor x = transcoder() ? rows.slice(1, 0, dIn) : rows;
        const torch::Tensor target = transcoder() ? rows.slice(1, dIn, dIn + dOut) : rows;
        for (torch::Tensor* p : params())
            if (p->grad().defined()) p->mutable_grad().zero_();
        const torch::Tensor pre = torch::addmm(bEnc, transcoder() ? x : x - bDec, wEnc);
        const bool topk = o.architecture == "topk";
        // TopK decodes its k active features by gathering their decoder rows (a weighted sum per
        // row: k x d_in multiply-adds instead of d_sae x d_in), as the z W_dec it equals.
        torch::Tensor z, xhat, fired, active;
        if (topk && o.k < o.dSae) {
            const auto [top, idx] = pre.topk(o.k, -1);
            const torch::Tensor vals = torch::relu(top);
            xhat = sparseDecode(wDec, idx, vals) + bDec;
            torch::NoGradGuard noGrad;
            const torch::Tensor on = vals > 0;
            fired = torch::zeros({o.dSae}, torch::kBool).to(device).index_fill_(0, idx.masked_select(on), true);
            active = on;
        } else {
            z = features::activate(pre, o.architecture, o.k);
            xhat = torch::addmm(bDec, z, wDec);
            torch::NoGradGuard noGrad;
            fired = (z > 0).any(0);
            active = z > 0;
        }
        const torch::Tensor err = xhat - target;
        const torch::Tensor mse = err.pow(2).sum(-1).mean();
        torch::Tensor loss = mse;
        const torch::Tensor dead = stepsSinceFired >= static_cast<float>(deadAfterSteps());
        const int64_t nDead = dead.sum().item<int64_t>();
        if (!topk) {
            loss = loss + o.l1 * z.sum(-1).mean();
        } else if (o.auxCoefficient > 0 && nDead > 0) {
            // AuxK: the residual error, explained by the k_aux largest pre-activations among the
            // dead features (decoder without bias).
            const int64_t kAux = std::min<int64_t>(std::max<int64_t>(1, dOut / 2), nDead);
            const torch::Tensor e = (target - xhat).detach();
            const torch::Tensor deadIdx = dead.nonzero().flatten();
            const auto [values, local] = pre.index_select(1, deadIdx).topk(kAux, -1);
            const torch::Tensor eHat =
                sparseDecode(wDec, deadIdx.index_select(0, local.flatten()).view_as(local), torch::relu(values));
            loss = loss + o.auxCoefficient * (eHat - e).pow(2).sum(-1).mean();
        }
        loss.backward();
        {
            torch::NoGradGuard noGrad;
            // Unit-norm rows: no gradient along a row (it would only change its length).
            torch::Tensor& g = wDec.mutable_grad();
            g.sub_((g * wDec).sum(1, true) * wDec);
            ++step;
            const double bc1 = 1 - std::pow(kBeta1, static_cast<double>(step));
            const double bc2 = 1 - std::pow(kBeta2, static_cast<double>(step));
            for (size_t i = 0; i < 4; ++i) {
                torch::Tensor& p = *params()[i];
                const torch::Tensor& grad = p.grad();
                m[i].mul_(kBeta1).add_(grad, 1 - kBeta1);
                v[i].mul_(kBeta2).addcmul_(grad, grad, 1 - kBeta2);
                const torch::Tensor denom = (v[i].sqrt() / std::sqrt(bc2)).add_(kEps);
                p.addcdiv_(m[i], denom, -o.lr / bc1);
            }
            wDec.div_(wDec.norm(2, 1, true));
            stepsSinceFired.add_(1).masked_fill_(fired, 0);
            lastMse = mse.item<double>();
            const double var = (target - target.mean(0)).pow(2).sum(-1).mean().item<double>();
            lastExplained = var > 0 ? 1 - lastMse / var : 0;
            lastL0 = active.sum().item<double>() / static_cast<double>(x.size(0));
            if (o.architecture == "relu") resampleDead(x, target, err);
        }
    }

    /// ReLU: at each quarter of the run (not the last), features dead for deadAfterSteps are
    /// re-initialised at rows drawn with probability proportional to their squared error
    /// (Anthropic's resampling): decoder row = the row's direction, encoder column = that times
    /// 0.2 x the mean encoder norm of the live features, b_enc = 0, their Adam moments zeroed.
    void resampleDead(const torch::Tensor& x, const torch::Tensor& target, const torch::Tensor& err) {
        const int64_t every = std::max<int64_t>(1, steps / 4);
        if (step % every != 0 || step >= steps) return;
        Rng rng(o.seed * 31 + 7 + static_cast<uint64_t>(step) * 1000033ull); // one per event: resumes exactly
        const torch::Tensor dead = stepsSinceFired >= static_cast<float>(deadAfterSteps());
        const torch::Tensor deadIdx = dead.nonzero().flatten().to(torch::kCPU);
        if (deadIdx.numel() == 0) return;
        const torch::Tensor weights = err.pow(2).sum(-1).pow(2).to(torch::kCPU, torch::kDouble);
        const double total = weights.sum().item<double>();
        const torch::Tensor alive = ~dead;
        const double encNorm =
            alive.any().item<bool>() ? wEnc.t().index({alive}).norm(2, 1).mean().item<double>() : 1.0;
        const torch::Tensor cum = weights.cumsum(0);
        const double* c = cum.data_ptr<double>();
        const int64_t n = cum.size(0);
        for (int64_t i = 0; i < deadIdx.numel(); ++i) {
            const int64_t j = deadIdx[i].item<int64_t>();
            int64_t row = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
            if (total > 0) {
                const double u = rng.uniform() * total;
                row = std::lower_bound(c, c + n, u) - c;
                row = std::min(row, n - 1);
            }
            torch::Tensor dir = target[row] - bDec;
            torch::Tensor in = transcoder() ? x[row] : dir;
            const double norm = dir.norm().item<double>(), inNorm = in.norm().item<double>();
            if (!(norm > 0) || !(inNorm > 0)) continue;
            wDec[j].copy_(dir / norm);
            wEnc.select(1, j).copy_(in / inNorm * (0.2 * encNorm));
            bEnc[j].fill_(0);
            m[0].select(1, j).zero_();
            v[0].select(1, j).zero_();
            m[1][j].fill_(0);
            v[1][j].fill_(0);
            m[2][j].zero_();
            v[2][j].zero_();
            stepsSinceFired[j].fill_(0);
        }
    }

    /// s_m = sqrt(d_m) / mean ||x_m|| for each source's columns of `rows` (raw).
    void setScales(const torch::Tensor& rows) {
        std::vector<torch::Tensor> parts;
        int64_t at = 0;
        blockScales.clear();
        for (int64_t w : widths) {
            const torch::Tensor block = rows.slice(1, at, at + w);
            const double meanNorm = block.norm(2, 1).mean().item<double>();
            blockScales.push_back(meanNorm > 0 ? std::sqrt(static_cast<double>(w)) / meanNorm : 1.0);
            parts.push_back(torch::full({w}, static_cast<float>(blockScales.back())));
            at += w;
        }
        scale = torch::cat(parts);
    }

    /// The dictionary in file units: W_enc * s (by row), W_dec / s and b_dec / s (by column).
    Dictionary folded(const std::string& site) const {
        Dictionary d;
        DictionaryConfig& c = d.config;
        c.architecture = o.architecture;
        c.site = site;
        c.dIn = dIn;
        if (transcoder()) {
            c.targetSite = o.targetSite;
            c.dOut = dOut;
            c.blockScaling = blockScales;
        }
        c.dSae = o.dSae;
        c.k = o.k;
        c.l1 = o.l1;
        c.contextSize = o.contextSize;
        c.scaling = blockScales.front();
        c.corpus = o.files;
        c.trainedTokens = step * o.batch;
        c.seed = o.seed;
        if (widths.size() == 2) {
            c.secondSite = o.secondSite;
            c.firstWidth = widths[0];
            c.blockScaling = blockScales;
        }
        const torch::Tensor s = scale.to(device);
        const torch::Tensor sIn = transcoder() ? s.slice(0, 0, dIn) : s;
        const torch::Tensor sOut = transcoder() ? s.slice(0, dIn, dIn + dOut) : s;
        d.wEnc = features::toArray(wEnc * sIn.unsqueeze(1));
        d.bEnc = features::toArray(bEnc);
        d.wDec = features::toArray(wDec / sOut.unsqueeze(0));
        d.bDec = features::toArray(bDec / sOut);
        return d;
    }
};

FeatureTrainProgress progressOf(const Trainer& t, double seconds, double harvest) {
    FeatureTrainProgress p;
    p.step = t.step;
    p.steps = t.steps;
    p.tokens = t.step * t.o.batch;
    p.mse = t.lastMse;
    p.explained = t.lastExplained;
    p.l0 = t.lastL0;
    p.deadFraction =
        (t.stepsSinceFired >= static_cast<float>(t.deadAfterSteps())).to(torch::kFloat).mean().item<double>();
    p.seconds = seconds;
    p.harvestSeconds = harvest;
    return p;
}

nlohmann::json optionsJson(const FeatureTrainOptions& o) {
    return {{"site", o.site},
            {"second_site", o.secondSite},
            {"target_site", o.targetSite},
            {"files", o.files},
            {"architecture", o.architecture},
            {"d_sae", o.dSae},
            {"k", o.k},
            {"l1", o.l1},
            {"tokens", o.tokens},
            {"batch", o.batch},
            {"context_size", o.contextSize},
            {"buffer_windows", o.bufferWindows},
            {"lr", o.lr},
            {"dead_after_tokens", o.deadAfterTokens},
            {"aux_coefficient", o.auxCoefficient},
            {"seed", o.seed},
            {"device", o.device}};
}

FeatureTrainOptions optionsFromJson(const nlohmann::json& j) {
    FeatureTrainOptions o;
    o.site = j.at("site");
    o.secondSite = j.value("second_site", "");
    o.targetSite = j.value("target_site", "");
    o.files = j.at("files").get<std::vector<std::string>>();
    o.architecture = j.at("architecture");
    o.dSae = j.at("d_sae");
    o.k = j.at("k");
    o.l1 = j.at("l1");
    o.tokens = j.at("tokens");
    o.batch = j.at("batch");
    o.contextSize = j.at("context_size");
    o.bufferWindows = j.at("buffer_windows");
    o.lr = j.at("lr");
    o.deadAfterTokens = j.at("dead_after_tokens");
    o.auxCoefficient = j.at("aux_coefficient");
    o.seed = j.at("seed");
    o.device = j.at("device");
    return o;
}

constexpr const char* kStateTensors = "state.safetensors";
constexpr const char* kStateJson = "state.json";

/// The hashes of the sources' models (the state and the dictionary record them).
std::vector<std::string> hashesOf(const features::Sources& sources) {
    std::vector<std::string> out;
    for (const features::Source& src : sources)
        out.push_back(modelWeightsHash(*src.model));
    return out;
}

void writeState(const Trainer& t, const features::ActivationStream& stream, const std::string& dir,
                const std::vector<std::string>& hashes) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw FileError(dir, ec.value(), "cannot create the state folder '" + dir + "': " + ec.message());
    SafetensorsFile f;
    const char* names[] = {"W_enc", "b_enc", "W_dec", "b_dec"};
    Trainer& mt = const_cast<Trainer&>(t);
    for (size_t i = 0; i < 4; ++i) {
        const FloatArray p = features::toArray(*mt.params()[i]), m = features::toArray(t.m[i]),
                         v = features::toArray(t.v[i]);
        f.tensors[names[i]] = makeStoredTensor(p.shape, p.data.data(), "F32");
        f.tensors[std::string("adam_m.") + names[i]] = makeStoredTensor(m.shape, m.data.data(), "F32");
        f.tensors[std::string("adam_v.") + names[i]] = makeStoredTensor(v.shape, v.data.data(), "F32");
    }
    const FloatArray since = features::toArray(t.stepsSinceFired);
    f.tensors["steps_since_fired"] = makeStoredTensor(since.shape, since.data.data(), "F32");
    writeSafetensors((std::filesystem::path(dir) / kStateTensors).string(), f);
    nlohmann::json j = {{"format", "gwb-dictionary-training-state"},
                        {"version", 1},
                        {"options", optionsJson(t.o)},
                        {"step", t.step},
                        {"steps", t.steps},
                        {"block_scales", t.blockScales},
                        {"widths", t.widths},
                        {"stream_buffer", stream.bufferIndex()},
                        {"stream_offset", stream.offset()},
                        {"model_hashes", hashes}};
    writeFileAtomic((std::filesystem::path(dir) / kStateJson).string(), j.dump(2) + "\n");
}

FeatureTrainResult runTraining(const features::Sources& sources, Trainer& t, features::ActivationStream& stream,
                               const std::vector<std::string>& hashes, const FeatureTrainCallback& progress,
                               const std::atomic<bool>* stop) {
    const auto t0 = std::chrono::steady_clock::now();
    const double harvest0 = stream.harvestSeconds();
    const int64_t firstStep = t.step;
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    bool stopped = false;
    while (t.step < t.steps) {
        if (stop && stop->load()) {
            stopped = true;
            break;
        }
        t.trainStep(stream.take(t.o.batch) * t.scale);
        if (progress && !progress(progressOf(t, seconds(), stream.harvestSeconds() - harvest0))) {
            stopped = true;
            break;
        }
    }
    if (stopped && !t.o.stateDir.empty()) writeState(t, stream, t.o.stateDir, hashes);
    FeatureTrainResult r;
    r.dictionary = t.folded(t.o.site);
    r.dictionary.config.modelName = sources[0].model->displayName();
    r.dictionary.config.modelHash = hashes[0];
    if (sources.size() == 2) {
        r.dictionary.config.secondModelName = sources[1].model->displayName();
        r.dictionary.config.secondModelHash = hashes[1];
    }
    r.complete = t.step >= t.steps;
    r.steps = t.step;
    r.seconds = seconds();
    r.tokensPerSecond = r.seconds > 0 ? static_cast<double>((t.step - firstStep) * t.o.batch) / r.seconds : 0;
    return r;
}

/// d_in and d_out from the sources' widths: a transcoder reads the first and reconstructs the
/// second; a dictionary or crosscoder reconstructs what it reads (all of them).
void setWidths(Trainer& t) {
    const int64_t all = std::accumulate(t.widths.begin(), t.widths.end(), int64_t{0});
    t.dIn = t.transcoder() ? t.widths.front() : all;
    t.dOut = t.transcoder() ? t.widths.back() : all;
}

/// The sources of a run: the first model's site, and the second's for a crosscoder (same tokenizer,
/// sites with a row per token).
features::Sources trainingSources(const Model& first, const Model* second, const FeatureTrainOptions& o) {
    features::Sources sources{{&first, o.site}};
    if (!o.targetSite.empty()) {
        if (!o.secondSite.empty()) throw std::invalid_argument("a transcoder reads one model: no second site");
        for (const std::string& site : {o.site, o.targetSite})
            if (site.rfind("offset.", 0) == 0)
                throw std::invalid_argument("a transcoder pairs its input and target row by row: offset site '" + site +
                                            "' has no row for its first D tokens");
        sources.push_back({&first, o.targetSite});
        return sources;
    }
    if (o.secondSite.empty()) return sources;
    if (!second) throw std::invalid_argument("a crosscoder reads two models: the second is missing");
    if (!first.tokenizer() || !second->tokenizer() ||
        first.tokenizer()->serialize() != second->tokenizer()->serialize())
        throw std::invalid_argument("a crosscoder reads the same tokens of both models: '" + first.displayName() +
                                    "' and '" + second->displayName() + "' do not share their tokenizer");
    for (const std::string& site : {o.site, o.secondSite})
        if (site.rfind("offset.", 0) == 0)
            throw std::invalid_argument("a crosscoder pairs rows token by token: offset site '" + site +
                                        "' has no row for its first D tokens");
    sources.push_back({second, o.secondSite});
    return sources;
}

FeatureTrainResult trainSources(const features::Sources& sources, const FeatureTrainOptions& options,
                                const FeatureTrainCallback& progress, const std::atomic<bool>* stop) {
    torch::NoGradGuard outer; // re-enabled for the steps below
    Trainer t;
    for (const features::Source& src : sources)
        t.widths.push_back(hookSiteShape(*src.model, src.site, 4).back());
    t.o = options;
    setWidths(t);
    checkTrainOptions(options, t.dIn);
    std::vector<std::vector<int32_t>> windows =
        features::corpusWindows(*sources[0].model, options.files, options.contextSize);
    t.o = options;
    t.device = torch::Device(resolveDevice(options.device));
    t.steps = (options.tokens + options.batch - 1) / options.batch;
    features::ActivationStream stream(sources, std::move(windows), options.bufferWindows, options.seed);
    const torch::Tensor first = stream.buffer(0);
    if (first.size(0) == 0)
        throw std::invalid_argument("the first windows of the text files have no rows at '" + options.site + "'");
    t.setScales(first);
    t.initialise(first * t.scale);
    const std::vector<std::string> hashes = hashesOf(sources);
    torch::AutoGradMode grad(true);
    return runTraining(sources, t, stream, hashes, progress, stop);
}

} // namespace

FeatureTrainResult trainDictionary(const Model& model, const FeatureTrainOptions& options,
                                   const FeatureTrainCallback& progress, const std::atomic<bool>* stop) {
    if (!options.secondSite.empty())
        throw std::invalid_argument("a second site makes a crosscoder: train it with the second model "
                                    "(trainCrosscoder)");
    return trainSources(trainingSources(model, nullptr, options), options, progress, stop);
}

FeatureTrainResult trainCrosscoder(const Model& first, const Model& second, const FeatureTrainOptions& options,
                                   const FeatureTrainCallback& progress, const std::atomic<bool>* stop) {
    if (options.secondSite.empty()) throw std::invalid_argument("a crosscoder needs the second model's site");
    return trainSources(trainingSources(first, &second, options), options, progress, stop);
}

FeatureTrainResult resumeDictionaryTraining(const Model& model, const std::string& stateDir,
                                            const FeatureTrainCallback& progress, const std::atomic<bool>* stop,
                                            const Model* second) {
    const std::string jsonPath = (std::filesystem::path(stateDir) / kStateJson).string();
    if (!std::filesystem::exists(jsonPath))
        throw std::runtime_error("'" + stateDir + "' holds no training state (" + kStateJson + " is missing)");
    nlohmann::json j;
    FeatureTrainOptions o;
    try {
        j = nlohmann::json::parse(readFileBytes(jsonPath));
        if (j.value("format", "") != "gwb-dictionary-training-state")
            throw std::runtime_error("not a gwb dictionary training state");
        o = optionsFromJson(j.at("options"));
    } catch (const std::exception& e) {
        throw std::runtime_error(jsonPath + ": " + e.what());
    }
    const features::Sources sources = trainingSources(model, second, o);
    const std::vector<std::string> hashes = hashesOf(sources);
    if (j.value("model_hashes", std::vector<std::string>{}) != hashes)
        throw std::invalid_argument("the training state in '" + stateDir + "' was made on other weights than model '" +
                                    model.displayName() + "'" +
                                    (second ? " and '" + second->displayName() + "'" : std::string()));
    Trainer t;
    t.o = o;
    t.o.stateDir = stateDir;
    t.widths = j.at("widths").get<std::vector<int64_t>>();
    t.blockScales = j.at("block_scales").get<std::vector<double>>();
    setWidths(t);
    std::vector<torch::Tensor> parts;
    for (size_t b = 0; b < t.widths.size(); ++b)
        parts.push_back(torch::full({t.widths[b]}, static_cast<float>(t.blockScales[b])));
    t.scale = torch::cat(parts);
    t.step = j.at("step");
    t.steps = j.at("steps");
    t.device = torch::Device(resolveDevice(t.o.device));
    const SafetensorsFile f = readSafetensors((std::filesystem::path(stateDir) / kStateTensors).string());
    auto tensor = [&](const std::string& name) {
        const auto it = f.tensors.find(name);
        if (it == f.tensors.end()) throw std::runtime_error(stateDir + ": the state has no tensor " + name);
        return features::toTensor(it->second.toArray(), t.device);
    };
    const char* names[] = {"W_enc", "b_enc", "W_dec", "b_dec"};
    for (size_t i = 0; i < 4; ++i) {
        *t.params()[i] = tensor(names[i]).set_requires_grad(true);
        t.m[i] = tensor(std::string("adam_m.") + names[i]);
        t.v[i] = tensor(std::string("adam_v.") + names[i]);
    }
    t.stepsSinceFired = tensor("steps_since_fired");
    features::ActivationStream stream(sources, features::corpusWindows(model, t.o.files, t.o.contextSize),
                                      t.o.bufferWindows, t.o.seed);
    stream.seek(j.at("stream_buffer"), j.at("stream_offset"));
    torch::AutoGradMode grad(true);
    return runTraining(sources, t, stream, hashes, progress, stop);
}

FeatureTrainResult trainDictionaryOnRows(const FloatArray& rows, const FeatureTrainOptions& options,
                                         Dictionary* initial, const FeatureTrainCallback& progress,
                                         const std::atomic<bool>* stop) {
    if (rows.rank() != 2 || rows.dim(0) < 1)
        throw std::invalid_argument("the rows must be a non-empty rows x d_in array, not " + shapeText(rows.shape));
    checkTrainOptions(options, rows.dim(1));
    Trainer t;
    t.o = options;
    t.dIn = rows.dim(1);
    if (options.firstWidth > 0) {
        if (options.firstWidth >= t.dIn)
            throw std::invalid_argument("the first width " + std::to_string(options.firstWidth) +
                                        " leaves nothing of the " + std::to_string(t.dIn) +
                                        " columns to the second model");
        t.widths = {options.firstWidth, t.dIn - options.firstWidth};
        if (t.o.secondSite.empty()) t.o.secondSite = "second";
    } else {
        t.o.secondSite.clear();
        t.widths = {t.dIn};
    }
    t.o.targetSite.clear();
    t.dOut = t.dIn;
    t.device = torch::Device(resolveDevice(options.device));
    t.steps = (options.tokens + options.batch - 1) / options.batch;
    const torch::Tensor all = features::toTensor(rows);
    t.setScales(all);
    const torch::Tensor scaled = all * t.scale;
    {
        torch::NoGradGuard noGrad;
        t.initialise(scaled);
    }
    if (initial) {
        *initial = t.folded(options.site);
        initial->config.trainedTokens = 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = scaled.size(0);
    torch::AutoGradMode grad(true);
    while (t.step < t.steps && !(stop && stop->load())) {
        std::vector<int64_t> idx(static_cast<size_t>(options.batch));
        for (int64_t i = 0; i < options.batch; ++i)
            idx[static_cast<size_t>(i)] = (t.step * options.batch + i) % n;
        t.trainStep(scaled.index_select(0, torch::tensor(idx, torch::kLong)));
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (progress && !progress(progressOf(t, secs, 0))) break;
    }
    FeatureTrainResult r;
    r.dictionary = t.folded(options.site);
    r.complete = t.step >= t.steps;
    r.steps = t.step;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.tokensPerSecond = r.seconds > 0 ? static_cast<double>(t.step * options.batch) / r.seconds : 0;
    return r;
}

} // namespace gwb::engine
