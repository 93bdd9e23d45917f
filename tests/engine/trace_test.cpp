// Tracing: documented shapes, recorded z/g/gate equal to values recomputed from the recorded
// weights, surprisal, the dense-attention limit, truncation, errors, and saliency.

#include "engine_test_util.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>

using namespace gwb::engine;

namespace {

std::vector<int32_t> someIds(int64_t n, int64_t V) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i)
        ids.push_back(int32_t((i * 7 + 3) % V));
    return ids;
}

using Shape = std::vector<int64_t>;

} // namespace

TEST(Trace, GrassmannShapesAndRecomputedValues) {
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    c.norm = NormPlacement::Pre; // mixer input differs from h: checks the right input is used
    const Model m = Model::init(c, 4, nullptr, "cpu");
    const int64_t T = 13, d = c.dModel, r = c.reduced, C = r * (r - 1) / 2;
    TraceOptions o;
    o.keepLogits = true;
    o.lensTopK = 3;
    const TracePtr t = traceIds(m, someIds(T, c.vocabSize), o);
    ASSERT_EQ(t->length(), T);
    EXPECT_EQ(t->droppedTokens, 0);
    EXPECT_TRUE(std::isnan(t->surprisal[0]));
    EXPECT_EQ(t->logits.shape, (Shape{T, c.vocabSize}));
    EXPECT_EQ(t->finalH.shape, (Shape{T, d}));
    EXPECT_EQ(t->lens->topIds.shape, (Shape{c.nLayers + 1, T, 3}));
    EXPECT_EQ(t->lens->topLogProbs.shape, (Shape{c.nLayers + 1, T, 3}));
    // Surprisal from the kept logits.
    for (int64_t s = 1; s < T; ++s) {
        const float* row = t->logits.row(s - 1);
        double mx = row[0], sum = 0;
        for (int64_t v = 0; v < c.vocabSize; ++v)
            mx = std::max<double>(mx, row[v]);
        for (int64_t v = 0; v < c.vocabSize; ++v)
            sum += std::exp(row[v] - mx);
        EXPECT_NEAR(t->surprisal[s], -(row[t->tokens[s].id] - mx - std::log(sum)), 1e-4);
    }
    // Logit lens at the final state = the model's own prediction.
    for (int64_t s = 0; s < T; ++s) {
        const float* row = t->logits.row(s);
        EXPECT_EQ(t->lens->topIds.at3(c.nLayers, s, 0), int32_t(std::max_element(row, row + c.vocabSize) - row));
    }
    ASSERT_EQ(int64_t(t->layers.size()), c.nLayers);
    for (int64_t l = 0; l < c.nLayers; ++l) {
        const LayerTrace& lt = t->layers[l];
        ASSERT_TRUE(lt.grassmann.has_value());
        ASSERT_FALSE(lt.attention.has_value());
        const GrassmannLayerTrace& g = *lt.grassmann;
        EXPECT_EQ(lt.h.shape, (Shape{T, d}));
        EXPECT_EQ(lt.mixerInput.shape, (Shape{T, d}));
        EXPECT_EQ(g.z.shape, (Shape{T, r}));
        EXPECT_EQ(g.g.shape, (Shape{T, d}));
        EXPECT_EQ(g.gate.shape, (Shape{T, d}));
        EXPECT_EQ(g.wRed.shape, (Shape{r, d}));
        EXPECT_EQ(g.bRed.shape, (Shape{r}));
        EXPECT_EQ(g.wPlu.shape, (Shape{d, C}));
        EXPECT_EQ(g.bPlu.shape, (Shape{d}));
        EXPECT_EQ(g.offsets, c.layerOffsets[l]);
        // z = W_red x + b_red on the mixer input; g = W_plu mean(p^) (zero at t = 0).
        for (int64_t s = 0; s < T; ++s) {
            std::vector<double> z(r);
            for (int64_t i = 0; i < r; ++i) {
                double v = g.bRed.data[i];
                for (int64_t k = 0; k < d; ++k)
                    v += double(g.wRed.at2(i, k)) * lt.mixerInput.at2(s, k);
                z[i] = v;
                EXPECT_NEAR(g.z.at2(s, i), v, 1e-4);
            }
            std::vector<double> B(C, 0.0);
            int valid = 0;
            for (int D : g.offsets) {
                if (s - D < 0) continue;
                ++valid;
                std::vector<double> p;
                double nrm = 0;
                for (int64_t i = 0; i < r; ++i)
                    for (int64_t j = i + 1; j < r; ++j) {
                        p.push_back(g.z.at2(s, i) * double(g.z.at2(s - D, j)) -
                                    g.z.at2(s, j) * double(g.z.at2(s - D, i)));
                        nrm += p.back() * p.back();
                    }
                for (int64_t k = 0; k < C; ++k)
                    B[k] += p[k] / std::max(std::sqrt(nrm), c.pluckerEps);
            }
            for (int64_t o2 = 0; o2 < d; ++o2) {
                double v = 0;
                if (valid) {
                    v = g.bPlu.data[o2];
                    for (int64_t k = 0; k < C; ++k)
                        v += double(g.wPlu.at2(o2, k)) * B[k] / valid;
                }
                EXPECT_NEAR(g.g.at2(s, o2), v, 1e-4) << "layer " << l << " t " << s;
                EXPECT_GT(g.gate.at2(s, o2), 0.0f);
                EXPECT_LT(g.gate.at2(s, o2), 1.0f);
            }
        }
    }
}

TEST(Trace, TransformerShapesAndDenseLimit) {
    const ModelConfig c = test::tinyConfig(ModelKind::Transformer);
    const Model m = Model::init(c, 4, nullptr, "cpu");
    const int64_t T = 10, H = c.nHeads, dh = c.dModel / c.nHeads;
    const TracePtr t = traceIds(m, someIds(T, c.vocabSize));
    for (const LayerTrace& lt : t->layers) {
        ASSERT_TRUE(lt.attention.has_value());
        EXPECT_EQ(lt.attention->nHeads, H);
        EXPECT_EQ(lt.attention->q.shape, (Shape{H, T, dh}));
        EXPECT_EQ(lt.attention->k.shape, (Shape{H, T, dh}));
        EXPECT_EQ(lt.attention->attn.shape, (Shape{H, T, T}));
        // Rows recomputed from q and k equal the kept probabilities.
        AttentionLayerTrace sparse = *lt.attention;
        sparse.attn = {};
        for (int64_t h = 0; h < H; ++h)
            for (int64_t s = 0; s < T; ++s) {
                const auto row = attentionRow(sparse, h, s);
                ASSERT_EQ(int64_t(row.size()), s + 1);
                for (int64_t j = 0; j <= s; ++j)
                    EXPECT_NEAR(row[j], lt.attention->attn.at3(h, s, j), 1e-5);
            }
    }
    TraceOptions o;
    o.denseAttentionLimit = T - 1;
    const TracePtr noDense = traceIds(m, someIds(T, c.vocabSize), o);
    for (const LayerTrace& lt : noDense->layers)
        EXPECT_TRUE(lt.attention->attn.empty());
}

TEST(Trace, TruncatesVisiblyAndRejectsBadInput) {
    const ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    const Model m = Model::init(c, 4, nullptr, "cpu");
    const TracePtr t = traceIds(m, someIds(c.maxLen + 5, c.vocabSize));
    EXPECT_EQ(t->length(), c.maxLen);
    EXPECT_EQ(t->droppedTokens, 5);
    TraceOptions o;
    o.maxTokens = 7;
    EXPECT_EQ(traceIds(m, someIds(12, c.vocabSize), o)->droppedTokens, 5);
    EXPECT_THROW(traceIds(m, {}), std::invalid_argument);
    EXPECT_THROW(traceIds(m, {1, 999}), std::invalid_argument);
    EXPECT_THROW(trace(m, "text needs a tokenizer"), std::invalid_argument);
    std::atomic<bool> cancel{true};
    EXPECT_THROW(traceIds(m, someIds(5, c.vocabSize), {}, {}, &cancel), Cancelled);
    EXPECT_THROW(traceIds(m, someIds(5, c.vocabSize), {}, [](int64_t, int64_t) { return false; }), Cancelled);
}

TEST(Trace, SaliencyIsCausalAndMatchesFiniteDifference) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const ModelConfig c = test::tinyConfig(kind);
        const Model m = Model::init(c, 6, nullptr, "cpu");
        const auto ids = someIds(9, c.vocabSize);
        const int64_t pos = 5;
        const int32_t target = 11;
        const std::vector<float> s = saliency(m, ids, pos, target);
        ASSERT_EQ(s.size(), ids.size());
        for (size_t i = pos + 1; i < s.size(); ++i)
            EXPECT_EQ(s[i], 0.0f);
        // sum_s saliency = d/de log p(target) when h0 is scaled by (1 + e).
        auto& net = *m.impl().net;
        torch::NoGradGuard noGrad;
        const torch::Tensor x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end())).view({1, -1});
        const torch::Tensor h0 = net.embed(x).to(torch::kDouble);
        net.to(torch::kDouble);
        auto logp = [&](double e) {
            return torch::log_softmax(net.forwardFromEmbedding(h0 * (1 + e))[0][pos], -1)[target].item<double>();
        };
        const double fd = (logp(1e-5) - logp(-1e-5)) / 2e-5;
        net.to(torch::kFloat);
        double sum = 0;
        for (float v : s)
            sum += v;
        EXPECT_NEAR(sum, fd, 1e-3 * std::max(1.0, std::abs(fd)));
    }
}

TEST(Trace, AContrastsSaliencyIsTheDifferenceOfItsTwoPiecesSaliencies) {
    // Issue 65: saliency of the contrast logit[a] - logit[w] (= log p(a) - log p(w)), the causal
    // tests' metric; gradient x input is linear in the objective.
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const ModelConfig c = test::tinyConfig(kind);
        const Model m = Model::init(c, 6, nullptr, "cpu");
        const auto ids = someIds(9, c.vocabSize);
        const std::vector<float> a = saliency(m, ids, 6, 11), w = saliency(m, ids, 6, 4);
        const std::vector<float> both = saliency(m, ids, 6, 11, 4);
        ASSERT_EQ(both.size(), a.size());
        for (size_t i = 0; i < a.size(); ++i)
            EXPECT_NEAR(both[i], a[i] - w[i], 1e-5 * std::max(1.0f, std::abs(a[i]))) << i;
        EXPECT_THROW(saliency(m, ids, 6, 11, static_cast<int32_t>(c.vocabSize)), std::invalid_argument);
    }
}

// saliency() runs only the prefix up to the position and applies the head to one row; the oracle
// here runs the whole sequence with the T x V head in double precision, entry by entry.
TEST(Trace, SaliencyEqualsTheWholeSequenceGradientPerToken) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const ModelConfig c = test::tinyConfig(kind);
        const Model m = Model::init(c, 8, nullptr, "cpu");
        const auto ids = someIds(12, c.vocabSize);
        auto& net = *m.impl().net;
        for (int64_t pos : {int64_t{0}, int64_t{4}, int64_t{10}, int64_t{11}}) {
            const int32_t target = 3;
            const std::vector<float> s = saliency(m, ids, pos, target);
            ASSERT_EQ(s.size(), ids.size());
            net.to(torch::kDouble);
            net.eval();
            const torch::Tensor x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end())).view({1, -1});
            torch::Tensor h0;
            {
                torch::NoGradGuard noGrad;
                h0 = net.embed(x).to(torch::kDouble);
            }
            h0.requires_grad_(true);
            const torch::Tensor logp = torch::log_softmax(net.forwardFromEmbedding(h0)[0][pos], -1)[target];
            const torch::Tensor want = (torch::autograd::grad({logp}, {h0})[0] * h0).sum(-1)[0].detach();
            net.to(torch::kFloat);
            const double scale = want.abs().max().item<double>();
            for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i) {
                if (i > pos) {
                    EXPECT_EQ(s[static_cast<size_t>(i)], 0.0f) << "token " << i << " after position " << pos;
                    continue;
                }
                EXPECT_NEAR(s[static_cast<size_t>(i)], want[i].item<double>(), 1e-4 * std::max(1.0, scale))
                    << (kind == ModelKind::Grassmann ? "Grassmann" : "Transformer") << ", position " << pos
                    << ", token " << i;
            }
        }
    }
}

TEST(Trace, TextPromptHasSpans) {
    // SentencePiece trained on "the cat sat on the mat and the dog ran <i % 17> times" (checked in).
    const TokenizerPtr tok = test::catTokenizer();
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    c.vocabSize = tok->vocabSize();
    const Model m = Model::init(c, 1, tok, "cpu");
    const std::string prompt = "the cat 🙂 sat";
    const TracePtr t = trace(m, prompt);
    EXPECT_EQ(t->prompt, prompt);
    int64_t covered = 0;
    for (const TraceToken& tk : t->tokens) {
        EXPECT_GE(tk.begin, 0);
        covered += tk.end - tk.begin;
    }
    EXPECT_EQ(covered, int64_t(prompt.size()));
    EXPECT_THROW(trace(m, ""), std::invalid_argument);
}

TEST(Trace, LensRankOfTheActualNextToken) {
    // At the final state the lens is the model's own prediction: the rank of x_{t+1} counts the
    // kept logits above it, and its log-prob is minus the surprisal of x_{t+1}.
    const ModelConfig c = test::tinyConfig(ModelKind::Transformer);
    const Model m = Model::init(c, 9, nullptr, "cpu");
    const int64_t T = 11;
    TraceOptions o;
    o.keepLogits = true;
    o.lensTopK = 4;
    const TracePtr t = traceIds(m, someIds(T, c.vocabSize), o);
    ASSERT_EQ(t->lens->nextRank.shape, (Shape{c.nLayers + 1, T}));
    ASSERT_EQ(t->lens->nextLogProb.shape, (Shape{c.nLayers + 1, T}));
    for (int64_t l = 0; l <= c.nLayers; ++l) {
        EXPECT_EQ(t->lens->nextRank.at2(l, T - 1), -1);
        EXPECT_TRUE(std::isnan(t->lens->nextLogProb.at2(l, T - 1)));
        for (int64_t s = 0; s + 1 < T; ++s) {
            const int32_t r = t->lens->nextRank.at2(l, s);
            EXPECT_GE(r, 0);
            // Consistent with the top-K list: rank k < K means the k-th entry is the next token.
            if (r < 4) {
                EXPECT_EQ(t->lens->topIds.at3(l, s, r), t->tokens[s + 1].id) << l << " " << s;
            }
        }
    }
    for (int64_t s = 0; s + 1 < T; ++s) {
        const float* row = t->logits.row(s);
        const float target = row[t->tokens[s + 1].id];
        const int64_t above = std::count_if(row, row + c.vocabSize, [target](float v) { return v > target; });
        EXPECT_EQ(t->lens->nextRank.at2(c.nLayers, s), above) << s;
        EXPECT_NEAR(t->lens->nextLogProb.at2(c.nLayers, s), -t->surprisal[s + 1], 1e-4) << s;
    }
    // Every top-K id has its display text.
    if (m.tokenizer()) {
        for (int32_t id : t->lens->topIds.data)
            EXPECT_TRUE(t->lens->pieces.count(id)) << id;
    }
}

TEST(Trace, ChunkedHeadEqualsWholeLogitsReference) {
    // Surprisal, kept logits and the logit lens are computed a few rows at a time; they must equal
    // the same quantities from the whole T x V logits of every layer, computed here directly.
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const ModelConfig c = test::tinyConfig(kind);
        const Model m = Model::init(c, 5, nullptr, "cpu");
        const int64_t T = 23, V = c.vocabSize, N = c.nLayers, K = 5;
        const std::vector<int32_t> idv = someIds(T, V);

        // Reference: one forward pass, whole-row log-softmax per layer.
        Model::Impl& impl = m.impl();
        torch::NoGradGuard noGrad;
        const torch::Tensor ids = torch::tensor(std::vector<int64_t>(idv.begin(), idv.end())).view({1, T});
        ForwardCapture cap;
        const torch::Tensor logits = impl.net->forward(ids, &cap)[0]; // T x V
        std::vector<torch::Tensor> lensLogits;
        for (int64_t l = 0; l < N; ++l)
            lensLogits.push_back(impl.net->head(cap.blocks[size_t(l)].h)[0]);
        lensLogits.push_back(logits);

        for (int64_t rows : {int64_t(1), int64_t(4), int64_t(7), int64_t(1000)}) {
            SCOPED_TRACE(std::string(kindName(kind)) + " rows " + std::to_string(rows));
            TraceOptions o;
            o.keepLogits = true;
            o.lensTopK = int(K);
            o.headChunkRows = rows;
            const TracePtr t = traceIds(m, idv, o);
            ASSERT_EQ(t->logits.shape, (Shape{T, V}));
            for (int64_t s = 0; s < T; ++s)
                for (int64_t v = 0; v < V; ++v)
                    ASSERT_NEAR(t->logits.at2(s, v), logits[s][v].item<float>(), 1e-5);
            const torch::Tensor lp = torch::log_softmax(logits, -1);
            EXPECT_TRUE(std::isnan(t->surprisal[0]));
            for (int64_t s = 1; s < T; ++s)
                EXPECT_NEAR(t->surprisal[s], -lp[s - 1][idv[s]].item<float>(), 1e-5) << s;
            for (int64_t l = 0; l <= N; ++l) {
                const torch::Tensor ll = lensLogits[size_t(l)];
                const torch::Tensor llp = torch::log_softmax(ll, -1);
                const auto top = llp.topk(K, -1);
                for (int64_t s = 0; s < T; ++s) {
                    for (int64_t k = 0; k < K; ++k) {
                        EXPECT_EQ(t->lens->topIds.at3(l, s, k), std::get<1>(top)[s][k].item<int64_t>())
                            << l << " " << s;
                        EXPECT_NEAR(t->lens->topLogProbs.at3(l, s, k), std::get<0>(top)[s][k].item<float>(), 1e-5);
                    }
                    if (s + 1 == T) {
                        EXPECT_EQ(t->lens->nextRank.at2(l, s), -1);
                        EXPECT_TRUE(std::isnan(t->lens->nextLogProb.at2(l, s)));
                        continue;
                    }
                    const int64_t above = (ll[s] > ll[s][idv[s + 1]]).sum().item<int64_t>();
                    EXPECT_EQ(t->lens->nextRank.at2(l, s), above) << l << " " << s;
                    EXPECT_NEAR(t->lens->nextLogProb.at2(l, s), llp[s][idv[s + 1]].item<float>(), 1e-5);
                }
            }
        }
    }
}

TEST(Trace, LensOnDemandEqualsTheEagerLens) {
    // The window traces without the lens and computes it when the Lens view is shown
    // (logitLens): the same numbers, bit for bit, as a trace that computed it at once.
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        SCOPED_TRACE(kindName(kind));
        ModelConfig c = test::tinyConfig(kind);
        c.maxLen = 300;
        const Model m = Model::init(c, 6, nullptr, "cpu");
        const std::vector<int32_t> idv = someIds(300, c.vocabSize); // more rows than one head chunk
        TraceOptions eager;
        eager.lensTopK = 4;
        TraceOptions lazy;
        lazy.lensTopK = 0;
        const TracePtr a = traceIds(m, idv, eager), b = traceIds(m, idv, lazy);
        ASSERT_TRUE(a->lens);
        EXPECT_FALSE(b->lens);
        EXPECT_EQ(a->surprisal.size(), b->surprisal.size());
        for (size_t i = 1; i < a->surprisal.size(); ++i)
            ASSERT_EQ(a->surprisal[i], b->surprisal[i]) << i; // the rest of the trace is unchanged
        std::vector<std::pair<int64_t, int64_t>> steps;
        const LensPtr lens = logitLens(m, *b, 4, [&](int64_t done, int64_t total) {
            steps.emplace_back(done, total);
            return true;
        });
        ASSERT_TRUE(lens);
        EXPECT_EQ(lens->topIds.shape, (Shape{c.nLayers + 1, 300, 4}));
        EXPECT_EQ(lens->topIds.data, a->lens->topIds.data);
        EXPECT_EQ(lens->topLogProbs.data, a->lens->topLogProbs.data);
        EXPECT_EQ(lens->nextRank.data, a->lens->nextRank.data);
        ASSERT_EQ(lens->nextLogProb.data.size(), a->lens->nextLogProb.data.size());
        for (size_t i = 0; i < lens->nextLogProb.data.size(); ++i) {
            const float x = lens->nextLogProb.data[i], y = a->lens->nextLogProb.data[i];
            ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << i;
        }
        EXPECT_EQ(lens->pieces, a->lens->pieces);
        ASSERT_FALSE(steps.empty());
        EXPECT_EQ(steps.back(), std::make_pair(c.nLayers + 1, c.nLayers + 1));

        // Cancelled between head passes; refused for K < 1 and for another model's trace.
        std::atomic<bool> stop{true};
        EXPECT_THROW(logitLens(m, *b, 4, {}, &stop), Cancelled);
        EXPECT_THROW(logitLens(m, *b, 4, [](int64_t, int64_t) { return false; }), Cancelled);
        EXPECT_THROW(logitLens(m, *b, 0), std::invalid_argument);
        ModelConfig other = c;
        other.nLayers = c.nLayers + 1;
        if (kind == ModelKind::Grassmann) other.layerOffsets.push_back(other.layerOffsets.back());
        const Model m2 = Model::init(other, 6, nullptr, "cpu");
        EXPECT_THROW(logitLens(m2, *b, 4), std::invalid_argument);
    }
}
