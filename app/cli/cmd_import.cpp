// gwb import: convert a checkpoint of a public PyTorch re-implementation (.pt/.pth/.safetensors)
// into a .gwb file. The .pt reader never executes the file's pickle (see engine/import.h).

#include "common/command_registry.h"

#include "gwb/engine/config_io.h"
#include "gwb/engine/import.h"

#include <QCommandLineParser>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace {

int runImport(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Convert a checkpoint trained with a public PyTorch implementation "
                       "(GrassLM, alphaXiv, kanenorman, or a layout file;\n"
                       "Grassmann or Transformer) into a .gwb file. Sizes come from the tensor "
                       "shapes; each layout brings\n"
                       "its own block variant and offset schedule (GrassLM: one offset per layer "
                       "from 1,2,4,8,12,16;\n"
                       "alphaXiv, kanenorman: all six in every layer). A config found with the checkpoint\n"
                       "(args/config in the .pt, config.json beside it) supplies offsets and flags; the\n"
                       "options below override it.\n"
                       "Offsets: \"1,2,4\" = this set in every layer; \"per_layer:1,2,4,8,12,16\" "
                       "= one per layer;\n"
                       "\"1,2;4;8,12\" = one set per layer."));
    p.addHelpOption();
    const QCommandLineOption layout(QStringLiteral("layout"),
                                    QStringLiteral("A built-in layout (gwb import --list-layouts) or auto (default)."),
                                    QStringLiteral("NAME"), QStringLiteral("auto"));
    const QCommandLineOption layoutFile(QStringLiteral("layout-file"),
                                        QStringLiteral("A layout file (gwb-layout JSON, README \"Layout files\") "
                                                       "instead of a built-in layout."),
                                        QStringLiteral("F.json"));
    const QCommandLineOption listLayouts(QStringLiteral("list-layouts"),
                                         QStringLiteral("List the built-in layouts and exit; with --layout-file, "
                                                        "check that file."));
    const QCommandLineOption vocab(
        QStringLiteral("vocab"),
        QStringLiteral("tokenizer.json (Hugging Face or Wake2vec), WordPiece vocab.txt, or GPT-2 "
                       "vocab.json (merges.txt beside it)."),
        QStringLiteral("FILE"));
    const QCommandLineOption merges(QStringLiteral("merges"),
                                    QStringLiteral("GPT-2 merges.txt (default: next to vocab.json)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption offsets(
        QStringLiteral("offsets"), QStringLiteral("Offset schedule overriding the layout's."), QStringLiteral("SPEC"));
    const QCommandLineOption heads(QStringLiteral("heads"),
                                   QStringLiteral("Transformer heads (default: from the checkpoint's args, else 4)."),
                                   QStringLiteral("N"));
    const QCommandLineOption eps(QStringList{QStringLiteral("eps"), QStringLiteral("plucker-eps")},
                                 QStringLiteral("Override the family's (or found config's) Plücker eps."),
                                 QStringLiteral("EPS"));
    const QCommandLineOption norm(
        QStringLiteral("norm"),
        QStringLiteral("post, pre, post_mix or pre_mix: block arrangement (model-spec step 9; "
                       "kanenorman's pre_norm flag is pre)."),
        QStringLiteral("P"));
    const QCommandLineOption aggregation(
        QStringLiteral("aggregation"),
        QStringLiteral("normalize_then_mean or mean_then_normalize: how the offsets' planes become B_t."),
        QStringLiteral("A"));
    const QCommandLineOption empty(QStringLiteral("empty"),
                                   QStringLiteral("zero or bias: g at a token with no valid offset."),
                                   QStringLiteral("RULE"));
    const QCommandLineOption gate(QStringLiteral("gate"), QStringLiteral("paper or geometry_only."),
                                  QStringLiteral("GATE"));
    const QCommandLineOption noConfig(QStringLiteral("ignore-config"),
                                      QStringLiteral("Do not read args/config in the .pt or a config.json beside it."));
    const QCommandLineOption kind(QStringLiteral("kind"),
                                  QStringLiteral("grassmann or transformer: refuse the other kind."),
                                  QStringLiteral("KIND"));
    const QCommandLineOption f16(QStringLiteral("f16"), QStringLiteral("Store weights as float16."));
    p.addOptions({layout, layoutFile, listLayouts, vocab, merges, offsets, heads, eps, norm, empty, gate, aggregation,
                  noConfig, kind, f16});
    p.addPositionalArgument(QStringLiteral("IN"),
                            QStringLiteral("Checkpoint: .pt/.pth (torch.save), .safetensors, or a folder with "
                                           "config.json + model.safetensors."));
    p.addPositionalArgument(QStringLiteral("OUT"), QStringLiteral("Output .gwb file (written atomically)."));
    p.process(args);
    try {
        using namespace gwb::engine;
        if (p.isSet(listLayouts)) {
            std::printf("%s", describeLayouts().c_str());
            if (p.isSet(layoutFile))
                std::printf("%s: a valid layout file (layout %s)\n", p.value(layoutFile).toLocal8Bit().constData(),
                            checkLayoutFile(p.value(layoutFile).toStdString()).c_str());
            return 0;
        }
        if (p.positionalArguments().size() != 2) throw std::invalid_argument("give IN and OUT (gwb import --help)");
        ImportOptions o;
        o.layout = p.value(layout).toLower().toStdString();
        o.layoutFile = p.value(layoutFile).toStdString();
        if (!o.layoutFile.empty() && p.isSet(layout))
            throw std::invalid_argument("give --layout or --layout-file, not both");
        if (o.layout != "auto" && o.layoutFile.empty()) {
            const std::vector<std::string> known = builtinLayoutNames();
            if (std::find(known.begin(), known.end(), o.layout) == known.end()) {
                std::string list;
                for (const auto& n : known)
                    list += ", " + n;
                throw std::invalid_argument("unknown layout '" + o.layout + "' (use auto" + list +
                                            ", or --layout-file F.json)");
            }
        }
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
            if (!ok || *o.pluckerEps <= 0) throw std::invalid_argument("--eps must be a positive number");
        }
        if (p.isSet(norm)) {
            try {
                o.norm = normFromName(p.value(norm).toLower().toStdString());
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(std::string("--") + e.what());
            }
        }
        if (p.isSet(aggregation)) {
            try {
                o.aggregation = aggregationFromName(p.value(aggregation).toLower().toStdString());
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(std::string("--") + e.what());
            }
        }
        if (p.isSet(empty)) {
            const QString v = p.value(empty).toLower();
            if (v != QLatin1String("zero") && v != QLatin1String("bias"))
                throw std::invalid_argument("--empty must be zero or bias");
            o.empty = v == QLatin1String("zero") ? EmptyRule::Zero : EmptyRule::Bias;
        }
        if (p.isSet(gate)) {
            const QString v = p.value(gate).toLower();
            if (v != QLatin1String("paper") && v != QLatin1String("geometry_only"))
                throw std::invalid_argument("--gate must be paper or geometry_only");
            o.gate = v == QLatin1String("paper") ? GateVariant::Paper : GateVariant::GeometryOnly;
        }
        o.useFoundConfig = !p.isSet(noConfig);
        if (p.isSet(kind)) {
            const QString k = p.value(kind).toLower();
            if (k != QLatin1String("grassmann") && k != QLatin1String("transformer"))
                throw std::invalid_argument("--kind must be grassmann or transformer");
            o.expectedKind = k == QLatin1String("grassmann") ? ModelKind::Grassmann : ModelKind::Transformer;
        }
        const std::string in = p.positionalArguments().at(0).toStdString();
        const std::string out = p.positionalArguments().at(1).toStdString();
        // Without --vocab, the tokenizer where the family keeps it (as File > Open Model does).
        FoundVocabulary found;
        if (o.vocabPath.empty()) {
            found = findVocabulary(in);
            o.vocabPath = found.path;
        }
        ImportedModel m = importCheckpoint(in, o);
        if (!found.path.empty()) m.report.notes.push_back("tokenizer: " + found.path + " (found " + found.where + ")");
        nlohmann::json summary{{"imported_from", in}, {"layout", m.report.layout}, {"format", m.report.format}};
        for (const auto& [key, value] : m.report.metadata)
            summary["checkpoint"][key] = value; // epoch, val_ppl, args.* as the file had them
        m.model.setTrainingSummary(summary.dump());
        m.model.save(out, p.isSet(f16) ? SaveDtype::F16 : SaveDtype::F32);
        std::printf("%s (%s) -> %s\n", in.c_str(), m.report.format.c_str(), out.c_str());
        for (const auto& line : m.report.detection)
            std::printf("  %s\n", line.c_str());
        for (const auto& note : m.report.notes)
            std::printf("  %s\n", note.c_str());
        for (const auto& flag : m.report.flags)
            std::printf("  %s\n", flag.c_str());
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

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kImportCommand{
    "import", "Convert a PyTorch re-implementation's checkpoint (.pt/.safetensors/.grasslm) to .gwb", runImport, false};
} // namespace gwb::app
