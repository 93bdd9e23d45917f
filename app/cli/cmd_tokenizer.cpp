// gwb tokenizer train|encode|decode: SentencePiece training and tokenizer inspection.

#include "common/bundled_models.h"
#include "common/command_registry.h"

#include "gwb/engine/tokenizer.h"

#include <QCommandLineParser>
#include <QFile>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

constexpr const char* kTokenizerHelp = "Tokenizer file: SentencePiece .model, WordPiece vocab.txt, tokenizer.json "
                                       "(Hugging Face's or Wake2vec's), GPT-2 vocab.json with merges.txt beside it, "
                                       "or a .gwb model (its own tokenizer).";
constexpr const char* kModelHelp = "A model whose own tokenizer to use: a .gwb file, or 'grassmann' / 'transformer' "
                                   "for the bundled models (same as --tokenizer FILE.gwb).";

/// --tokenizer FILE or --model M (a .gwb carries its tokenizer).
gwb::engine::TokenizerPtr tokenizerFrom(const QCommandLineParser& p, const QCommandLineOption& tokOpt,
                                        const QCommandLineOption& modelOpt) {
    if (p.isSet(tokOpt) && p.isSet(modelOpt)) throw std::invalid_argument("give --tokenizer or --model, not both");
    if (p.isSet(modelOpt))
        return gwb::engine::loadTokenizerFile(gwb::app::modelArgument(p.value(modelOpt)).toStdString());
    if (!p.isSet(tokOpt)) throw std::invalid_argument("--tokenizer or --model is required");
    return gwb::engine::loadTokenizerFile(p.value(tokOpt).toStdString());
}

/// What `gwb tokenizer --help` prints.
constexpr const char* kUsage =
    "Usage: gwb tokenizer train|encode|decode|export [options]   (--help on each)\n\n"
    "  train   Train a SentencePiece tokenizer (unigram or BPE, byte fallback) on text files.\n"
    "  encode  Print the pieces of a text: id, byte span, piece (--tokenizer FILE or --model M).\n"
    "  decode  Print the text of comma-separated ids (--tokenizer FILE or --model M).\n"
    "  export  Write a model's own tokenizer to a file (--model M --out FILE): a SentencePiece .model,\n"
    "          a WordPiece vocab.txt or a tokenizer.json, whichever the model carries.\n\n"
    "A tokenizer is a SentencePiece .model, a WordPiece vocab.txt, a tokenizer.json, a GPT-2 vocab.json with\n"
    "merges.txt beside it, or a .gwb model file (which carries its tokenizer).\n";

void writeAtomic(const std::string& path, const std::string& bytes) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error("cannot create " + tmp);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

int trainCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Train a SentencePiece tokenizer with byte fallback (one sentence per line)."));
    p.addHelpOption();
    const QCommandLineOption input(QStringLiteral("input"), QStringLiteral("Text file (repeat for several)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption vocab(QStringLiteral("vocab-size"), QStringLiteral("Pieces (default 8000)."),
                                   QStringLiteral("N"), QStringLiteral("8000"));
    const QCommandLineOption type(QStringLiteral("model-type"), QStringLiteral("unigram (default) or bpe."),
                                  QStringLiteral("TYPE"), QStringLiteral("unigram"));
    const QCommandLineOption coverage(QStringLiteral("character-coverage"), QStringLiteral("Default 0.9995."),
                                      QStringLiteral("X"), QStringLiteral("0.9995"));
    const QCommandLineOption sample(QStringLiteral("max-sentences"),
                                    QStringLiteral("Sample at most N lines (default 2000000)."), QStringLiteral("N"),
                                    QStringLiteral("2000000"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Sampling seed (default 0)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output .model file."), QStringLiteral("FILE"));
    p.addOptions({input, vocab, type, coverage, sample, seed, out});
    p.process(args);
    gwb::engine::SentencePieceTrainOptions o;
    for (const QString& f : p.values(input))
        o.inputs.push_back(f.toStdString());
    if (o.inputs.empty()) throw std::invalid_argument("--input is required");
    if (!p.isSet(out)) throw std::invalid_argument("--out is required");
    bool ok1 = false, ok2 = false, ok3 = false, ok4 = false;
    o.vocabSize = p.value(vocab).toLongLong(&ok1);
    o.characterCoverage = p.value(coverage).toDouble(&ok2);
    o.inputSentenceSize = p.value(sample).toLongLong(&ok3);
    o.seed = p.value(seed).toLongLong(&ok4);
    if (!ok1 || !ok2 || !ok3 || !ok4)
        throw std::invalid_argument("--vocab-size, --character-coverage, --max-sentences and --seed must be numbers");
    o.modelType = p.value(type).toStdString();
    const std::string proto = gwb::engine::trainSentencePiece(o);
    const auto tok = gwb::engine::makeSentencePieceTokenizer(proto);
    writeAtomic(p.value(out).toStdString(), proto);
    std::printf("wrote %s: %s, %lld pieces\n", qPrintable(p.value(out)), tok->kind().c_str(),
                static_cast<long long>(tok->vocabSize()));
    return 0;
}

int encodeCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Print the pieces of a text: id, byte span, piece."));
    p.addHelpOption();
    const QCommandLineOption tokOpt(QStringLiteral("tokenizer"), QString::fromUtf8(kTokenizerHelp),
                                    QStringLiteral("TOK"));
    const QCommandLineOption modelOpt(QStringLiteral("model"), QString::fromUtf8(kModelHelp), QStringLiteral("M"));
    const QCommandLineOption text(QStringLiteral("text"), QStringLiteral("Text to encode."), QStringLiteral("TEXT"));
    const QCommandLineOption file(QStringLiteral("file"), QStringLiteral("File to encode."), QStringLiteral("FILE"));
    p.addOptions({tokOpt, modelOpt, text, file});
    p.process(args);
    const auto tok = tokenizerFrom(p, tokOpt, modelOpt);
    std::string input;
    if (p.isSet(text)) {
        input = p.value(text).toStdString();
    } else if (p.isSet(file)) {
        QFile f(p.value(file));
        if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot open " + p.value(file).toStdString());
        input = f.readAll().toStdString();
    } else {
        throw std::invalid_argument("give --text or --file");
    }
    const auto pieces = tok->encode(input);
    for (const auto& piece : pieces)
        std::printf("%6d  [%lld, %lld)  %s\n", piece.id, static_cast<long long>(piece.begin),
                    static_cast<long long>(piece.end), piece.text.c_str());
    std::printf("%zu pieces\n", pieces.size());
    return 0;
}

int decodeCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Print the text of comma-separated ids."));
    p.addHelpOption();
    const QCommandLineOption tokOpt(QStringLiteral("tokenizer"), QString::fromUtf8(kTokenizerHelp),
                                    QStringLiteral("TOK"));
    const QCommandLineOption modelOpt(QStringLiteral("model"), QString::fromUtf8(kModelHelp), QStringLiteral("M"));
    const QCommandLineOption ids(QStringLiteral("ids"), QStringLiteral("Ids, e.g. 5,17,3."), QStringLiteral("IDS"));
    p.addOptions({tokOpt, modelOpt, ids});
    p.process(args);
    if (!p.isSet(ids)) throw std::invalid_argument("--ids is required");
    const auto tok = tokenizerFrom(p, tokOpt, modelOpt);
    std::vector<int32_t> v;
    for (const QString& s : p.value(ids).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        v.push_back(s.trimmed().toInt(&ok));
        if (!ok) throw std::invalid_argument("'" + s.toStdString() + "' is not a token id");
    }
    std::printf("%s\n", tok->decode(v).c_str());
    return 0;
}

int exportCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Write a model's own tokenizer to a file: a SentencePiece .model, a "
                                               "WordPiece vocab.txt or a tokenizer.json, whichever it carries."));
    p.addHelpOption();
    const QCommandLineOption modelOpt(QStringLiteral("model"), QString::fromUtf8(kModelHelp), QStringLiteral("M"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output file."), QStringLiteral("FILE"));
    p.addOptions({modelOpt, out});
    p.process(args);
    if (!p.isSet(modelOpt) || !p.isSet(out)) throw std::invalid_argument("--model and --out are required");
    const auto tok = gwb::engine::loadTokenizerFile(gwb::app::modelArgument(p.value(modelOpt)).toStdString());
    writeAtomic(p.value(out).toStdString(), tok->serialize());
    std::printf("wrote %s: %s, %lld pieces (read it back with --tokenizer %s)\n", qPrintable(p.value(out)),
                tok->kind().c_str(), static_cast<long long>(tok->vocabSize()), qPrintable(p.value(out)));
    return 0;
}

int runTokenizer(const QStringList& args) {
    const QString sub = args.size() > 1 ? args.at(1) : QString();
    QStringList rest = args;
    if (rest.size() > 1) {
        rest[0] = rest[0] + QLatin1Char(' ') + sub;
        rest.removeAt(1);
    }
    try {
        if (sub == QLatin1String("train")) return trainCommand(rest);
        if (sub == QLatin1String("encode")) return encodeCommand(rest);
        if (sub == QLatin1String("decode")) return decodeCommand(rest);
        if (sub == QLatin1String("export")) return exportCommand(rest);
        const bool help = sub == QLatin1String("--help") || sub == QLatin1String("-h");
        std::fputs(kUsage, help ? stdout : stderr);
        return help ? 0 : 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb tokenizer %s: %s\n", qPrintable(sub), e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kTokenizerCommand{"tokenizer", "Train a SentencePiece tokenizer, encode or decode text", runTokenizer,
                                false};
} // namespace gwb::app
