// Prompt -> every view updated, with the bundled models in the real MainWindow (offscreen): the
// time from Run to the moment every view has its new data and has painted once (each view is
// grabbed, which paints it whether or not its tab is in front). Two untimed runs come first, so
// the models are loaded and every view built, as in a window that has run before. The Saliency
// view's data (a backward pass through both models) comes with the run's data; the clock stops
// only when the view has it, so no run's work spills into the next. The bundled models have a context of 256 tokens, so
// a 512-token prompt is cut to 256 (the window's own truncation). The split into the worker's job, the saliency and the
// painting is reported too.

#include "common/bundled_models.h"
#include "gui/main_window.h"
#include "gui/saliency_job.h"
#include "runs/trace_job.h"

#include "app_test_util.h"

#include "gwb/views/view.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>

#include <benchmark/benchmark.h>

using namespace gwb::app;

namespace {

/// About `words` words of Austen for the bundled tokenizer: a bundled sample prompt, repeated.
QString austenPrompt(const QString& file, int words) {
    QFile f(QStringLiteral(GWB_SOURCE_DIR "/resources/prompts/") + file);
    QString base = f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).simplified()
                                               : QStringLiteral("It is a truth universally acknowledged.");
    const QStringList w = base.split(QLatin1Char(' '));
    QStringList out;
    for (int i = 0; i < words; ++i)
        out << w[i % w.size()];
    return out.join(QLatin1Char(' '));
}

bool haveBundled() {
    return !findBundledModel(gwb::engine::ModelKind::Grassmann).isEmpty() &&
           !findBundledModel(gwb::engine::ModelKind::Transformer).isEmpty();
}

void BM_PromptToEveryViewUpdated(benchmark::State& state) {
    if (!haveBundled()) {
        state.SkipWithError("bundled models not found");
        return;
    }
    gwb::app::test::ensureApp();
    MainWindowOptions o;
    o.useBundledModels = true;
    o.restoreSettings = false;
    MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    // Words -> tokens: the bundled tokenizer gives about 1.3 pieces per word of Austen. Two
    // prompts take turns, so every run brings new data to every view (nothing is unchanged).
    const int words = static_cast<int>(state.range(0) * 3 / 4);
    const QString prompts[2] = {austenPrompt(QStringLiteral("pride-opening.txt"), words),
                                austenPrompt(QStringLiteral("emma-opening.txt"), words)};
    int turn = 0;
    QSignalSpy done(&w, &MainWindow::runFinished);
    auto* runner = w.findChild<SaliencyRunner*>();
    if (!runner) {
        state.SkipWithError("the window has no saliency runner");
        return;
    }
    QSignalSpy saliencyReady(runner, &SaliencyRunner::ready);
    // One run: the seconds until the data, until the saliency, until every view has painted.
    struct Times {
        double data = 0, saliency = 0, total = 0;
        bool ok = false;
    };
    auto runOnce = [&]() -> Times {
        // The new prompt is shown and laid out before the clock starts, as a typed one would be.
        w.setPrompt(prompts[turn++ % 2]);
        QCoreApplication::processEvents();
        w.repaint();
        Times r;
        QElapsedTimer t;
        t.start();
        done.clear();
        saliencyReady.clear();
        w.run();
        if (!done.wait(120000)) return r;
        r.data = t.nsecsElapsed() * 1e-9;
        if (saliencyReady.isEmpty() && !saliencyReady.wait(120000)) return r;
        r.saliency = t.nsecsElapsed() * 1e-9;
        for (gwb::views::View* v : w.views())
            benchmark::DoNotOptimize(v->grab());
        r.total = t.nsecsElapsed() * 1e-9;
        r.ok = true;
        return r;
    };
    // Untimed warm-up with both prompts: the models load into the window's caches and every view
    // has been built once, as in a window that has run before.
    for (int i = 0; i < 2; ++i)
        if (!runOnce().ok) {
            state.SkipWithError("the warm-up run did not finish");
            return;
        }
    double job = 0, gui = 0, saliency = 0;
    int64_t tokens = 0;
    for (auto _ : state) {
        const Times r = runOnce();
        if (!r.ok) {
            state.SkipWithError("a run, or its saliency, did not finish");
            return;
        }
        state.SetIterationTime(r.total);
        job += r.data;
        saliency += r.saliency - r.data;
        gui += r.total - r.saliency;
        tokens = w.workbenchData().tokenCount();
    }
    state.counters["tokens"] = static_cast<double>(tokens);
    state.counters["job_until_data_s"] = benchmark::Counter(job, benchmark::Counter::kAvgIterations);
    state.counters["saliency_after_data_s"] = benchmark::Counter(saliency, benchmark::Counter::kAvgIterations);
    state.counters["paint_every_view_s"] = benchmark::Counter(gui, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_PromptToEveryViewUpdated)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
