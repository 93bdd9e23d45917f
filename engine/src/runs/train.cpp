// Training loop (AdamW, warm-up + cosine, clipping, periodic validation, best checkpoint,
// resume) and perplexity evaluation.

#include "gwb/engine/train.h"

#include "kernels/adamw_step.h"
#include "formats/file_util.h"
#include "gwb/engine/analysis.h"
#include "gwb/engine/device.h"
#include "model/model_impl.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>

namespace gwb::engine {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kCacheMagic[8] = {'G', 'W', 'B', 'T', 'O', 'K', '1', '\0'};
constexpr const char* kCacheVersion = "encoders-2";

int64_t countCodePoints(std::string_view s) {
    int64_t n = 0;
    for (unsigned char c : s)
        n += (c & 0xc0) != 0x80;
    return n;
}

TokenizedCorpus tokenizeText(const Tokenizer& tokenizer, const std::string& text, const std::string& what) {
    try {
        checkUtf8(text);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(what + ": " + e.what());
    }
    TokenizedCorpus c;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        std::string_view line(text.data() + pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        pos = nl + 1;
        if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
        const auto ids = tokenizer.encodeIds(line);
        c.ids.insert(c.ids.end(), ids.begin(), ids.end());
        c.characters += countCodePoints(line);
    }
    return c;
}

/// Sum of next-token NLL over a token stream cut into blocks of L+1 tokens that share their
/// boundary token, so every token after the first is predicted exactly once.
struct LossSum {
    double nll = 0;
    int64_t tokens = 0;
};

LossSum sumStreamLoss(Model::Impl& m, const std::vector<int32_t>& ids, int64_t batch, int64_t maxBlocks,
                      const std::function<bool(int64_t, int64_t)>& progress) {
    const int64_t L = m.config.maxLen;
    const int64_t n = static_cast<int64_t>(ids.size());
    LossSum sum;
    if (n < 2) return sum;
    const int64_t nBlocks = (n - 1 + L - 1) / L; // last one may be shorter
    std::vector<int64_t> starts;
    if (maxBlocks > 0 && maxBlocks < nBlocks) {
        for (int64_t i = 0; i < maxBlocks; ++i)
            starts.push_back((i * nBlocks / maxBlocks) * L);
    } else {
        for (int64_t i = 0; i < nBlocks; ++i)
            starts.push_back(i * L);
    }
    torch::NoGradGuard noGrad;
    m.net->eval();
    const int64_t total = static_cast<int64_t>(starts.size());
    int64_t done = 0;
    while (done < total) {
        // Full-length blocks go in batches; a shorter final block goes alone.
        std::vector<int64_t> group;
        const int64_t len0 = std::min(L, n - 1 - starts[static_cast<size_t>(done)]);
        while (done < total && static_cast<int64_t>(group.size()) < batch &&
               std::min(L, n - 1 - starts[static_cast<size_t>(done)]) == len0)
            group.push_back(starts[static_cast<size_t>(done++)]);
        torch::Tensor block = torch::empty({static_cast<int64_t>(group.size()), len0 + 1}, torch::kLong);
        auto acc = block.accessor<int64_t, 2>();
        for (size_t b = 0; b < group.size(); ++b)
            for (int64_t t = 0; t <= len0; ++t)
                acc[static_cast<int64_t>(b)][t] = ids[static_cast<size_t>(group[b] + t)];
        block = block.to(m.device);
        const torch::Tensor targets = block.narrow(1, 1, len0);
        const torch::Tensor nll = m.net->nextTokenLoss(m.net->forwardHidden(block.narrow(1, 0, len0)), targets) *
                                  static_cast<double>(targets.numel());
        sum.nll += nll.item<double>();
        sum.tokens += targets.numel();
        if (progress && !progress(done, total)) throw Cancelled();
    }
    return sum;
}

double learningRate(const TrainOptions& o, int64_t step, int64_t total) {
    if (o.warmup > 0 && step < o.warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup);
    const double span = std::max<int64_t>(1, total - o.warmup);
    const double progress = std::clamp(static_cast<double>(step - o.warmup) / span, 0.0, 1.0);
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
    return o.lr * (o.minLrRatio + (1.0 - o.minLrRatio) * cosine);
}

/// Decoupled weight decay only on the matrices of linear layers: not on LayerNorms, biases or
/// the embedding tables (the token table is also the tied output head).
std::vector<torch::optim::OptimizerParamGroup> parameterGroups(LanguageModelImpl& net, const TrainOptions& o) {
    std::vector<torch::Tensor> decay, noDecay;
    for (auto& item : net.named_parameters()) {
        const std::string& name = item.key();
        const bool matrix = item.value().dim() == 2 && name.find("embed") == std::string::npos;
        (matrix ? decay : noDecay).push_back(item.value());
    }
    auto options = [&](double wd) {
        auto opt = std::make_unique<torch::optim::AdamWOptions>(o.lr);
        opt->betas(std::make_tuple(0.9, 0.98)).eps(1e-8).weight_decay(wd);
        return opt;
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(o.weightDecay));
    groups.emplace_back(noDecay, options(0.0));
    return groups;
}

void saveOptimizer(torch::optim::Optimizer& opt, const std::string& path) {
    const std::string tmp = path + ".tmp";
    torch::serialize::OutputArchive archive;
    opt.save(archive);
    archive.save_to(tmp);
    fs::rename(tmp, path);
}

} // namespace

TokenizedCorpus tokenizeFiles(const Tokenizer& tokenizer, const std::vector<std::string>& files,
                              const std::string& cacheDir) {
    TokenizedCorpus all;
    // The cache version changes whenever an encoder's output could change for the same bytes.
    const uint64_t tokHash =
        fnv1a64(std::string(kCacheVersion) + '\0' + tokenizer.kind() + '\0' + tokenizer.serialize());
    for (const std::string& file : files) {
        const std::string text = readFileBytes(file);
        const std::string key = hex64(fnv1a64(text, tokHash));
        const fs::path cachePath =
            cacheDir.empty() ? fs::path() : fs::path(cacheDir) / (fs::path(file).stem().string() + "-" + key + ".tok");
        TokenizedCorpus c;
        bool cached = false;
        if (!cachePath.empty() && fs::exists(cachePath)) {
            const std::string bytes = readFileBytes(cachePath.string());
            int64_t chars = 0, n = 0;
            if (bytes.size() >= 24 && std::equal(kCacheMagic, kCacheMagic + 8, bytes.data())) {
                std::memcpy(&chars, bytes.data() + 8, 8);
                std::memcpy(&n, bytes.data() + 16, 8);
                if (n >= 0 && bytes.size() == 24 + static_cast<size_t>(n) * 4) {
                    c.characters = chars;
                    c.ids.resize(static_cast<size_t>(n));
                    std::memcpy(c.ids.data(), bytes.data() + 24, static_cast<size_t>(n) * 4);
                    cached = true;
                }
            }
        }
        if (!cached) {
            c = tokenizeText(tokenizer, text, file);
            if (!cachePath.empty()) {
                fs::create_directories(cachePath.parent_path());
                std::string bytes(kCacheMagic, 8);
                const int64_t n = static_cast<int64_t>(c.ids.size());
                bytes.append(reinterpret_cast<const char*>(&c.characters), 8);
                bytes.append(reinterpret_cast<const char*>(&n), 8);
                bytes.append(reinterpret_cast<const char*>(c.ids.data()), c.ids.size() * 4);
                writeFileAtomic(cachePath.string(), bytes);
            }
        }
        for (int32_t id : c.ids)
            if (id < 0 || id >= tokenizer.vocabSize())
                throw std::runtime_error(file + ": token cache holds id " + std::to_string(id) +
                                         " outside the vocabulary");
        all.ids.insert(all.ids.end(), c.ids.begin(), c.ids.end());
        all.characters += c.characters;
    }
    return all;
}

EvalResult evaluate(const Model& model, const std::vector<std::string>& files, int64_t batch,
                    const std::function<bool(int64_t, int64_t)>& progress, const std::string& cacheDir) {
    Model::Impl& m = model.impl();
    if (!m.tokenizer) throw std::invalid_argument("the model has no tokenizer: cannot evaluate text files");
    if (files.empty()) throw std::invalid_argument("no evaluation files given");
    const TokenizedCorpus corpus = tokenizeFiles(*m.tokenizer, files, cacheDir);
    if (corpus.ids.size() < 2) throw std::invalid_argument("evaluation text has fewer than 2 tokens");
    std::lock_guard<std::mutex> lock(m.mutex);
    const LossSum s = sumStreamLoss(m, corpus.ids, std::max<int64_t>(1, batch), 0, progress);
    EvalResult r;
    r.tokens = s.tokens;
    r.characters = corpus.characters;
    r.loss = s.nll / static_cast<double>(s.tokens);
    r.perplexity = std::exp(r.loss);
    r.bitsPerCharacter = s.nll / std::log(2.0) / static_cast<double>(std::max<int64_t>(1, corpus.characters));
    return r;
}

std::string validationScope(const std::string& trainingSummaryJson) {
    const json s = json::parse(trainingSummaryJson, nullptr, false);
    auto count = [&](const char* key) -> int64_t {
        return s.is_object() && s.contains(key) && s[key].is_number_integer() ? s[key].get<int64_t>() : -1;
    };
    const int64_t tokens = count("valid_tokens"), split = count("valid_split_tokens"), L = count("sequence_length");
    if (tokens < 0) return "";
    // Blocks of sequence_length predicted tokens, as sumStreamLoss cuts them (the last may be shorter).
    auto blocks = [&](int64_t n) { return L > 0 ? (n + L - 1) / L : int64_t{0}; };
    const std::string n = std::to_string(tokens);
    if (split >= 0 && tokens >= split) return "at training time, over the whole validation split (" + n + " tokens)";
    std::string out = "at training time, over ";
    if (split >= 0) {
        out += L > 0 ? std::to_string(blocks(tokens)) + " of the validation split's " + std::to_string(blocks(split)) +
                           " blocks of " + std::to_string(L) + " tokens (" + n + " of " + std::to_string(split) + ")"
                     : n + " of the validation split's " + std::to_string(split) + " tokens";
    } else { // before valid_split_tokens: the split's size was not recorded
        out += n + " validation tokens";
        if (L > 0) out += " (" + std::to_string(blocks(tokens)) + " blocks of " + std::to_string(L) + ")";
        out += ", a sample of the split where training's --eval-max-blocks was set";
    }
    return out + "; gwb eval scores the whole split";
}

double streamLoss(const Model& model, const std::vector<int32_t>& ids, int64_t batch) {
    Model::Impl& m = model.impl();
    for (int32_t id : ids)
        if (id < 0 || id >= m.config.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(id) + " is outside the model's vocabulary");
    std::lock_guard<std::mutex> lock(m.mutex);
    const LossSum s = sumStreamLoss(m, ids, std::max<int64_t>(1, batch), 0, {});
    return s.nll / static_cast<double>(std::max<int64_t>(1, s.tokens));
}

TrainResult train(Model& model, const TrainOptions& o, const std::atomic<bool>* stop, const TrainCallback& callback) {
    Model::Impl& m = model.impl();
    if (!m.tokenizer) throw std::invalid_argument("training needs a tokenizer");
    if (o.trainFiles.empty()) throw std::invalid_argument("training needs at least one --train file");
    if (o.validFiles.empty()) throw std::invalid_argument("training needs at least one --valid file");
    if (o.outPath.empty()) throw std::invalid_argument("training needs an output path");
    const std::string cacheDir = o.cacheDir.empty() ? o.outPath + ".cache" : o.cacheDir;
    const TokenizedCorpus trainC = tokenizeFiles(*m.tokenizer, o.trainFiles, cacheDir);
    const TokenizedCorpus validC = tokenizeFiles(*m.tokenizer, o.validFiles, cacheDir);
    return trainOnTokens(model, trainC.ids, validC.ids, o, stop, callback);
}

TrainResult trainOnTokens(Model& model, const std::vector<int32_t>& trainIds, const std::vector<int32_t>& validIds,
                          const TrainOptions& o, const std::atomic<bool>* stop, const TrainCallback& callback) {
    Model::Impl& m = model.impl();
    if (o.outPath.empty()) throw std::invalid_argument("training needs an output path");
    if (o.batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (o.steps <= 0 && o.epochs <= 0) throw std::invalid_argument("give a positive number of steps or epochs");
    if (o.lr <= 0) throw std::invalid_argument("learning rate must be > 0");
    for (const auto* ids : {&trainIds, &validIds})
        for (int32_t id : *ids)
            if (id < 0 || id >= m.config.vocabSize)
                throw std::invalid_argument("token id " + std::to_string(id) + " is outside the model's vocabulary");
    std::lock_guard<std::mutex> lock(m.mutex);
    const auto t0 = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    auto report = [&](TrainProgress p) { return callback ? callback(p) : true; };
    const int64_t L = m.config.maxLen;
    const int64_t nBlocks = (static_cast<int64_t>(trainIds.size()) - 1) / L;
    if (nBlocks < 1)
        throw std::invalid_argument("training text has " + std::to_string(trainIds.size()) +
                                    " tokens, fewer than one block of max_len + 1 = " + std::to_string(L + 1));
    if (validIds.size() < 2) throw std::invalid_argument("validation text has fewer than 2 tokens");
    const int64_t totalSteps =
        o.steps > 0
            ? o.steps
            : static_cast<int64_t>(std::ceil(o.epochs * static_cast<double>(nBlocks) / static_cast<double>(o.batch)));
    {
        TrainProgress p;
        p.totalSteps = totalSteps;
        p.message = "corpus: " + std::to_string(trainIds.size()) + " training tokens (" + std::to_string(nBlocks) +
                    " blocks of " + std::to_string(L + 1) + "), " + std::to_string(validIds.size()) +
                    " validation tokens; " + std::to_string(totalSteps) + " steps of " + std::to_string(o.batch) +
                    " sequences on " + deviceSummary(m.device.str());
        report(p);
    }

    torch::optim::AdamW optimizer(parameterGroups(*m.net, o), torch::optim::AdamWOptions(o.lr));
    const std::string optimPath = o.outPath + ".optim", statePath = o.outPath + ".state.json";
    int64_t step = 0, tokensSeen = 0, bestStep = 0;
    double bestValid = std::numeric_limits<double>::infinity(), priorSeconds = 0;
    bool haveCheckpoint = false;
    // A resume point: the weights, optimizer and counters of the step a run was stopped at, when
    // that step's weights were not the best (those stay in outPath). --resume prefers it.
    const std::string resumeModel = o.outPath + ".resume.gwb", resumeOptim = o.outPath + ".resume.optim",
                      resumeState = o.outPath + ".resume.state.json";
    if (o.resume) {
        if (!fs::exists(o.outPath) || !fs::exists(optimPath) || !fs::exists(statePath))
            throw std::runtime_error("--resume needs " + o.outPath + ", " + optimPath + " and " + statePath);
        json st = json::parse(readFileBytes(statePath));
        std::string from = o.outPath, fromOptim = optimPath;
        if (fs::exists(resumeModel) && fs::exists(resumeOptim) && fs::exists(resumeState)) {
            const json rs = json::parse(readFileBytes(resumeState));
            if (rs.at("step").get<int64_t>() > st.at("step").get<int64_t>()) {
                st = rs;
                from = resumeModel;
                fromOptim = resumeOptim;
            }
        }
        const Model saved = Model::load(from, "cpu", m.config.kind);
        if (configToJson(saved.config()) != configToJson(m.config))
            throw std::runtime_error(from + ": its config differs from the one being trained");
        torch::NoGradGuard noGrad;
        auto dst = m.net->named_parameters();
        for (const auto& item : saved.impl().net->named_parameters())
            dst[item.key()].copy_(item.value());
        torch::serialize::InputArchive archive;
        archive.load_from(fromOptim);
        optimizer.load(archive);
        step = st.at("step").get<int64_t>();
        tokensSeen = st.at("tokens_seen").get<int64_t>();
        bestValid = st.at("best_valid_loss").get<double>();
        bestStep = st.value("best_step", step);
        priorSeconds = st.value("seconds", 0.0);
        haveCheckpoint = true;
        TrainProgress p;
        p.step = step;
        p.totalSteps = totalSteps;
        p.message = "resumed at step " + std::to_string(step) + " from " + from + " (best validation loss " +
                    std::to_string(bestValid) + " at step " + std::to_string(bestStep) + ")";
        report(p);
    }

    // Batch order: a fresh permutation of the blocks per epoch, derived from seed + epoch.
    std::vector<int64_t> perm(static_cast<size_t>(nBlocks));
    int64_t permEpoch = -1;
    auto blockAt = [&](int64_t sample) {
        const int64_t epoch = sample / nBlocks;
        if (epoch != permEpoch) {
            std::iota(perm.begin(), perm.end(), 0);
            std::mt19937_64 rng(o.seed * 1000003ull + static_cast<uint64_t>(epoch));
            std::shuffle(perm.begin(), perm.end(), rng);
            permEpoch = epoch;
        }
        return perm[static_cast<size_t>(sample % nBlocks)];
    };

    // The weights, the optimizer and the counters --resume needs (the best checkpoint, or a
    // stopped run's last step).
    auto saveState = [&](const std::string& modelPath, const std::string& optim, const std::string& state) {
        model.save(modelPath, o.saveDtype);
        saveOptimizer(optimizer, optim);
        writeFileAtomic(state, json{{"step", step},
                                    {"tokens_seen", tokensSeen},
                                    {"best_valid_loss", bestValid},
                                    {"best_step", bestStep},
                                    {"seconds", priorSeconds + seconds()}}
                                   .dump(2));
    };
    TrainResult result;
    auto validateAndSave = [&](TrainProgress& p) {
        const LossSum s = sumStreamLoss(m, validIds, o.batch, o.evalMaxBlocks, {});
        const double vloss = s.nll / static_cast<double>(std::max<int64_t>(1, s.tokens));
        p.validated = true;
        p.validLoss = vloss;
        if (vloss < bestValid || !haveCheckpoint) {
            bestValid = std::min(bestValid, vloss);
            bestStep = step;
            json summary = {
                {"steps", step},
                {"total_steps", totalSteps},
                {"tokens_seen", tokensSeen},
                {"batch", o.batch},
                {"sequence_length", L},
                {"peak_lr", o.lr},
                {"warmup", o.warmup},
                {"schedule", "linear warm-up, cosine decay to " + std::to_string(o.minLrRatio) + " x peak"},
                {"optimizer", "AdamW betas (0.9, 0.98) eps 1e-8, weight decay " + std::to_string(o.weightDecay) +
                                  " on linear matrices only, grad clip " + std::to_string(o.gradClip)},
                {"seed", o.seed},
                {"valid_loss", vloss},
                {"valid_perplexity", std::exp(vloss)},
                {"valid_tokens", s.tokens},
                {"valid_split_tokens", static_cast<int64_t>(validIds.size()) - 1}, // all a whole-split eval scores
                {"train_tokens", trainIds.size()},
                {"seconds", priorSeconds + seconds()},
                {"device", deviceSummary(m.device.str())},
                {"tokenizer", m.tokenizer ? m.tokenizer->kind() + " " + std::to_string(m.tokenizer->vocabSize())
                                          : std::string("none (token ids)")}};
            json trainFiles = json::array(), validFiles = json::array();
            for (const auto& f : o.trainFiles)
                trainFiles.push_back(fs::path(f).filename().string());
            for (const auto& f : o.validFiles)
                validFiles.push_back(fs::path(f).filename().string());
            summary["train_files"] = trainFiles;
            summary["valid_files"] = validFiles;
            m.trainingSummary = summary.dump();
            saveState(o.outPath, optimPath, statePath);
            haveCheckpoint = true;
            p.saved = true;
            result.summaryJson = m.trainingSummary;
        }
        m.net->train();
    };

    std::string reason = "finished";
    double lossAcc = 0, trainSeconds = 0;
    int64_t lossCount = 0, tokensSinceReport = 0;
    auto lastReport = Clock::now();
    double secondsSinceReport = 0;
    bool validatedAtStep = false;
    m.net->train();
    const int64_t startStep = step;
    while (step < totalSteps) {
        if (stop && stop->load()) {
            reason = "stopped";
            break;
        }
        if (o.timeLimitMinutes > 0 && seconds() > o.timeLimitMinutes * 60.0) {
            reason = "time limit";
            break;
        }
        const auto stepStart = Clock::now();
        torch::manual_seed(o.seed * 7919ull + static_cast<uint64_t>(step)); // dropout masks per step
        const double lr = learningRate(o, step, totalSteps);
        for (auto& group : optimizer.param_groups())
            static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
        torch::Tensor batch = torch::empty({o.batch, L + 1}, torch::kLong);
        auto acc = batch.accessor<int64_t, 2>();
        for (int64_t b = 0; b < o.batch; ++b) {
            const int64_t start = blockAt(step * o.batch + b) * L;
            for (int64_t t = 0; t <= L; ++t)
                acc[b][t] = trainIds[static_cast<size_t>(start + t)];
        }
        batch = batch.to(m.device);
        const torch::Tensor loss =
            m.net->nextTokenLoss(m.net->forwardHidden(batch.narrow(1, 0, L)), batch.narrow(1, 1, L));
        optimizer.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(m.net->parameters(), o.gradClip);
        detail::adamwStep(optimizer);
        ++step;
        tokensSeen += o.batch * L;
        tokensSinceReport += o.batch * L;
        lossAcc += loss.item<double>();
        ++lossCount;
        validatedAtStep = false;
        const double dt = std::chrono::duration<double>(Clock::now() - stepStart).count();
        trainSeconds += dt;
        secondsSinceReport += dt;

        const bool doLog = o.logEvery > 0 && step % o.logEvery == 0;
        const bool doEval = (o.evalEvery > 0 && step % o.evalEvery == 0) || step == totalSteps;
        if (doLog || doEval) {
            TrainProgress p;
            p.step = step;
            p.totalSteps = totalSteps;
            p.loss = lossAcc / static_cast<double>(std::max<int64_t>(1, lossCount));
            p.lr = lr;
            p.tokensPerSecond =
                secondsSinceReport > 0 ? static_cast<double>(tokensSinceReport) / secondsSinceReport : 0;
            p.elapsedSeconds = priorSeconds + seconds();
            const double perStep = trainSeconds / static_cast<double>(step - startStep);
            p.etaSeconds = perStep * static_cast<double>(totalSteps - step);
            result.lastTrainLoss = p.loss;
            if (doEval) {
                validateAndSave(p);
                validatedAtStep = true;
            }
            lossAcc = 0;
            lossCount = 0;
            tokensSinceReport = 0;
            secondsSinceReport = 0;
            lastReport = Clock::now();
            if (!report(p)) {
                reason = "stopped";
                break;
            }
        }
    }
    if (!validatedAtStep) { // stopped between validations: validate now, keep the better weights
        TrainProgress p;
        p.step = step;
        p.totalSteps = totalSteps;
        p.elapsedSeconds = priorSeconds + seconds();
        p.message = "stopping (" + reason + "): validating";
        validateAndSave(p);
        report(p);
    }
    if (bestStep == step || reason == "finished") { // nothing to resume (or outPath has it): an older point is stale
        for (const std::string& f : {resumeModel, resumeOptim, resumeState})
            fs::remove(f);
    } else if (reason != "finished") { // stopped with better weights saved earlier: keep this step too
        saveState(resumeModel, resumeOptim, resumeState);
        TrainProgress p;
        p.step = step;
        p.totalSteps = totalSteps;
        p.message = "saved step " + std::to_string(step) + " to " + resumeModel +
                    " for --resume (the best weights, "
                    "step " +
                    std::to_string(bestStep) + ", stay in " + o.outPath + ")";
        report(p);
        result.resumePath = resumeModel;
    }
    m.net->eval();
    result.steps = step;
    result.tokensSeen = tokensSeen;
    result.bestValidLoss = bestValid;
    result.bestStep = bestStep;
    result.seconds = seconds();
    result.tokensPerSecond =
        trainSeconds > 0 ? static_cast<double>((step - startStep) * o.batch * L) / trainSeconds : 0;
    result.stopReason = reason;
    if (result.summaryJson.empty()) result.summaryJson = m.trainingSummary;
    return result;
}

} // namespace gwb::engine
