// runCorpus: file -> ids -> windows (sharded) -> trace + analysis of both models -> CorpusStats.

#include "gwb/engine/corpus_run.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/device.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/tracer.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {

std::vector<int64_t> windowStarts(int64_t tokens, int64_t window, int64_t stride) {
    std::vector<int64_t> out;
    for (int64_t s = 0; tokens - s >= 2; s += stride) {
        out.push_back(s);
        if (s + window >= tokens) break;
    }
    return out;
}

const OptionTable<CorpusOptions>& corpusOptions() {
    using O = CorpusOptions;
    static const OptionTable<O> table = {
        integerOption<O>("window", "window", "N", "Tokens per window", 2, kNoMax, &O::window),
        integerOption<O>("stride", "stride", "N", "Tokens between windows", 1, kNoMax, &O::stride),
        integerOption<O>("max_windows", "max-windows", "N", "Only the first N windows of all files; 0 = all", 0, kNoMax,
                         &O::maxWindows),
        shardOption<O>("Cover windows g with g mod n = i; 'gwb stats merge' joins the shards"),
        integerOption<O>("lens_k", "lens-k", "K", "Logit-lens depth; ranks above K count as K+1", 0, kNoMax,
                         &O::lensTopK),
    };
    return table;
}

namespace {

int64_t codePoints(const std::string& s) {
    int64_t n = 0;
    for (unsigned char c : s)
        n += (c & 0xc0) != 0x80;
    return n;
}

/// The file's ids, or an error message (unreadable, not UTF-8, too short).
std::vector<int32_t> fileIds(const Tokenizer& tok, const std::string& path, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = "cannot open";
        return {};
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    try {
        checkUtf8(text);
    } catch (const std::exception& e) {
        error = std::string("not UTF-8: ") + e.what();
        return {};
    }
    std::vector<int32_t> ids = tok.encodeIds(text);
    if (ids.size() < 2) error = "fewer than 2 tokens";
    return ids;
}

void checkOptions(const Model& model, const Model* baseline, const CorpusOptions& o) {
    if (!model.tokenizer()) throw std::invalid_argument("the model has no tokenizer: cannot read text files");
    gwb::engine::checkOptions(corpusOptions(), o);
    if (o.shardCount < 1 || o.shardIndex < 0 || o.shardIndex >= o.shardCount)
        throw std::invalid_argument("shard (--shard i/n) needs 0 <= i < n; got " + std::to_string(o.shardIndex) + "/" +
                                    std::to_string(o.shardCount));
    if (o.files.empty()) throw std::invalid_argument("no data files");
    if (o.window > model.config().maxLen)
        throw std::invalid_argument("--window " + std::to_string(o.window) + " exceeds the model's max_len " +
                                    std::to_string(model.config().maxLen));
    if (baseline) {
        if (o.window > baseline->config().maxLen)
            throw std::invalid_argument("--window " + std::to_string(o.window) + " exceeds the baseline's max_len " +
                                        std::to_string(baseline->config().maxLen));
        if (baseline->config().vocabSize != model.config().vocabSize ||
            (baseline->tokenizer() && baseline->tokenizer()->serialize() != model.tokenizer()->serialize()))
            throw std::invalid_argument("the model and the baseline do not share one tokenizer");
    }
}

} // namespace

CorpusStats runCorpus(const Model& model, const Model* baseline, const CorpusOptions& o,
                      const CorpusProgressFn& progress, const std::atomic<bool>* cancel,
                      const std::function<void(const std::string&)>& warn) {
    checkOptions(model, baseline, o);
    const Tokenizer& tok = *model.tokenizer();
    CorpusStats s;
    s.window = o.window;
    s.stride = o.stride;
    s.maxWindows = o.maxWindows;
    s.shardIndex = o.shardIndex;
    s.shardCount = o.shardCount;
    s.files = o.files;
    s.models["model"] = model.displayName() + " (" + model.path() + ")";
    if (baseline) s.models["baseline"] = baseline->displayName() + " (" + baseline->path() + ")";

    // Pass 1: count windows per file (ids are not kept: memory stays one file's worth).
    std::vector<int64_t> perFile(o.files.size(), 0);
    for (size_t f = 0; f < o.files.size(); ++f) {
        std::string error;
        const auto ids = fileIds(tok, o.files[f], error);
        if (!error.empty()) {
            s.skipped.push_back({o.files[f], error});
            if (warn) warn("skipping '" + o.files[f] + "': " + error);
            continue;
        }
        perFile[f] = static_cast<int64_t>(windowStarts(static_cast<int64_t>(ids.size()), o.window, o.stride).size());
        s.windowsTotal += perFile[f];
    }
    if (o.maxWindows > 0) s.windowsTotal = std::min(s.windowsTotal, o.maxWindows);
    for (int64_t g = 0; g < s.windowsTotal; ++g)
        s.windowsPlanned += g % o.shardCount == o.shardIndex;

    TraceOptions to;
    to.lensTopK = o.lensTopK;
    to.maxTokens = o.window;
    std::vector<int64_t> skip = o.skipWindows;
    std::sort(skip.begin(), skip.end());
    skip.erase(std::unique(skip.begin(), skip.end()), skip.end());
    const int64_t skippedHere = std::count_if(skip.begin(), skip.end(), [&](int64_t g) {
        return g >= 0 && g < s.windowsTotal && g % o.shardCount == o.shardIndex;
    });
    CorpusProgress pr;
    pr.windowsTotal = s.windowsPlanned - skippedHere;
    const auto start = std::chrono::steady_clock::now();
    auto stopped = [&] {
        pr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return (cancel && cancel->load()) || (progress && !progress(pr));
    };
    bool cancelled = stopped();
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    // Pipeline: window w's analyses run on a second thread while the next window's forward passes
    // run here; windows are added to the sums in order, each only once it is finished, so a cancel
    // never leaves half a window in the sums and the file is the same as without the pipeline.
    struct Analysed {
        TraceAnalysis am, ab;
        double seconds = 0;
    };
    struct Pending {
        TracePtr tm, tb;
        std::future<Analysed> analyses;
        int64_t g = 0, chars = 0, tokens = 0;
    };
    // The analyses keep one core busy, so the forward passes get the others: with all of them, the
    // matrix products' idle workers spin against the analysis thread (a 40-window run took 12.0 s
    // with both cores for the forward passes, 8.8 s with one; docs/performance-stats.md).
    const ScopedThreads forwardThreads(std::max(1, threads() - 1));
    std::optional<Pending> pending;
    AnalysisOptions analysis; // every window has the same weights: their read-out planes are computed once
    analysis.cache = makeAnalysisCache();
    auto finish = [&] {
        if (!pending) return;
        Pending p = std::move(*pending);
        pending.reset();
        Analysed a = p.analyses.get();
        pr.analysisSeconds += a.seconds;
        const auto t0 = Clock::now();
        accumulateWindow(s, "model", *p.tm, a.am, p.chars);
        if (p.tb) {
            accumulateWindow(s, "baseline", *p.tb, a.ab, p.chars);
            if (p.tm->isGrassmann() && !p.tb->isGrassmann())
                accumulateComparison(s, *p.tm, a.am, *p.tb);
            else if (p.tb->isGrassmann() && !p.tm->isGrassmann())
                accumulateComparison(s, *p.tb, a.ab, *p.tm);
        }
        pr.accumulateSeconds += since(t0);
        s.windows.push_back(p.g);
        ++pr.windowsDone;
        pr.tokensDone += p.tokens;
    };
    int64_t g0 = 0; // global index of the current file's first window
    for (size_t f = 0; f < o.files.size() && !cancelled && g0 < s.windowsTotal; ++f) {
        if (perFile[f] == 0) continue;
        std::string error;
        const auto ids = fileIds(tok, o.files[f], error);
        const auto starts = windowStarts(static_cast<int64_t>(ids.size()), o.window, o.stride);
        if (!error.empty() || static_cast<int64_t>(starts.size()) != perFile[f])
            throw std::runtime_error("'" + o.files[f] + "' changed while it was being read");
        for (size_t w = 0; w < starts.size() && !cancelled; ++w) {
            const int64_t g = g0 + static_cast<int64_t>(w);
            if (g >= s.windowsTotal) break;
            if (g % o.shardCount != o.shardIndex) continue;
            if (std::binary_search(skip.begin(), skip.end(), g)) continue; // done by the resumed run
            const auto b = ids.begin() + starts[w];
            const std::vector<int32_t> win(
                b, b + std::min<int64_t>(o.window, static_cast<int64_t>(ids.size()) - starts[w]));
            const int64_t chars = codePoints(tok.decode(std::vector<int32_t>(win.begin() + 1, win.end())));
            Pending next;
            try {
                const auto t0 = Clock::now();
                next.tm = traceIds(model, win, to, {}, cancel);
                next.tb = baseline ? traceIds(*baseline, win, to, {}, cancel) : nullptr;
                pr.traceSeconds += since(t0);
            } catch (const Cancelled&) {
                cancelled = true;
                break;
            }
            finish(); // the previous window (its analyses ran during these forward passes)
            next.g = g;
            next.chars = chars;
            next.tokens = static_cast<int64_t>(win.size());
            next.analyses = std::async(std::launch::async, [tm = next.tm, tb = next.tb, analysis] {
                const auto t0 = Clock::now();
                Analysed a;
                a.am = analyzeTrace(*tm, analysis);
                if (tb) a.ab = analyzeTrace(*tb, analysis);
                a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
                return a;
            });
            pending = std::move(next);
            cancelled = stopped();
        }
        g0 += perFile[f];
    }
    finish();
    s.complete = static_cast<int64_t>(s.windows.size()) + skippedHere == s.windowsPlanned;
    if (progress) progress(pr); // final report (phase times); its answer is not read
    return s;
}

} // namespace gwb::engine
