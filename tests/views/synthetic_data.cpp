#include "gwb/engine/analysis.h"
#include "synthetic_data.h"

#ifdef GWB_TEST_WIDGETS
#include <QApplication>
#else
#include <QGuiApplication>
#endif

#include <cmath>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace gwb::views::synthetic {
namespace {

using gwb::engine::FloatArray;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

FloatArray randomArray(std::vector<int64_t> shape, std::mt19937& rng, float scale = 1.0f) {
    FloatArray a = FloatArray::zeros(std::move(shape));
    std::normal_distribution<float> n(0.0f, scale);
    for (auto& v : a.data)
        v = n(rng);
    return a;
}

std::vector<gwb::engine::TraceToken> makeTokens(int64_t T, std::string& prompt) {
    static const char* words[] = {"The",  " cat",     " sat", " on",   " the", " mat",  ",",       " and", " the",
                                  " dog", " watched", " it",  " from", " a",   " warm", " corner", "."};
    std::vector<gwb::engine::TraceToken> tokens;
    for (int64_t t = 0; t < T; ++t) {
        gwb::engine::TraceToken tok;
        tok.text = words[t % 17];
        tok.id = static_cast<int32_t>(100 + t);
        tok.begin = static_cast<int64_t>(prompt.size());
        prompt += tok.text;
        tok.end = static_cast<int64_t>(prompt.size());
        tokens.push_back(tok);
    }
    return tokens;
}

FloatArray distanceMatrix(int64_t N, std::mt19937& rng) {
    FloatArray d = FloatArray::zeros({N, N});
    std::uniform_real_distribution<float> u(0.1f, 1.5f);
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = i + 1; j < N; ++j) {
            const float v = u(rng) * static_cast<float>(j - i) / static_cast<float>(N);
            d.data[static_cast<size_t>(i * N + j)] = v;
            d.data[static_cast<size_t>(j * N + i)] = v;
        }
    return d;
}

} // namespace

/// Logit lens over a 40-piece vocabulary: top-K ids, descending log-probs, next-token ranks.
void addSyntheticLens(gwb::engine::Trace& t, std::mt19937& rng) {
    const int64_t L = t.config.nLayers + 1, T = t.length(), K = 5, V = 40;
    auto lens = std::make_shared<gwb::engine::LogitLens>();
    lens->topIds = gwb::engine::IntArray::zeros({L, T, K});
    lens->topLogProbs = FloatArray::zeros({L, T, K});
    lens->nextRank = gwb::engine::IntArray::zeros({L, T});
    lens->nextLogProb = FloatArray::zeros({L, T});
    std::uniform_int_distribution<int32_t> id(0, V - 1);
    std::uniform_real_distribution<float> u(0.05f, 0.9f);
    for (int64_t l = 0; l < L; ++l)
        for (int64_t i = 0; i < T; ++i) {
            float lp = std::log(u(rng));
            for (int64_t k = 0; k < K; ++k) {
                lens->topIds.data[static_cast<size_t>((l * T + i) * K + k)] = (id(rng) + static_cast<int32_t>(k)) % V;
                lens->topLogProbs.data[static_cast<size_t>((l * T + i) * K + k)] = lp;
                lp -= 0.5f;
            }
            lens->nextRank.data[static_cast<size_t>(l * T + i)] = i + 1 < T ? id(rng) : -1;
            lens->nextLogProb.data[static_cast<size_t>(l * T + i)] = i + 1 < T ? -2.0f : kNaN;
        }
    for (int32_t v = 0; v < V; ++v)
        lens->pieces[v] = "w" + std::to_string(v);
    t.lens = lens;
}

void ensureApp() {
    static int argc = 1;
    static char name[] = "views_tests";
    static char* argv[] = {name, nullptr};
    if (!QCoreApplication::instance()) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
#ifdef GWB_TEST_WIDGETS
        new QApplication(argc, argv); // lives for the whole test process
#else
        new QGuiApplication(argc, argv); // the figures need no widgets
#endif
    }
}

WorkbenchData makeWorkbenchData(const SyntheticSizes& s) {
    std::mt19937 rng(1234);
    const int64_t T = s.tokens, N = s.layers, d = s.dModel, r = s.reduced, H = s.heads;
    const int64_t O = static_cast<int64_t>(s.offsets.size());
    const int64_t pairs = r * (r - 1) / 2;

    auto g = std::make_shared<gwb::engine::Trace>();
    g->modelName = "grassmann-synthetic";
    g->config.kind = gwb::engine::ModelKind::Grassmann;
    g->config.nLayers = N;
    g->config.dModel = d;
    g->config.reduced = r;
    g->tokens = makeTokens(T, g->prompt);
    g->surprisal.assign(static_cast<size_t>(T), 0.0f);
    g->surprisal[0] = kNaN;
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    for (int64_t t = 1; t < T; ++t)
        g->surprisal[static_cast<size_t>(t)] = 1.0f + 6.0f * u01(rng);
    auto ga = std::make_shared<gwb::engine::TraceAnalysis>();
    for (int64_t l = 0; l < N; ++l) {
        gwb::engine::LayerTrace lt;
        lt.h = randomArray({T, d}, rng);
        lt.mixerInput = lt.h;
        gwb::engine::GrassmannLayerTrace gl;
        gl.offsets = s.offsets;
        gl.z = randomArray({T, r}, rng);
        gl.g = randomArray({T, d}, rng);
        gl.gate = FloatArray::zeros({T, d});
        for (auto& v : gl.gate.data)
            v = 1.0f / (1.0f + std::exp(-2.0f * (u01(rng) - 0.5f + 0.2f * static_cast<float>(l))));
        gl.wRed = randomArray({r, d}, rng, 0.3f);
        gl.bRed = randomArray({r}, rng, 0.1f);
        gl.wPlu = randomArray({d, pairs}, rng, 0.2f);
        gl.bPlu = randomArray({d}, rng, 0.1f);

        gwb::engine::GrassmannLayerAnalysis a;
        a.offsets = s.offsets;
        a.residual.resize(static_cast<size_t>(T));
        a.planarity.resize(static_cast<size_t>(T));
        a.coherence.resize(static_cast<size_t>(T));
        a.meanGate.resize(static_cast<size_t>(T));
        a.gateAboveHalf.resize(static_cast<size_t>(T));
        a.pairNorm = FloatArray::zeros({T, O});
        a.influence = FloatArray::zeros({T, O});
        a.anglesNext = FloatArray::zeros({T, O, 2});
        for (int64_t t = 0; t < T; ++t) {
            double mean = 0, above = 0;
            for (int64_t c = 0; c < d; ++c) {
                const float v = gl.gate.at2(t, c);
                mean += v;
                above += v > 0.5f ? 1 : 0;
            }
            a.meanGate[static_cast<size_t>(t)] = static_cast<float>(mean / static_cast<double>(d));
            a.gateAboveHalf[static_cast<size_t>(t)] = static_cast<float>(above / static_cast<double>(d));
            const bool any = t >= s.offsets.front();
            a.residual[static_cast<size_t>(t)] = any ? 0.05f * u01(rng) : kNaN;
            a.planarity[static_cast<size_t>(t)] = any ? 0.5f + 0.5f * u01(rng) : kNaN;
            // Deterministic without the generator, so the other fields keep their values; in (0.3, 1].
            a.coherence[static_cast<size_t>(t)] =
                any ? 0.3f + 0.7f * std::abs(std::cos(0.7f * static_cast<float>(t) + static_cast<float>(l))) : kNaN;
            double sum = 0;
            for (int64_t o = 0; o < O; ++o) {
                const bool valid = t - s.offsets[static_cast<size_t>(o)] >= 0;
                a.pairNorm.data[static_cast<size_t>(t * O + o)] = valid ? 0.5f + 2.0f * u01(rng) : kNaN;
                const float inf = valid ? 0.1f + u01(rng) : kNaN;
                a.influence.data[static_cast<size_t>(t * O + o)] = inf;
                if (valid) sum += inf;
                for (int k = 0; k < 2; ++k)
                    a.anglesNext.data[static_cast<size_t>((t * O + o) * 2 + k)] =
                        (valid && l + 1 < N) ? (k == 0 ? 0.3f : 0.9f) * u01(rng) + (k == 0 ? 0.0f : 0.3f) : kNaN;
            }
            for (int64_t o = 0; o < O; ++o) {
                float& v = a.influence.data[static_cast<size_t>(t * O + o)];
                if (!std::isnan(v)) v = static_cast<float>(v / sum);
            }
        }
        lt.grassmann = std::move(gl);
        g->layers.push_back(std::move(lt));
        ga->grassmann.push_back(std::move(a));
    }
    ga->promptSubspaceDistance = distanceMatrix(N, rng);
    ga->readingSubspaceDistance = distanceMatrix(N, rng);
    // Read-out planes from the engine (they depend only on W_plu, z and the offsets).
    const gwb::engine::TraceAnalysis real = gwb::engine::analyzeTrace(*g);
    for (int64_t l = 0; l < N; ++l) {
        auto& dst = ga->grassmann[static_cast<size_t>(l)];
        const auto& src = real.grassmann[static_cast<size_t>(l)];
        dst.readoutResidual = src.readoutResidual;
        dst.readoutPlanarity = src.readoutPlanarity;
        dst.readoutSpectrum = src.readoutSpectrum;
        dst.readoutTopPlane = src.readoutTopPlane;
        dst.readoutContribution = src.readoutContribution;
        dst.readoutAngles = src.readoutAngles;
    }
    addSyntheticLens(*g, rng);

    auto b = std::make_shared<gwb::engine::Trace>();
    b->modelName = "transformer-synthetic";
    b->config.kind = gwb::engine::ModelKind::Transformer;
    b->config.nLayers = N;
    b->config.nHeads = H;
    b->config.dModel = d;
    b->prompt = g->prompt;
    b->tokens = g->tokens;
    b->surprisal = g->surprisal;
    auto ba = std::make_shared<gwb::engine::TraceAnalysis>();
    const int64_t dh = d / H;
    for (int64_t l = 0; l < N; ++l) {
        gwb::engine::LayerTrace lt;
        lt.h = randomArray({T, d}, rng);
        lt.mixerInput = lt.h;
        gwb::engine::AttentionLayerTrace at;
        at.nHeads = H;
        at.q = randomArray({H, T, dh}, rng, 1.5f);
        at.k = randomArray({H, T, dh}, rng, 1.5f);
        at.attn = FloatArray::zeros({H, T, T});
        gwb::engine::AttentionLayerAnalysis aa;
        for (auto* f : {&aa.entropy, &aa.normEntropy, &aa.sparsity, &aa.top1, &aa.effSupport, &aa.transportCost})
            *f = FloatArray::zeros({H, T});
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                std::vector<double> sc(static_cast<size_t>(t + 1));
                double mx = -1e300, sum = 0;
                for (int64_t j = 0; j <= t; ++j) {
                    double dot = 0;
                    for (int64_t c = 0; c < dh; ++c)
                        dot += at.q.at3(h, t, c) * at.k.at3(h, j, c);
                    sc[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(dh));
                    mx = std::max(mx, sc[static_cast<size_t>(j)]);
                }
                std::vector<double> cost(sc.size());
                for (size_t j = 0; j < sc.size(); ++j) {
                    cost[j] = -sc[j] * std::sqrt(static_cast<double>(dh));
                    sc[j] = std::exp(sc[j] - mx);
                    sum += sc[j];
                }
                double H_ = 0, l1 = 0, l2 = 0, top = 0, tc = 0;
                for (size_t j = 0; j < sc.size(); ++j) {
                    const double p = sc[j] / sum;
                    at.attn.data[static_cast<size_t>((h * T + t) * T + static_cast<int64_t>(j))] =
                        static_cast<float>(p);
                    if (p > 0) H_ -= p * std::log(p);
                    l1 += p;
                    l2 += p * p;
                    top = std::max(top, p);
                    tc += p * cost[j];
                }
                const double n = static_cast<double>(t + 1);
                const size_t idx = static_cast<size_t>(h * T + t);
                aa.entropy.data[idx] = static_cast<float>(H_);
                aa.normEntropy.data[idx] = t == 0 ? kNaN : static_cast<float>(H_ / std::log(n));
                aa.sparsity.data[idx] = static_cast<float>((l1 / n) / std::sqrt(l2 / n));
                aa.top1.data[idx] = static_cast<float>(top);
                aa.effSupport.data[idx] = static_cast<float>(std::exp(H_));
                aa.transportCost.data[idx] = static_cast<float>(tc);
            }
        lt.attention = std::move(at);
        b->layers.push_back(std::move(lt));
        ba->attention.push_back(std::move(aa));
    }
    ba->promptSubspaceDistance = distanceMatrix(N, rng);
    addSyntheticLens(*b, rng);

    WorkbenchData data;
    data.grassmann = g;
    data.grassmannAnalysis = ga;
    data.baseline = b;
    data.baselineAnalysis = ba;
    data.corpus = makeCorpusStats(N, s.heads, s.tokens);
    data.corpusPath = "/data/S.npz";
    return data;
}

std::shared_ptr<gwb::engine::CorpusStats> makeCorpusStats(int64_t N, int64_t H, int64_t P) {
    using gwb::engine::linearEdges;
    auto s = std::make_shared<gwb::engine::CorpusStats>();
    s->window = P;
    s->stride = P;
    s->windowsPlanned = 5;
    s->windowsTotal = 5;
    s->windows = {0, 1, 2, 3};
    s->complete = false;
    s->files = {"/data/a.txt", "/data/b.txt"};
    s->skipped = {{"/data/bad.txt", "not valid UTF-8"}};
    s->models = {{"model", "tiny-grassmann (g.gwb)"}, {"baseline", "tiny-transformer (t.gwb)"}};
    s->totals = {{"model.tokens_scored", 4.0 * static_cast<double>(P - 1)},
                 {"baseline.tokens_scored", 4.0 * static_cast<double>(P - 1)}};
    auto& gm = s->quantity("model.gate_mean", "mean over channels of the gate a_t, per token", {"layer"}, {N},
                           linearEdges(0, 1, 50), P);
    auto& ae = s->quantity("baseline.attn_entropy", "entropy -sum a log a (nats) of a query row", {"layer", "head"},
                           {N, H}, linearEdges(0, 8, 80), P);
    auto& pn = s->quantity("model.pair_norm", "||z_t ^ z_{t-D}||", {"layer", "offset"}, {N, 3},
                           gwb::engine::logEdges(1e-3, 1e3, 60), P);
    for (const char* role : {"model", "baseline"}) {
        auto& su = s->quantity(std::string(role) + ".surprisal", "-log p(x_t | x_<t) in nats, tokens t >= 1", {}, {},
                               linearEdges(0, 20, 80), P);
        const double shift = std::string(role) == "model" ? 0.0 : 0.7;
        for (int64_t w = 0; w < 4; ++w)
            for (int64_t t = 1; t < P; ++t)
                su.add(0, 2.0 + shift + 3.0 / static_cast<double>(t) + 0.4 * static_cast<double>((w * 7 + t) % 5), t);
    }
    for (int64_t w = 0; w < 4; ++w)
        for (int64_t t = 0; t < P; ++t)
            for (int64_t l = 0; l < N; ++l) {
                const double u = static_cast<double>((w * 13 + t * 7 + l * 3) % 17) / 17.0;
                gm.add(l, 0.2 + 0.15 * static_cast<double>(l) + 0.3 * u, t);
                for (int64_t h = 0; h < H; ++h)
                    ae.add(l * H + h, 0.5 + 0.2 * static_cast<double>(h) + std::log1p(static_cast<double>(t)) * u, t);
                for (int64_t k = 0; k < 3; ++k)
                    pn.add(l * 3 + k, std::pow(10.0, -1.0 + 0.5 * static_cast<double>(k) + u), t);
            }
    return s;
}

PatchingData makePatchingData(const WorkbenchData& data) {
    PatchingData d;
    d.inputs.clean = data.prompt();
    d.inputs.corrupt = "a corrupted prompt";
    d.inputs.answer = "she";
    d.inputs.wrong = "he";
    d.inputs.site = "resid";
    d.inputs.mode = "patch";
    d.answerPiece = "\u2581she";
    d.wrongPiece = "\u2581he";
    const auto primary = data.primary();
    const int64_t T = primary ? primary->length() : 8;
    d.metricPosition = T - 1;
    d.cleanTokens = primary ? stdList(tokenLabels(*primary)) : std::vector<std::string>();
    auto grid = [&](const QString& model, int64_t layers, double phase) {
        PatchingGrid g;
        g.model = model.toStdString();
        g.modelName = model.toLower().toStdString();
        g.site = "resid";
        g.rows = layers + 1;
        g.cols = T;
        for (int64_t r = 0; r < g.rows; ++r)
            g.rowLabels.push_back((QStringLiteral("h^%1").arg(r)).toStdString());
        for (int64_t c = 0; c < T; ++c)
            g.colLabels.push_back(
                ((primary ? tokenLabels(*primary).value(static_cast<int>(c)) : QString::number(c))).toStdString());
        g.rowTitle = "block input";
        g.colTitle = "position";
        g.hasMetric = true;
        g.cleanMetric = 2.0;
        g.corruptMetric = -1.0;
        g.effectDefined = true;
        g.defined.assign(static_cast<size_t>(g.rows * g.cols), 1);
        for (int64_t r = 0; r < g.rows; ++r)
            for (int64_t c = 0; c < g.cols; ++c) {
                const double e =
                    0.3 + 0.9 * std::sin(phase + 0.7 * static_cast<double>(r) + 1.3 * static_cast<double>(c));
                g.effect.push_back(std::clamp(e, -0.6, 1.2));
                g.metric.push_back(-1.0 + 3.0 * g.effect.back());
            }
        return g;
    };
    d.grassmann = grid(QStringLiteral("Grassmann"),
                       data.grassmann ? static_cast<int64_t>(data.grassmann->layers.size()) : 3, 0.1);
    d.transformer = grid(QStringLiteral("Transformer"),
                         data.baseline ? static_cast<int64_t>(data.baseline->layers.size()) : 3, 0.9);
    if (d.grassmann.rows > 1 && d.grassmann.cols > 2) {
        const size_t i = static_cast<size_t>(1 * d.grassmann.cols + 2);
        d.grassmann.defined[i] = 0;
        d.grassmann.metric[i] = std::nan("");
        d.grassmann.effect[i] = std::nan("");
    }
    return d;
}

PathsData makePathsData(const WorkbenchData& data) {
    PathsData d;
    d.inputs.clean = data.prompt();
    d.inputs.corrupt = "a corrupted prompt";
    d.inputs.answer = "she";
    d.inputs.wrong = "he";
    d.answerPiece = "\u2581she";
    d.wrongPiece = "\u2581he";
    d.metricPosition = data.primary() ? data.primary()->length() - 1 : 7;
    auto grid = [&](const QString& model, int layers, const QStringList& kinds, double phase) {
        PathsGrid g;
        g.model = model.toStdString();
        g.modelName = model.toLower().toStdString();
        g.receivers.push_back((QStringLiteral("logits")).toStdString());
        for (int M = 1; M <= layers; ++M)
            g.receivers.push_back((QStringLiteral("resid.%1").arg(M)).toStdString());
        for (int l = 0; l < layers; ++l)
            for (const QString& k : kinds) {
                g.senders.push_back((QStringLiteral("%1.%2").arg(k).arg(l)).toStdString());
                g.senderLayers.push_back(l);
            }
        g.cleanMetric = 2.0;
        g.corruptMetric = -1.0;
        g.effectDefined = true;
        for (int64_t r = 0; r < g.rows(); ++r)
            for (int64_t c = 0; c < g.cols(); ++c) {
                const bool defined = c == 0 || c > g.senderLayers[static_cast<size_t>(r)];
                const double e = defined ? 0.5 * std::sin(phase + 0.9 * double(r) + 1.7 * double(c)) : std::nan("");
                g.effect.push_back(e);
                g.metric.push_back(-1.0 + 3.0 * e);
            }
        return g;
    };
    const int gl = data.grassmann ? static_cast<int>(data.grassmann->layers.size()) : 3;
    const int tl = data.baseline ? static_cast<int>(data.baseline->layers.size()) : 3;
    d.grassmann =
        grid(QStringLiteral("Grassmann"), gl,
             {QStringLiteral("offset.x"), QStringLiteral("mixer"), QStringLiteral("gate"), QStringLiteral("ffn")}, 0.2);
    d.transformer = grid(QStringLiteral("Transformer"), tl,
                         {QStringLiteral("head.x"), QStringLiteral("mixer"), QStringLiteral("ffn")}, 0.7);
    return d;
}

FeatureDataPtr makeFeatureData(const WorkbenchData& data, bool crosscoder) {
    auto f = std::make_shared<FeatureData>();
    f->path = "/tmp/sae-resid1";
    f->site = "resid.1";
    f->architecture = "topk";
    f->modelName = "synthetic-grassmann";
    f->dSae = 48;
    f->crosscoder = crosscoder;
    if (crosscoder) {
        f->secondSite = "resid.1";
        f->secondModelName = "synthetic-transformer";
        for (int64_t j = 0; j < f->dSae; ++j)
            f->relativeNorms.push_back(static_cast<double>(j % 12) / 11.0);
    }
    const int64_t T = data.tokenCount();
    f->perToken.resize(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < 5; ++k)
            f->perToken[static_cast<size_t>(t)].push_back(
                {(t * 7 + k * 11) % f->dSae, 3.0f - 0.5f * static_cast<float>(k)});
    return f;
}

FeatureDashboard makeFeatureDashboard(const FeatureData& f, int64_t feature) {
    FeatureDashboard d;
    d.feature = feature;
    d.name = f.featureName(feature);
    d.rows = 1000;
    d.fired = 120;
    d.maxActivation = 4.0;
    d.corpus = "emma.txt (first 64 windows)";
    for (int c = 0; c < 3; ++c) {
        FeatureDashboard::Context ctx;
        ctx.pieces = {"\u2581It", "\u2581is", "\u2581a", "\u2581truth"};
        ctx.activations = {0.0f, 1.0f, 4.0f - static_cast<float>(c), 0.5f};
        ctx.begin = 10;
        ctx.position = 12;
        ctx.activation = ctx.activations[2];
        d.top.push_back(ctx);
    }
    for (int b = 0; b <= 40; ++b)
        d.histogramEdges.push_back(4.0 * b / 40);
    for (int b = 0; b < 40; ++b)
        d.histogramCounts.push_back(40 - b);
    d.promoted = {{"\u2581wife", 7, 0.3f}, {"\u2581man", 8, 0.2f}};
    d.suppressed = {{",", 9, -0.2f}};
    d.readingShare = 0.4;
    d.readingLayer = 1;
    if (f.crosscoder) d.relativeNorm = f.relativeNorms[static_cast<size_t>(feature)];
    return d;
}

GraphPairPtr makeGraphPair(const WorkbenchData& data) {
    auto pair = std::make_shared<gwb::engine::GraphPair>();
    for (int m = 0; m < 2; ++m) {
        const TracePtr& tr = m == 0 ? data.grassmann : data.baseline;
        if (!tr) continue;
        gwb::engine::AttributionGraph& g = pair->graphs[m];
        using gwb::engine::GraphNode;
        using gwb::engine::GraphNodeKind;
        const int64_t T = tr->length();
        const int L = 3;
        g.modelName = tr->modelName;
        g.architecture = m == 0 ? "grassmann" : "transformer";
        g.layers = L;
        for (const auto& t : tr->tokens) {
            g.ids.push_back(t.id);
            g.pieces.push_back(t.text);
        }
        for (int l = 0; l < L; ++l) {
            std::vector<std::string> units;
            for (int u : {1, 2, 4})
                units.push_back((m == 0 ? "offset." : "head.") + std::to_string(l) + "." +
                                std::to_string(m == 0 ? u : u / 2));
            g.units.push_back(units);
        }
        // Two features a block at the last three positions, the errors, the tokens, two logits.
        for (int l = 0; l < L; ++l)
            for (int64_t t = T - 3; t < T; ++t)
                for (int f = 0; f < 2; ++f)
                    g.nodes.push_back(GraphNode{GraphNodeKind::Feature, l, t, 10 * l + f, 1.0 + 0.3 * f, 0, ""});
        g.features = static_cast<int64_t>(g.nodes.size());
        g.activeFeatures = g.features;
        for (int l = 0; l < L; ++l)
            for (int64_t t = 0; t < T; ++t)
                g.nodes.push_back(GraphNode{GraphNodeKind::Error, l, t, -1, 0.2, 0, ""});
        g.errors = L * T;
        for (int64_t t = 0; t < T; ++t)
            g.nodes.push_back(GraphNode{GraphNodeKind::Token, -1, t, tr->tokens[static_cast<size_t>(t)].id, 1.0, 0,
                                        tr->tokens[static_cast<size_t>(t)].text});
        g.tokens = T;
        g.nodes.push_back(GraphNode{GraphNodeKind::Logit, L, T - 1, 3, 2.0, 0.6, "the"});
        g.nodes.push_back(GraphNode{GraphNodeKind::Logit, L, T - 1, 4, 1.5, 0.3, "a"});
        g.logits = 2;
        const int64_t n = g.nodeCount();
        for (int64_t i = 0; i < g.features; ++i)
            g.rowNodes.push_back(i);
        g.rowNodes.push_back(n - 2);
        g.rowNodes.push_back(n - 1);
        g.rows = gwb::engine::FloatArray::zeros({static_cast<int64_t>(g.rowNodes.size()), n});
        for (size_t r = 0; r < g.rowNodes.size(); ++r) {
            const GraphNode& target = g.nodes[static_cast<size_t>(g.rowNodes[r])];
            for (int64_t j = 0; j < n; ++j) {
                const GraphNode& s = g.nodes[static_cast<size_t>(j)];
                const int sl = s.kind == GraphNodeKind::Token ? -1 : s.layer;
                if (s.kind == GraphNodeKind::Logit || sl >= target.layer || s.position > target.position) continue;
                g.rows.data[r * static_cast<size_t>(n) + static_cast<size_t>(j)] =
                    static_cast<float>(std::sin(0.7 * static_cast<double>(j) + static_cast<double>(r)) /
                                       (1.0 + static_cast<double>(target.position - s.position)));
            }
            g.bias.push_back(0.0);
            g.completeness.push_back(0.0);
        }
        g.scores = gwb::engine::graphScores(g);
        pair->pruning[m] = gwb::engine::pruneGraph(g, 0.8, 0.9);
        // The top logit's kept edges split across the first block's units.
        const size_t rTop = g.rowNodes.size() - 2;
        for (int64_t j = 0; j < n; ++j)
            if (pair->pruning[m].edgeKept[rTop * static_cast<size_t>(n) + static_cast<size_t>(j)]) {
                const double w = g.edge(n - 2, j);
                g.loadings.push_back(gwb::engine::EdgeLoading{n - 2, j, 0, 0.25 * w, {0.5 * w, 0.25 * w, 0.0}});
            }
        pair->ran[m] = true;
    }
    return pair;
}

SaliencyResult makeSaliency(const WorkbenchData& data, int token) {
    SaliencyResult r;
    r.token = token;
    for (auto [tr, out] : {std::pair{data.grassmann, &r.grassmann}, std::pair{data.baseline, &r.baseline}})
        for (int64_t j = 0; tr && j < tr->length(); ++j)
            out->push_back(j <= token ? std::sin(0.9f * static_cast<float>(j) + 0.3f) : 0.0f);
    return r;
}

void feedComputed(Figure& figure, const WorkbenchData& data, int token) {
    if (auto* ff = dynamic_cast<FeaturesFigure*>(&figure)) {
        const FeatureDataPtr f = makeFeatureData(data, false);
        ff->setFeatures(f);
        const int64_t chosen = f->perToken[static_cast<size_t>(token)].front().first;
        ff->chooseFeature(chosen);
        ff->setDashboard(makeFeatureDashboard(*f, chosen));
    }
    if (auto* sf = dynamic_cast<SaliencyFigure*>(&figure)) sf->setSaliency(makeSaliency(data, token));
    if (auto* pf = dynamic_cast<PatchingFigure*>(&figure)) pf->setResult(makePatchingData(data));
    if (auto* pf = dynamic_cast<PathsFigure*>(&figure)) pf->setResult(makePathsData(data));
    if (auto* gf = dynamic_cast<GraphFigure*>(&figure)) gf->setGraphs(makeGraphPair(data));
}

} // namespace gwb::views::synthetic
