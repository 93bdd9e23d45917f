// Corpus statistics (binning and merge of synthetic data: tests/trace): window plan, equality with per-window traces
// recomputed here, sharding + exact merge, cancel, bad files, NPZ round trip.

#include "engine_test_util.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/corpus_run.h"
#include "gwb/engine/device.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/tracer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>

using namespace gwb::engine;

TEST(CorpusStats, WindowStarts) {
    EXPECT_EQ(windowStarts(10, 4, 4), (std::vector<int64_t>{0, 4, 8}));
    EXPECT_EQ(windowStarts(9, 4, 4), (std::vector<int64_t>{0, 4})); // a 1-token tail is no window
    EXPECT_EQ(windowStarts(8, 4, 4), (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(windowStarts(10, 4, 3), (std::vector<int64_t>{0, 3, 6}));
    EXPECT_EQ(windowStarts(3, 8, 8), (std::vector<int64_t>{0}));
    EXPECT_TRUE(windowStarts(1, 8, 8).empty());
}

namespace {

struct Fixture {
    test::TempDir dir;
    Model g, t;
    std::vector<std::string> files;
    Fixture() {
        // SentencePiece trained on "the cat sat on the mat and the dog ran <i % 17> times" (checked in:
        // no spm_train needed).
        const TokenizerPtr tok = test::catTokenizer();
        ModelConfig gc = test::tinyConfig(ModelKind::Grassmann), tc = test::tinyConfig(ModelKind::Transformer);
        gc.vocabSize = tc.vocabSize = tok->vocabSize();
        g = Model::init(gc, 3, tok, "cpu");
        t = Model::init(tc, 4, tok, "cpu");
        const char* texts[] = {"the dog sat on 3 mats and the cat ran 12 times while the mat sat still\n",
                               "a cat, a dog and a mat: 5 times the cat sat and 7 times the dog ran home\n"};
        for (int i = 0; i < 2; ++i) {
            files.push_back(dir.file("d" + std::to_string(i) + ".txt"));
            std::ofstream f(files.back());
            for (int k = 0; k < 2 + i; ++k)
                f << texts[i];
        }
    }
    CorpusOptions options(int shard = 0, int count = 1) const {
        CorpusOptions o;
        o.files = files;
        o.window = 16;
        o.stride = 12;
        o.shardIndex = shard;
        o.shardCount = count;
        o.lensTopK = 3;
        return o;
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

} // namespace

TEST(CorpusStats, EqualsStatisticsRecomputedFromPerWindowTraces) {
    Fixture& fx = fixture();
    const CorpusStats s = runCorpus(fx.g, &fx.t, fx.options());
    ASSERT_TRUE(s.complete);
    ASSERT_GT(s.windowsTotal, 4);
    // Independent recomputation: windows by hand, one trace per window, plain loops.
    const int64_t L = 2, H = 2;
    std::vector<double> gateSum(L, 0), entSum(L * H, 0), jsSum(L * H, 0);
    std::vector<int64_t> gateN(L, 0), entN(L * H, 0), jsN(L * H, 0), agree(L * H, 0), rank1(3, 0);
    std::vector<int64_t> coherenceBins(50, 0);
    double bits = 0;
    int64_t windows = 0;
    for (const auto& file : fx.files) {
        std::ifstream in(file);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto ids = fx.g.tokenizer()->encodeIds(text);
        for (int64_t start = 0;; start += 12) {
            const int64_t len = std::min<int64_t>(16, static_cast<int64_t>(ids.size()) - start);
            if (len < 2) break;
            ++windows;
            const std::vector<int32_t> w(ids.begin() + start, ids.begin() + start + len);
            TraceOptions to;
            to.lensTopK = 3;
            const TracePtr tg = traceIds(fx.g, w, to), tt = traceIds(fx.t, w, to);
            const TraceAnalysis ag = analyzeTrace(*tg), at = analyzeTrace(*tt);
            for (int64_t l = 0; l < L; ++l)
                for (int64_t k = 0; k < len; ++k) {
                    gateSum[l] += ag.grassmann[l].meanGate[k];
                    ++gateN[l];
                    const float c = ag.grassmann[l].coherence[k];
                    if (std::isfinite(c) && l == 1)
                        ++coherenceBins[std::min<int64_t>(49, static_cast<int64_t>(c * 50))];
                    for (int64_t h = 0; h < H; ++h) {
                        entSum[l * H + h] += at.attention[l].entropy.at2(h, k);
                        ++entN[l * H + h];
                        if (k == 0) continue;
                        const FloatArray inf = influenceMatrix(ag.grassmann[l], len);
                        const RowAgreement r = compareRows(std::vector<float>(inf.row(k), inf.row(k) + k + 1),
                                                           attentionRow(*tt->layers[l].attention, h, k));
                        jsSum[l * H + h] += r.jsDivergence;
                        ++jsN[l * H + h];
                        agree[l * H + h] += r.top1Agrees;
                    }
                }
            for (int64_t k = 1; k < len; ++k) {
                bits += tg->surprisal[k] / std::log(2.0);
                for (int64_t l = 0; l < 3; ++l)
                    rank1[l] += tg->lens->topIds.at3(l, k - 1, 0) == w[k];
            }
            if (start + 16 >= static_cast<int64_t>(ids.size())) break;
        }
    }
    EXPECT_EQ(static_cast<int64_t>(s.windows.size()), windows);
    const StatQuantity& gm = s.quantities.at("model.gate_mean");
    const StatQuantity& co = s.quantities.at("model.coherence");
    const StatQuantity& en = s.quantities.at("baseline.attn_entropy");
    const StatQuantity& js = s.quantities.at("compare.influence_attention_js");
    const StatQuantity& top = s.quantities.at("compare.influence_attention_top1");
    const StatQuantity& lens = s.quantities.at("model.lens_rank");
    for (int64_t l = 0; l < L; ++l) {
        EXPECT_EQ(gm.n[l], gateN[l]);
        EXPECT_NEAR(gm.mean(l), gateSum[l] / gateN[l], 1e-6);
        EXPECT_EQ(lens.counts[l * 6 + 1], rank1[l]); // bin [0.5, 1.5) = rank 1
        for (int64_t h = 0; h < H; ++h) {
            EXPECT_NEAR(en.mean(l * H + h), entSum[l * H + h] / entN[l * H + h], 1e-6);
            EXPECT_EQ(js.n[l * H + h], jsN[l * H + h]);
            EXPECT_NEAR(js.mean(l * H + h), jsSum[l * H + h] / jsN[l * H + h], 1e-6);
            EXPECT_EQ(top.counts[(l * H + h) * 4 + 2], agree[l * H + h]);
        }
    }
    for (int b = 0; b < 50; ++b) // layer 1 of the coherence histogram; bins 0.02 wide
        EXPECT_EQ(co.counts[1 * 52 + 1 + b] + (b == 49 ? co.counts[1 * 52 + 51] : 0), coherenceBins[b]) << b;
    EXPECT_NEAR(s.totals.at("model.bits"), bits, 1e-6 * bits);
    // Position curve: position 0 of gate_mean holds one value per window.
    EXPECT_EQ(gm.posN[0 * gm.positions + 0], windows);
}

TEST(CorpusStats, ShardsCoverEveryWindowOnceAndMergeExactly) {
    Fixture& fx = fixture();
    const CorpusStats one = runCorpus(fx.g, &fx.t, fx.options());
    CorpusStats merged;
    std::vector<int64_t> seen;
    for (int i = 0; i < 3; ++i) {
        const CorpusStats part = runCorpus(fx.g, &fx.t, fx.options(i, 3));
        EXPECT_TRUE(part.complete);
        for (int64_t w : part.windows)
            EXPECT_EQ(w % 3, i);
        seen.insert(seen.end(), part.windows.begin(), part.windows.end());
        // Through the file format, in a shuffled order of shards.
        const std::string path = fx.dir.file("shard" + std::to_string(i) + ".npz");
        part.write(path);
        if (i == 0)
            merged = CorpusStats::read(path);
        else
            merged.merge(CorpusStats::read(path));
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(static_cast<size_t>(one.windowsTotal));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all);
    EXPECT_TRUE(merged.complete);
    EXPECT_EQ(merged.windows, one.windows);
    ASSERT_EQ(merged.quantities.size(), one.quantities.size());
    for (const auto& [name, q] : one.quantities) {
        const StatQuantity& m = merged.quantities.at(name);
        EXPECT_EQ(m.counts, q.counts) << name;
        EXPECT_EQ(m.n, q.n) << name;
        EXPECT_EQ(m.posN, q.posN) << name;
        for (int64_t g = 0; g < q.groups(); ++g)
            if (q.n[g]) {
                EXPECT_NEAR(m.mean(g), q.mean(g), 1e-6) << name;
            }
    }
    for (const auto& [k, v] : one.totals)
        EXPECT_NEAR(merged.totals.at(k), v, 1e-6 * std::max(1.0, std::abs(v))) << k;
    EXPECT_THROW(merged.merge(CorpusStats::read(fx.dir.file("shard1.npz"))), std::invalid_argument);
}

TEST(CorpusStats, CancelLeavesAReadablePartialFile) {
    Fixture& fx = fixture();
    const CorpusStats part =
        runCorpus(fx.g, &fx.t, fx.options(), [](const CorpusProgress& p) { return p.windowsDone < 2; });
    EXPECT_FALSE(part.complete);
    // Stopped when two windows were done; the window whose forward passes had already run (its
    // analyses were in flight on the pipeline's second thread) is finished, not thrown away.
    EXPECT_EQ(part.windows, (std::vector<int64_t>{0, 1, 2}));
    const std::string path = fx.dir.file("partial.npz");
    part.write(path);
    const CorpusStats back = CorpusStats::read(path);
    EXPECT_FALSE(back.complete);
    EXPECT_EQ(back.windows, part.windows);
    EXPECT_EQ(back.windowsPlanned, part.windowsPlanned);
    for (const auto& [name, q] : part.quantities) {
        EXPECT_EQ(back.quantities.at(name).counts, q.counts) << name;
        EXPECT_EQ(back.quantities.at(name).sum, q.sum) << name;
        EXPECT_EQ(back.quantities.at(name).edges, q.edges) << name;
    }
}

TEST(CorpusStats, BadFilesAreSkippedNotFatal) {
    Fixture& fx = fixture();
    const std::string bad = fx.dir.file("bad.txt");
    {
        std::ofstream f(bad, std::ios::binary);
        f << "the cat \xff\xfe sat";
    }
    CorpusOptions o = fx.options();
    o.files = {bad, fx.files[0], fx.dir.file("missing.txt"), fx.files[1]};
    std::vector<std::string> warnings;
    const CorpusStats s =
        runCorpus(fx.g, nullptr, o, {}, nullptr, [&](const std::string& w) { warnings.push_back(w); });
    ASSERT_EQ(s.skipped.size(), 2u);
    EXPECT_EQ(s.skipped[0].file, bad);
    EXPECT_NE(s.skipped[0].reason.find("UTF-8"), std::string::npos);
    EXPECT_EQ(warnings.size(), 2u);
    const CorpusStats ref = runCorpus(fx.g, nullptr, fx.options());
    EXPECT_EQ(s.windows, ref.windows);
    EXPECT_EQ(s.quantities.at("model.gate_mean").counts, ref.quantities.at("model.gate_mean").counts);
    EXPECT_EQ(s.quantities.count("compare.influence_attention_js"), 0u);
    CorpusOptions big = fx.options();
    big.window = 64; // > max_len 24
    EXPECT_THROW(runCorpus(fx.g, nullptr, big), std::invalid_argument);
    big = fx.options(3, 3);
    EXPECT_THROW(runCorpus(fx.g, nullptr, big), std::invalid_argument);
}

TEST(CorpusStats, ForwardThreadsAreRestoredAfterARun) {
    // runCorpus gives its forward passes one thread fewer (the analyses take a core) and must
    // hand the caller's setting back, after a normal run and after a cancelled one.
    Fixture& fx = fixture();
    const int before = threads();
    setThreads(3);
    runCorpus(fx.g, &fx.t, fx.options());
    EXPECT_EQ(threads(), 3);
    runCorpus(fx.g, &fx.t, fx.options(), [](const CorpusProgress& p) { return p.windowsDone < 1; });
    EXPECT_EQ(threads(), 3);
    setThreads(before);
}
