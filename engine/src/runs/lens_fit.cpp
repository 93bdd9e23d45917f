// Tuned and Jacobian lenses (gwb/engine/lens.h): the prompts, the two fits, lens logits and the
// evaluation over held-out text.

#include "gwb/engine/analysis.h"
#include "kernels/linear_kl.h"
#include "runs/tensor_array.h"
#include "gwb/engine/features.h"
#include "gwb/engine/device.h"
#include "gwb/engine/lens.h"
#include "gwb/engine/corpus_run.h"
#include "gwb/engine/tokenizer.h"
#include "formats/file_util.h"
#include "model/model_impl.h"
#include "runtime/cpu_workers.h"
#include "runtime/device_errors.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <mutex>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The prompts of a request, numbered globally: each file cut into windows of `window` tokens
/// (stride = window), or the given ids cut to `window`; the first maxPrompts of them.
std::vector<std::vector<int32_t>> prompts(const Model& model, const std::vector<std::string>& files,
                                          const std::vector<std::vector<int32_t>>& promptIds, int64_t window,
                                          int64_t maxPrompts, const std::function<void(const std::string&)>& warn) {
    std::vector<std::vector<int32_t>> out;
    const auto full = [&] { return maxPrompts > 0 && static_cast<int64_t>(out.size()) >= maxPrompts; };
    if (!files.empty()) {
        if (!model.tokenizer()) throw std::invalid_argument("the model has no tokenizer: cannot read text files");
        for (const std::string& f : files) {
            if (full()) break;
            std::string text;
            try {
                text = readFileBytes(f);
                checkUtf8(text);
            } catch (const std::exception& e) {
                if (warn) warn("skipping '" + f + "': " + e.what());
                continue;
            }
            const std::vector<int32_t> ids = model.tokenizer()->encodeIds(text);
            for (int64_t s : windowStarts(static_cast<int64_t>(ids.size()), window, window)) {
                if (full()) break;
                const auto end = std::min<int64_t>(static_cast<int64_t>(ids.size()), s + window);
                out.emplace_back(ids.begin() + s, ids.begin() + end);
            }
        }
    } else {
        for (const auto& p : promptIds) {
            if (full()) break;
            out.emplace_back(p.begin(), p.begin() + std::min<int64_t>(window, static_cast<int64_t>(p.size())));
        }
    }
    const int64_t V = model.config().vocabSize;
    for (const auto& p : out)
        for (int32_t id : p)
            if (id < 0 || id >= V)
                throw std::invalid_argument("token id " + std::to_string(id) + " outside the vocabulary (" +
                                            std::to_string(V) + ")");
    if (out.empty()) throw std::invalid_argument("no prompts: the text gave no window of at least 2 tokens");
    return out;
}

torch::Tensor windowIds(const std::vector<int32_t>& ids, const torch::Device& device) {
    std::vector<int64_t> v(ids.begin(), ids.end());
    return torch::tensor(v, torch::kLong).view({1, static_cast<int64_t>(v.size())}).to(device);
}

/// Residual states s = 0..N of ids (B x T): the embedding, then every block's output.
std::vector<torch::Tensor> residualStates(LanguageModelImpl& net, const torch::Tensor& ids) {
    std::vector<torch::Tensor> s;
    torch::Tensor h = net.embed(ids);
    s.push_back(h);
    for (const auto& b : net.blocks()) {
        h = b->forward(h, nullptr);
        s.push_back(h);
    }
    return s;
}

torch::Tensor toTensor(const FloatArray& a, const torch::Device& device) {
    return torch::from_blob(const_cast<float*>(a.data.data()), a.shape, torch::kFloat).clone().to(device);
}

/// A lens's maps by residual state, on the model's device.
struct LensMaps {
    LensKind kind = LensKind::Logit;
    std::vector<torch::Tensor> m, b; ///< by state s (undefined: no map there)
    bool has(int s) const { return kind == LensKind::Logit || (s < static_cast<int>(m.size()) && m[s].defined()); }
    torch::Tensor apply(int s, const torch::Tensor& h) const {
        if (kind == LensKind::Logit) return h;
        if (kind == LensKind::Tuned) return h + torch::matmul(h, m[s].t()) + b[s];
        return torch::matmul(h, m[s].t());
    }
};

LensMaps lensMaps(const Lens* lens, int64_t N, const torch::Device& device) {
    LensMaps maps;
    if (!lens) return maps;
    maps.kind = lens->kind;
    maps.m.resize(static_cast<size_t>(N));
    maps.b.resize(static_cast<size_t>(N));
    for (size_t i = 0; i < lens->layers.size(); ++i) {
        const int s = lens->kind == LensKind::Jacobian ? lens->layers[i] + 1 : lens->layers[i];
        if (s < 0 || s >= N) continue;
        maps.m[s] = toTensor(lens->matrix[i], device);
        if (lens->kind == LensKind::Tuned) maps.b[s] = toTensor(lens->bias[i], device);
    }
    return maps;
}

void checkFits(const Model& model, const Lens& lens, const std::string& name) {
    const ModelConfig& c = model.config();
    if (lens.dModel != c.dModel || lens.nLayers != c.nLayers)
        throw std::invalid_argument(name + " was fitted for d_model " + std::to_string(lens.dModel) + " and " +
                                    std::to_string(lens.nLayers) + " layers; this model has d_model " +
                                    std::to_string(c.dModel) + " and " + std::to_string(c.nLayers) + " layers");
}

Lens fitJacobian(const Model& model, const LensFitRequest& r, const LensProgressFn& progress,
                 const std::atomic<bool>* cancel, const Lens* resume,
                 const std::function<void(const std::string&)>& warn) {
    Model::Impl& m = model.impl();
    const int64_t d = m.config.dModel, N = m.config.nLayers;
    const auto all = prompts(model, r.files, r.promptIds, r.window, r.maxPrompts, warn);
    Lens lens;
    lens.kind = LensKind::Jacobian;
    lens.dModel = d;
    lens.nLayers = N;
    for (int l = 0; l + 1 < N; ++l)
        lens.layers.push_back(l);
    std::vector<torch::Tensor> sum;
    for (size_t i = 0; i < lens.layers.size(); ++i)
        sum.push_back(torch::zeros({d, d}, torch::kDouble));
    std::set<int64_t> done;
    if (resume) {
        checkFits(model, *resume, "the lens to resume");
        for (size_t i = 0; i < sum.size(); ++i)
            sum[i] +=
                toTensor(resume->matrix[i], torch::kCPU).to(torch::kDouble) * static_cast<double>(resume->nPrompts);
        lens.nPrompts = resume->nPrompts;
        lens.prompts = resume->prompts;
        done.insert(resume->prompts.begin(), resume->prompts.end());
    }
    std::vector<int64_t> todo;
    for (int64_t g = 0; g < static_cast<int64_t>(all.size()); ++g)
        if (g % r.shardCount == r.shardIndex) {
            ++lens.promptsPlanned;
            if (done.count(g)) continue;
            const auto T = static_cast<int64_t>(all[static_cast<size_t>(g)].size());
            if (T <= r.skipFirst + 1) {
                if (warn)
                    warn("skipping prompt " + std::to_string(g) + ": " + std::to_string(T) + " tokens (need > " +
                         std::to_string(r.skipFirst + 1) + ")");
                continue;
            }
            todo.push_back(g);
        }
    const auto t0 = Clock::now();
    // On the CPU the prompts run side by side, one single-threaded worker a core, each on its own copy
    // of the weights (a model runs one pass at a time): two workers on two cores took about 0.65 of
    // the time of one worker on both. Worker w takes prompts w, w + W, ... in order and keeps its own
    // sums, added in worker order at the end, so a fit on the same number of threads is repeatable.
    const int workers = model.device() == "cpu"
                            ? static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(1, threads())), 1,
                                                                  std::max<size_t>(todo.size(), 1)))
                            : 1;
    std::vector<Model> copies;
    for (int w = 1; w < workers; ++w)
        copies.push_back(Model::fromParameters(model.config(), model.parameters(), model.tokenizer(), model.device()));
    std::vector<std::vector<torch::Tensor>> sums(static_cast<size_t>(workers));
    std::vector<std::vector<int64_t>> fitted(static_cast<size_t>(workers));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
    std::atomic<bool> stop{false};
    std::atomic<int64_t> finished{0};
    auto work = [&](int w) {
        try {
            Model::Impl& mw = w == 0 ? m : copies[static_cast<size_t>(w - 1)].impl();
            std::vector<torch::Tensor>& own = sums[static_cast<size_t>(w)];
            for (size_t i = 0; i < lens.layers.size(); ++i)
                own.push_back(torch::zeros({d, d}, torch::kDouble));
            std::lock_guard<std::mutex> lock(mw.mutex);
            withDeviceErrors("the Jacobian lens", model.device(), [&] {
                mw.net->eval();
                torch::AutoGradMode grad(true);
                const int64_t B = std::min(r.dimBatch, d);
                for (size_t k = static_cast<size_t>(w); k < todo.size(); k += static_cast<size_t>(workers)) {
                    if (stop.load() || (cancel && cancel->load())) break;
                    const int64_t g = todo[k];
                    const auto& p = all[static_cast<size_t>(g)];
                    const auto T = static_cast<int64_t>(p.size());
                    const torch::Tensor ids = windowIds(p, mw.device).expand({B, T});
                    // Root the graph at block 0's output, as the reference does: the weights get no gradient.
                    torch::Tensor h =
                        mw.net->blocks()[0]->forward(mw.net->embed(ids), nullptr).detach().requires_grad_(true);
                    std::vector<torch::Tensor> sources{h};
                    for (int64_t l = 1; l < N; ++l) {
                        h = mw.net->blocks()[static_cast<size_t>(l)]->forward(h, nullptr);
                        if (l + 1 < N) sources.push_back(h);
                    }
                    const int64_t nValid = T - 1 - r.skipFirst;
                    torch::Tensor cot = torch::zeros_like(h);
                    const int64_t passes = (d + B - 1) / B;
                    for (int64_t pass = 0; pass < passes; ++pass) {
                        const int64_t d0 = pass * B, nd = std::min(B, d - d0);
                        cot.zero_();
                        for (int64_t j = 0; j < nd; ++j)
                            cot[j].narrow(0, r.skipFirst, nValid).select(1, d0 + j).fill_(1.0f);
                        const auto grads = torch::autograd::grad({h}, sources, {cot}, pass + 1 < passes);
                        for (size_t i = 0; i < sources.size(); ++i) {
                            const torch::Tensor rows = grads[i].narrow(0, 0, nd).narrow(1, r.skipFirst, nValid).mean(1);
                            own[i].narrow(0, d0, nd) += rows.to(torch::kCPU, torch::kDouble);
                        }
                    }
                    fitted[static_cast<size_t>(w)].push_back(g);
                    const int64_t now = ++finished;
                    // Progress is reported on the caller's thread (worker 0) only.
                    if (w == 0 && progress && !progress({now, static_cast<int64_t>(todo.size()), since(t0), 0}))
                        stop = true;
                }
            });
        } catch (...) {
            errors[static_cast<size_t>(w)] = std::current_exception();
            stop = true;
        }
    };
    detail::runCpuWorkers(workers, work);
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    for (int w = 0; w < workers; ++w) {
        for (size_t i = 0; i < sum.size(); ++i)
            sum[i] += sums[static_cast<size_t>(w)][i];
        lens.nPrompts += static_cast<int64_t>(fitted[static_cast<size_t>(w)].size());
        lens.prompts.insert(lens.prompts.end(), fitted[static_cast<size_t>(w)].begin(),
                            fitted[static_cast<size_t>(w)].end());
    }
    if (progress && workers > 1 && !stop.load() && !(cancel && cancel->load()))
        progress({finished.load(), static_cast<int64_t>(todo.size()), since(t0), 0});
    if (lens.nPrompts == 0)
        throw std::invalid_argument("every prompt was too short: the Jacobian lens needs prompts of more than " +
                                    std::to_string(r.skipFirst + 1) + " tokens (--skip-first " +
                                    std::to_string(r.skipFirst) + ")");
    for (const torch::Tensor& s : sum)
        lens.matrix.push_back(toArray((s / static_cast<double>(lens.nPrompts)).to(torch::kFloat)));
    std::sort(lens.prompts.begin(), lens.prompts.end());
    std::set<int64_t> covered(lens.prompts.begin(), lens.prompts.end());
    lens.complete = true;
    for (int64_t g = 0; g < static_cast<int64_t>(all.size()); ++g)
        if (g % r.shardCount == r.shardIndex && !covered.count(g) &&
            static_cast<int64_t>(all[static_cast<size_t>(g)].size()) > r.skipFirst + 1)
            lens.complete = false;
    lens.seconds = since(t0);
    return lens;
}

Lens fitTuned(const Model& model, const LensFitRequest& r, const LensProgressFn& progress,
              const std::atomic<bool>* cancel, const Lens* resume,
              const std::function<void(const std::string&)>& warn) {
    Model::Impl& m = model.impl();
    const int64_t d = m.config.dModel, N = m.config.nLayers;
    std::vector<std::vector<int32_t>> windows;
    for (auto& p : prompts(model, r.files, r.promptIds, r.window, r.maxPrompts, warn))
        if (static_cast<int64_t>(p.size()) == r.window) windows.push_back(std::move(p));
    if (windows.empty())
        throw std::invalid_argument("the tuned lens needs at least one window of " + std::to_string(r.window) +
                                    " tokens: the text is shorter (try a smaller --window)");
    const int64_t B = std::max<int64_t>(1, r.tokensPerStep / r.window);
    Lens lens;
    lens.kind = LensKind::Tuned;
    lens.dModel = d;
    lens.nLayers = N;
    std::vector<torch::Tensor> A, b, bufA, bufB;
    const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(m.device);
    for (int s = 0; s < N; ++s) {
        lens.layers.push_back(s);
        A.push_back(torch::zeros({d, d}, opts));
        b.push_back(torch::zeros({d}, opts));
        bufA.push_back(torch::zeros({d, d}, opts));
        bufB.push_back(torch::zeros({d}, opts));
    }
    if (resume) {
        checkFits(model, *resume, "the lens to resume");
        for (size_t s = 0; s < A.size(); ++s) {
            A[s] = toTensor(resume->matrix[s], m.device);
            b[s] = toTensor(resume->bias[s], m.device);
            if (resume->momentumMatrix.size() == A.size()) {
                bufA[s] = toTensor(resume->momentumMatrix[s], m.device);
                bufB[s] = toTensor(resume->momentumBias[s], m.device);
            }
        }
        lens.stepsDone = resume->stepsDone;
    }
    for (size_t s = 0; s < A.size(); ++s) {
        A[s].requires_grad_(true);
        b[s].requires_grad_(true);
    }
    const auto t0 = Clock::now();
    std::lock_guard<std::mutex> lock(m.mutex);
    withDeviceErrors("the tuned lens", model.device(), [&] {
        m.net->eval();
        // The model's weights stay frozen: the lens reads detached copies of LN_final and W_U.
        const torch::Tensor E = m.net->tokEmbed->weight.detach();
        const torch::Tensor lnW = m.net->lnFinal->weight.detach(), lnB = m.net->lnFinal->bias.detach();
        const double eps = m.net->lnFinal->options.eps();
        const auto norm = [&](const torch::Tensor& x) { return torch::layer_norm(x, {d}, lnW, lnB, eps); };
        for (int64_t step = lens.stepsDone; step < r.steps; ++step) {
            if (cancel && cancel->load()) break;
            // The windows of a step depend on the seed and the step alone, so a resumed fit reads
            // what an uninterrupted one reads.
            std::mt19937_64 rng(r.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step));
            std::vector<int64_t> flat;
            for (int64_t i = 0; i < B; ++i) {
                const auto& w = windows[static_cast<size_t>(rng() % windows.size())];
                flat.insert(flat.end(), w.begin(), w.end());
            }
            const torch::Tensor ids = torch::tensor(flat, torch::kLong).view({B, r.window}).to(m.device);
            std::vector<torch::Tensor> states;
            torch::Tensor yF;
            {
                torch::NoGradGuard noGrad;
                states = residualStates(*m.net, ids);
                yF = norm(states[static_cast<size_t>(N)].reshape({-1, d}));
            }
            // Each layer's lens output LN_final(h + A h + b) with autograd; the loss
            // sum_s KL(p_final || softmax(y_s W_U^T)) and its gradient by each y_s come from
            // linearKl (no N x V block under autograd), then one backward pass reaches A and b.
            std::vector<torch::Tensor> ys, yd;
            for (int64_t s = 0; s < N; ++s) {
                const torch::Tensor h = states[static_cast<size_t>(s)].reshape({-1, d});
                ys.push_back(norm(h + torch::matmul(h, A[s].t()) + b[s]));
                yd.push_back(ys.back().detach());
            }
            const detail::LinearKl loss = detail::linearKl(yF, yd, E);
            torch::autograd::backward(ys, loss.grad);
            double total = 0;
            for (double kl : loss.kl)
                total += kl;
            torch::NoGradGuard noGrad;
            double norm2 = 0;
            for (int64_t s = 0; s < N; ++s)
                norm2 += A[s].grad().pow(2).sum().item<double>() + b[s].grad().pow(2).sum().item<double>();
            const double coef = r.clip / (std::sqrt(norm2) + 1e-6);
            const double lr = r.lr * (1.0 - static_cast<double>(step) / static_cast<double>(r.steps));
            // SGD as torch.optim.SGD(nesterov=True): g += wd p; buf = mu buf + g; p -= lr (g + mu buf).
            const auto update = [&](torch::Tensor& p, torch::Tensor& buf) {
                torch::Tensor g = p.grad();
                if (coef < 1.0) g = g * coef;
                g = g + r.weightDecay * p;
                buf.mul_(r.momentum).add_(g);
                p.sub_(lr * (g + r.momentum * buf));
                p.grad().zero_();
            };
            for (int64_t s = 0; s < N; ++s) {
                update(A[s], bufA[s]);
                update(b[s], bufB[s]);
            }
            lens.stepsDone = step + 1;
            if (progress && !progress({lens.stepsDone, r.steps, since(t0), total})) break;
        }
    });
    for (int64_t s = 0; s < N; ++s) {
        lens.matrix.push_back(toArray(A[s]));
        lens.bias.push_back(toArray(b[s]));
    }
    lens.complete = lens.stepsDone >= r.steps;
    if (!lens.complete)
        for (int64_t s = 0; s < N; ++s) {
            lens.momentumMatrix.push_back(toArray(bufA[s]));
            lens.momentumBias.push_back(toArray(bufB[s]));
        }
    lens.nPrompts = static_cast<int64_t>(windows.size());
    lens.seconds = since(t0);
    return lens;
}

} // namespace

Lens fitLens(const Model& model, const LensFitRequest& request, const LensProgressFn& progress,
             const std::atomic<bool>* cancel, const Lens* resume, const std::function<void(const std::string&)>& warn) {
    request.validate();
    if (request.window > model.config().maxLen)
        throw std::invalid_argument("--window " + std::to_string(request.window) + " exceeds the model's max_len " +
                                    std::to_string(model.config().maxLen));
    if (request.kind == LensKind::Jacobian && model.config().nLayers < 2)
        throw std::invalid_argument("the Jacobian lens needs a model of at least 2 layers");
    if (resume && resume->kind != request.kind)
        throw std::invalid_argument("the lens to resume is a " + lensKindName(resume->kind) + " lens, not a " +
                                    lensKindName(request.kind) + " lens");
    Lens lens = request.kind == LensKind::Jacobian ? fitJacobian(model, request, progress, cancel, resume, warn)
                                                   : fitTuned(model, request, progress, cancel, resume, warn);
    lens.request = request;
    lens.request.promptIds.clear();
    lens.modelName = model.displayName();
    lens.modelHash = modelWeightsHash(model);
    return lens;
}

FloatArray lensLogits(const Model& model, const std::vector<int32_t>& ids, int state, const Lens* lens) {
    Model::Impl& m = model.impl();
    const int64_t N = m.config.nLayers;
    if (lens) checkFits(model, *lens, "the lens");
    if (ids.empty() || static_cast<int64_t>(ids.size()) > m.config.maxLen)
        throw std::invalid_argument("lens logits need 1 to max_len tokens");
    const LensMaps maps = lensMaps(lens, N, m.device);
    if (state < 0 || state > N || (state < N && !maps.has(state)))
        throw std::invalid_argument("the " + lensKindName(maps.kind) + " lens has no map at residual state " +
                                    std::to_string(state));
    std::lock_guard<std::mutex> lock(m.mutex);
    return withDeviceErrors("lens logits", model.device(), [&] {
        m.net->eval();
        torch::NoGradGuard noGrad;
        const auto states = residualStates(*m.net, windowIds(ids, m.device));
        const torch::Tensor h = states[static_cast<size_t>(state)][0];
        return toArray(m.net->head(state == N ? h : maps.apply(state, h)));
    });
}

LensReadout lensReadout(const Model& model, const std::vector<int32_t>& ids, const Lens* lens,
                        const std::string& folder) {
    Model::Impl& m = model.impl();
    const int64_t N = m.config.nLayers;
    if (lens) checkFits(model, *lens, folder.empty() ? std::string("the lens") : "the lens in '" + folder + "'");
    const auto T = static_cast<int64_t>(ids.size());
    if (T == 0 || T > m.config.maxLen) throw std::invalid_argument("a lens readout needs 1 to max_len tokens");
    for (int32_t id : ids)
        if (id < 0 || id >= m.config.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(id) + " outside the vocabulary");
    LensReadout r;
    r.lens = lensKindName(lens ? lens->kind : LensKind::Logit);
    r.folder = folder;
    r.modelName = model.displayName();
    r.grassmann = m.config.kind == ModelKind::Grassmann;
    r.nLayers = N;
    if (lens) {
        r.fittedOn = lens->modelName;
        r.sameModel = lens->modelHash == modelWeightsHash(model);
        r.complete = lens->complete;
    }
    const LensMaps maps = lensMaps(lens, N, m.device);
    std::vector<int32_t> top(static_cast<size_t>((N + 1) * T), -1), rank(top.size(), -1);
    std::vector<float> prob(top.size(), std::nanf("")), kl(top.size(), std::nanf(""));
    {
        std::lock_guard<std::mutex> lock(m.mutex);
        withDeviceErrors("the lens readout", model.device(), [&] {
            m.net->eval();
            torch::NoGradGuard noGrad;
            const torch::Tensor idsT = windowIds(ids, m.device);
            const auto states = residualStates(*m.net, idsT);
            const torch::Tensor logpF = torch::log_softmax(m.net->head(states[static_cast<size_t>(N)][0]), -1);
            const torch::Tensor pF = logpF.exp();
            for (int64_t s = 0; s <= N; ++s) {
                if (s < N && !maps.has(static_cast<int>(s))) continue;
                const torch::Tensor h = states[static_cast<size_t>(s)][0];
                const torch::Tensor logp =
                    s == N ? logpF : torch::log_softmax(m.net->head(maps.apply(static_cast<int>(s), h)), -1);
                const auto [best, arg] = logp.max(-1);
                const torch::Tensor klS = (pF * (logpF - logp)).sum(-1).to(torch::kCPU, torch::kFloat);
                const torch::Tensor b = best.exp().to(torch::kCPU, torch::kFloat), a = arg.to(torch::kCPU);
                torch::Tensor rk;
                if (T > 1) {
                    const torch::Tensor next = idsT[0].narrow(0, 1, T - 1).unsqueeze(1);
                    const torch::Tensor lp = logp.narrow(0, 0, T - 1);
                    rk = lp.gt(lp.gather(1, next)).sum(-1).to(torch::kCPU);
                }
                for (int64_t t = 0; t < T; ++t) {
                    const auto i = static_cast<size_t>(s * T + t);
                    top[i] = static_cast<int32_t>(a[t].item<int64_t>());
                    prob[i] = b[t].item<float>();
                    kl[i] = s == N ? 0.0f : std::max(0.0f, klS[t].item<float>());
                    if (t + 1 < T) rank[i] = static_cast<int32_t>(rk[t].item<int64_t>());
                }
            }
        });
    }
    r.top1 = IntArray({N + 1, T}, top);
    r.top1Prob = FloatArray({N + 1, T}, prob);
    r.nextRank = IntArray({N + 1, T}, rank);
    r.kl = FloatArray({N + 1, T}, kl);
    if (const auto tok = model.tokenizer())
        for (int32_t id : top)
            if (id >= 0 && id < tok->vocabSize() && !r.pieces.count(id)) r.pieces.emplace(id, tok->pieceText(id));
    return r;
}

LensEvalResult evaluateLenses(const Model& model, const std::vector<Lens>& lenses,
                              const std::vector<std::string>& folders, const LensEvalRequest& request,
                              const LensProgressFn& progress, const std::atomic<bool>* cancel) {
    checkOptions(lensEvalOptions(), request);
    if (request.window > model.config().maxLen)
        throw std::invalid_argument("--window " + std::to_string(request.window) + " exceeds the model's max_len " +
                                    std::to_string(model.config().maxLen));
    Model::Impl& m = model.impl();
    const int64_t N = m.config.nLayers;
    LensEvalResult res;
    res.modelName = model.displayName();
    res.nLayers = N;
    const std::string hash = modelWeightsHash(model);
    std::vector<LensMaps> maps{LensMaps{}};
    res.lenses.push_back("logit");
    res.lensFolders.push_back("");
    res.lensModels.push_back("");
    res.sameModel.push_back(true);
    for (size_t i = 0; i < lenses.size(); ++i) {
        const std::string name = i < folders.size() && !folders[i].empty() ? folders[i] : "lens " + std::to_string(i);
        checkFits(model, lenses[i], name);
        maps.push_back(lensMaps(&lenses[i], N, m.device));
        res.lenses.push_back(lensKindName(lenses[i].kind));
        res.lensFolders.push_back(i < folders.size() ? folders[i] : "");
        res.lensModels.push_back(lenses[i].modelName);
        res.sameModel.push_back(lenses[i].modelHash == hash);
    }
    const auto all = prompts(model, request.files, request.promptIds, request.window, request.maxPrompts, {});
    const auto L = static_cast<int64_t>(maps.size());
    std::vector<double> kl(static_cast<size_t>(L * N)), ce(kl.size()), top1(kl.size()), rank(kl.size());
    double finalCe = 0;
    const auto t0 = Clock::now();
    std::lock_guard<std::mutex> lock(m.mutex);
    withDeviceErrors("the lens evaluation", model.device(), [&] {
        m.net->eval();
        torch::NoGradGuard noGrad;
        for (size_t p = 0; p < all.size(); ++p) {
            if (cancel && cancel->load()) throw Cancelled();
            const auto T = static_cast<int64_t>(all[p].size());
            const auto states = residualStates(*m.net, windowIds(all[p], m.device));
            const torch::Tensor next = windowIds(all[p], m.device)[0].narrow(0, 1, T - 1).unsqueeze(1);
            const torch::Tensor logpF =
                torch::log_softmax(m.net->head(states[static_cast<size_t>(N)][0].narrow(0, 0, T - 1)), -1);
            const torch::Tensor pF = logpF.exp(), topF = logpF.argmax(-1);
            finalCe -= logpF.gather(1, next).sum().item<double>();
            for (int64_t l = 0; l < L; ++l)
                for (int64_t s = 0; s < N; ++s) {
                    if (!maps[l].has(static_cast<int>(s))) continue;
                    const torch::Tensor h = states[static_cast<size_t>(s)][0].narrow(0, 0, T - 1);
                    const torch::Tensor logits = m.net->head(maps[l].apply(static_cast<int>(s), h));
                    const torch::Tensor logp = torch::log_softmax(logits, -1);
                    const size_t k = static_cast<size_t>(l * N + s);
                    kl[k] += (pF * (logpF - logp)).sum().item<double>();
                    ce[k] -= logp.gather(1, next).sum().item<double>();
                    top1[k] += logits.argmax(-1).eq(topF).sum().item<double>();
                    rank[k] += logits.gt(logits.gather(1, next)).sum().item<double>();
                }
            res.positions += T - 1;
            ++res.prompts;
            if (progress && !progress({res.prompts, static_cast<int64_t>(all.size()), since(t0), 0})) throw Cancelled();
        }
    });
    const auto mean = [&](std::vector<double> v) {
        for (size_t k = 0; k < v.size(); ++k)
            v[k] = maps[k / static_cast<size_t>(N)].has(static_cast<int>(k % static_cast<size_t>(N)))
                       ? v[k] / static_cast<double>(res.positions)
                       : std::nan("");
        return Array<double>({L, N}, std::move(v));
    };
    res.kl = mean(kl);
    res.ce = mean(ce);
    res.top1 = mean(top1);
    res.rank = mean(rank);
    res.finalCe = Array<double>({1}, {finalCe / static_cast<double>(res.positions)});
    return res;
}

} // namespace gwb::engine
