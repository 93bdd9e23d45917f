// gwb import: convert a checkpoint of a public PyTorch re-implementation (.pt/.pth/.safetensors)
// into a .gwb file. The .pt reader never executes the file's pickle (see engine/import.h).

#include "cli/command_registry.h"

#include "gwb/engine/config_io.h"
#include "gwb/engine/import.h"

#include <QCommandLineParser>

#include <nlohmann/json.hpp>

#include <cstdio>

namespace {

int runImport(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Convert a checkpoint trained with a public PyTorch implementation "
                       "(GrassLM, alphaXiv, kanenorman;\n"
                       "Grassmann or Transformer) into a .gwb file. Sizes come from the tensor "
                       "shapes; each layout brings\n"
                       "its own block variant and offset schedule (GrassLM: one offset per layer "
                       "from 1,2,4,8,12,16;\n"
                       "alphaXiv, kanenorman: all six in every layer).\n"
                       "Offsets: \"1,2,4\" = this set in every layer; \"per_layer:1,2,4,8,12,16\" "
                       "= one per layer;\n"
                       "\"1,2;4;8,12\" = one set per layer."));
    p.addHelpOption();
    const QCommandLineOption layout(QStringLiteral("layout"),
                                    QStringLiteral("grasslm, alphaxiv, kanenorman or auto (default)."),
                                    QStringLiteral("NAME"), QStringLiteral("auto"));
    const QCommandLineOption vocab(QStringLiteral("vocab"),
                                   QStringLiteral("WordPiece vocab.txt, or GPT-2 vocab.json (merges.txt beside it)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption merges(QStringLiteral("merges"),
                                    QStringLiteral("GPT-2 merges.txt (default: next to vocab.json)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption offsets(
        QStringLiteral("offsets"), QStringLiteral("Offset schedule overriding the layout's."), QStringLiteral("SPEC"));
    const QCommandLineOption heads(QStringLiteral("heads"),
                                   QStringLiteral("Transformer heads (default: from the checkpoint's args, else 4)."),
                                   QStringLiteral("N"));
    const QCommandLineOption eps(QStringLiteral("plucker-eps"), QStringLiteral("Override the layout's Plücker eps."),
                                 QStringLiteral("EPS"));
    const QCommandLineOption kind(QStringLiteral("kind"),
                                  QStringLiteral("grassmann or transformer: refuse the other kind."),
                                  QStringLiteral("KIND"));
    const QCommandLineOption f16(QStringLiteral("f16"), QStringLiteral("Store weights as float16."));
    p.addOptions({layout, vocab, merges, offsets, heads, eps, kind, f16});
    p.addPositionalArgument(QStringLiteral("IN"), QStringLiteral("Checkpoint: .pt/.pth (torch.save) or .safetensors."));
    p.addPositionalArgument(QStringLiteral("OUT"), QStringLiteral("Output .gwb file (written atomically)."));
    p.process(args);
    try {
        using namespace gwb::engine;
        if (p.positionalArguments().size() != 2) throw std::invalid_argument("give IN and OUT (gwb import --help)");
        ImportOptions o;
        o.layout = layoutFromName(p.value(layout).toStdString());
        o.vocabPath = p.value(vocab).toStdString();
        o.mergesPath = p.value(merges).toStdString();
        o.offsetSchedule = p.value(offsets).toStdString();
        if (p.isSet(heads)) {
            bool ok = false;
            o.nHeads = p.value(heads).toLongLong(&ok);
            if (!ok || *o.nHeads <= 0) throw std::invalid_argument("--heads must be a positive integer");
        }
        if (p.isSet(eps)) {
            bool ok = false;
            o.pluckerEps = p.value(eps).toDouble(&ok);
            if (!ok || *o.pluckerEps <= 0) throw std::invalid_argument("--plucker-eps must be a positive number");
        }
        if (p.isSet(kind)) {
            const QString k = p.value(kind).toLower();
            if (k != QLatin1String("grassmann") && k != QLatin1String("transformer"))
                throw std::invalid_argument("--kind must be grassmann or transformer");
            o.expectedKind = k == QLatin1String("grassmann") ? ModelKind::Grassmann : ModelKind::Transformer;
        }
        const std::string in = p.positionalArguments().at(0).toStdString();
        const std::string out = p.positionalArguments().at(1).toStdString();
        ImportedModel m = importCheckpoint(in, o);
        nlohmann::json summary{
            {"imported_from", in}, {"layout", layoutName(m.report.layout)}, {"format", m.report.format}};
        for (const auto& [key, value] : m.report.metadata)
            summary["checkpoint"][key] = value; // epoch, val_ppl, args.* as the file had them
        m.model.setTrainingSummary(summary.dump());
        m.model.save(out, p.isSet(f16) ? SaveDtype::F16 : SaveDtype::F32);
        std::printf("%s (%s) -> %s\n", in.c_str(), m.report.format.c_str(), out.c_str());
        for (const auto& note : m.report.notes)
            std::printf("  %s\n", note.c_str());
        for (const auto& [key, value] : m.report.metadata)
            std::printf("  %s = %s\n", key.c_str(), value.c_str());
        std::printf("  parameters: %lld\n", static_cast<long long>(m.model.parameterCount()));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb import: %s\n", e.what());
        return 1;
    }
}

} // namespace

GWB_REGISTER_COMMAND("import", "Convert a PyTorch re-implementation's checkpoint (.pt/.safetensors) to .gwb", runImport,
                     false);
