// gwb init: write a freshly initialized model (N(0, 0.02) weights) from a config.

#include "common/command_registry.h"

#include "gwb/engine/config_io.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"

#include <QCommandLineParser>

#include <cstdio>

namespace {

int runInit(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Initialize a model from a config and save it."));
    p.addHelpOption();
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Model config JSON."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption tokenizer(QStringLiteral("tokenizer"), QStringLiteral("Tokenizer to embed (optional)."),
                                       QStringLiteral("TOK"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Random seed (default 0)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output checkpoint (.gwb)."),
                                 QStringLiteral("MODEL"));
    const QCommandLineOption dtype(QStringLiteral("save-dtype"), QStringLiteral("f32 (default) or f16."),
                                   QStringLiteral("DTYPE"), QStringLiteral("f32"));
    p.addOptions({config, tokenizer, seed, out, dtype});
    p.process(args);
    try {
        using namespace gwb::engine;
        if (!p.isSet(config) || !p.isSet(out)) throw std::invalid_argument("--config and --out are required");
        bool ok = false;
        const qulonglong s = p.value(seed).toULongLong(&ok);
        if (!ok) throw std::invalid_argument("--seed must be a non-negative integer");
        const QString dt = p.value(dtype).toLower();
        if (dt != QLatin1String("f32") && dt != QLatin1String("f16"))
            throw std::invalid_argument("--save-dtype must be f32 or f16");
        const ModelConfig c = loadConfigFile(p.value(config).toStdString());
        const TokenizerPtr tok = p.isSet(tokenizer) ? loadTokenizerFile(p.value(tokenizer).toStdString()) : nullptr;
        const Model m = Model::init(c, s, tok, "cpu");
        m.save(p.value(out).toStdString(), dt == QLatin1String("f16") ? SaveDtype::F16 : SaveDtype::F32);
        std::printf("wrote %s (%lld parameters)\n", qPrintable(p.value(out)),
                    static_cast<long long>(m.parameterCount()));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb init: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kInitCommand{"init", "Write a freshly initialized model from a config", runInit, false};
} // namespace gwb::app
