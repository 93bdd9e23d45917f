// gwb train: train a model from a config (or continue one) on text files.

#include "common/command_registry.h"
#include "cli/stop_signals.h"

#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/train.h"

#include <QCommandLineParser>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>

namespace {

std::atomic<bool> g_stop{false};

std::string duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = std::lround(s);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else
        std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    return buf;
}

std::vector<std::string> stdList(const QStringList& l) {
    std::vector<std::string> out;
    for (const QString& s : l)
        out.push_back(s.toStdString());
    return out;
}

int runTrain(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Train a Grassmann or Transformer language model on UTF-8 text files.\n"
                       "Keeps the best checkpoint (by validation loss) at --out, with OUT.optim and OUT.state.json\n"
                       "for --resume. Ctrl-C or SIGTERM stops cleanly: validates, keeps the best weights, saves the\n"
                       "last step's for --resume (OUT.resume.gwb) and exits with 130 or 143."));
    p.addHelpOption();
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Model config JSON (new model)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption tokenizer(QStringLiteral("tokenizer"),
                                       QStringLiteral("Tokenizer (.model SentencePiece or vocab.txt)."),
                                       QStringLiteral("TOK"));
    const QCommandLineOption trainF(QStringLiteral("train"), QStringLiteral("Training text file (repeat for several)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption validF(
        QStringLiteral("valid"), QStringLiteral("Validation text file (repeat for several)."), QStringLiteral("FILE"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output checkpoint (.gwb)."),
                                 QStringLiteral("MODEL"));
    const QCommandLineOption steps(QStringLiteral("steps"), QStringLiteral("Optimizer steps."), QStringLiteral("N"));
    const QCommandLineOption epochs(QStringLiteral("epochs"),
                                    QStringLiteral("Passes over the training data (if no --steps)."),
                                    QStringLiteral("N"));
    const QCommandLineOption batch(QStringLiteral("batch"), QStringLiteral("Sequences per step (default 16)."),
                                   QStringLiteral("B"), QStringLiteral("16"));
    const QCommandLineOption lr(QStringLiteral("lr"), QStringLiteral("Peak learning rate (default 1e-3)."),
                                QStringLiteral("X"), QStringLiteral("1e-3"));
    const QCommandLineOption warmup(QStringLiteral("warmup"), QStringLiteral("Warm-up steps (default 200)."),
                                    QStringLiteral("N"), QStringLiteral("200"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Random seed (default 0)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption evalEvery(QStringLiteral("eval-every"),
                                       QStringLiteral("Steps between validations (default 500)."), QStringLiteral("N"),
                                       QStringLiteral("500"));
    const QCommandLineOption evalBlocks(QStringLiteral("eval-max-blocks"),
                                        QStringLiteral("Validation blocks per evaluation (default all)."),
                                        QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption threads = gwb::app::threadsOption();
    const QCommandLineOption timeLimit(QStringLiteral("time-limit"), QStringLiteral("Stop after this many minutes."),
                                       QStringLiteral("MINUTES"), QStringLiteral("0"));
    const QCommandLineOption resume(QStringLiteral("resume"),
                                    QStringLiteral("Continue from --out and its optimizer state."));
    const QCommandLineOption dtype(QStringLiteral("save-dtype"), QStringLiteral("f32 (default) or f16."),
                                   QStringLiteral("DTYPE"), QStringLiteral("f32"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption logEvery(QStringLiteral("log-every"),
                                      QStringLiteral("Steps between progress lines (default 10)."), QStringLiteral("N"),
                                      QStringLiteral("10"));
    const QCommandLineOption cacheDir(QStringLiteral("cache-dir"),
                                      QStringLiteral("Token cache folder (default OUT.cache)."), QStringLiteral("DIR"));
    p.addOptions({config, tokenizer, trainF,     validF,  out,       steps,  epochs, batch,  lr,       warmup,
                  seed,   evalEvery, evalBlocks, threads, timeLimit, resume, dtype,  device, logEvery, cacheDir});
    p.process(args);

    auto need = [&](const QCommandLineOption& o) {
        if (!p.isSet(o)) throw std::invalid_argument("--" + o.names().first().toStdString() + " is required");
        return p.value(o).toStdString();
    };
    auto number = [&](const QCommandLineOption& o) {
        bool ok = false;
        const double v = p.value(o).toDouble(&ok);
        if (!ok) throw std::invalid_argument("--" + o.names().first().toStdString() + " must be a number");
        return v;
    };
    try {
        using namespace gwb::engine;
        setThreads(static_cast<int>(number(threads)));
        TrainOptions o;
        o.outPath = need(out);
        o.trainFiles = stdList(p.values(trainF));
        o.validFiles = stdList(p.values(validF));
        o.steps = p.isSet(steps) ? static_cast<int64_t>(number(steps)) : 0;
        o.epochs = p.isSet(epochs) ? number(epochs) : 0;
        if (o.steps <= 0 && o.epochs <= 0) throw std::invalid_argument("give --steps N or --epochs N");
        o.batch = static_cast<int64_t>(number(batch));
        o.lr = number(lr);
        o.warmup = static_cast<int64_t>(number(warmup));
        o.seed = static_cast<uint64_t>(number(seed));
        o.evalEvery = static_cast<int64_t>(number(evalEvery));
        o.evalMaxBlocks = static_cast<int64_t>(number(evalBlocks));
        o.timeLimitMinutes = number(timeLimit);
        o.logEvery = static_cast<int64_t>(number(logEvery));
        o.resume = p.isSet(resume);
        o.cacheDir = p.value(cacheDir).toStdString();
        const QString dt = p.value(dtype).toLower();
        if (dt != QLatin1String("f32") && dt != QLatin1String("f16"))
            throw std::invalid_argument("--save-dtype must be f32 or f16");
        o.saveDtype = dt == QLatin1String("f16") ? SaveDtype::F16 : SaveDtype::F32;

        const TokenizerPtr tok = loadTokenizerFile(need(tokenizer));
        ModelConfig cfg = loadConfigFile(need(config));
        if (cfg.vocabSize != tok->vocabSize())
            throw std::invalid_argument("config vocab_size " + std::to_string(cfg.vocabSize) +
                                        " differs from the tokenizer's " + std::to_string(tok->vocabSize()) +
                                        " pieces");
        Model model = Model::init(cfg, o.seed, tok, p.value(device).toStdString());
        std::fprintf(stderr, "%s", model.summary().c_str());

        g_stop = false;
        const gwb::app::StopSignals signals(g_stop); // Ctrl-C or SIGTERM: validate, save, exit 130/143
        const TrainResult r = train(model, o, &g_stop, [](const TrainProgress& pr) {
            if (!pr.message.empty()) std::fprintf(stderr, "%s\n", pr.message.c_str());
            if (pr.step > 0 && pr.loss > 0)
                std::fprintf(stderr, "step %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  elapsed %s  ETA %s\n",
                             static_cast<long long>(pr.step), static_cast<long long>(pr.totalSteps), pr.loss, pr.lr,
                             pr.tokensPerSecond, duration(pr.elapsedSeconds).c_str(), duration(pr.etaSeconds).c_str());
            if (pr.validated)
                std::fprintf(stderr, "  validation loss %.4f  perplexity %.2f%s\n", pr.validLoss,
                             std::exp(pr.validLoss), pr.saved ? "  (best: saved)" : "");
            std::fflush(stderr);
            return true;
        });
        std::printf("stopped: %s after %lld steps (%lld tokens, %.0f tok/s, %s)\n", r.stopReason.c_str(),
                    static_cast<long long>(r.steps), static_cast<long long>(r.tokensSeen), r.tokensPerSecond,
                    duration(r.seconds).c_str());
        std::printf("best validation loss %.4f (perplexity %.2f) at step %lld, saved to %s\n", r.bestValidLoss,
                    std::exp(r.bestValidLoss), static_cast<long long>(r.bestStep), o.outPath.c_str());
        if (!r.resumePath.empty())
            std::printf("the last step's weights are in %s: --resume continues from step %lld\n", r.resumePath.c_str(),
                        static_cast<long long>(r.steps));
        if (gwb::app::StopSignals::received())
            std::printf("incomplete: stopped by %s\n", gwb::app::StopSignals::name());
        return gwb::app::StopSignals::exitCode(0);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb train: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kTrainCommand{"train", "Train a model on text files", runTrain, false};
} // namespace gwb::app
