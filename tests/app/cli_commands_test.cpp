// The headless commands run as processes of the real `gwb` executable: version and help, info
// on the bundled configs (parameter counts of the paper's Table 1), init -> trace -> NPZ read
// back, eval on a tiny model, and bad input exiting non-zero with a message naming the problem.

#include "cli/cli_args.h"
#include "gui/window_options.h"
#include "gwb/views/view_data.h"
#include "gwb/engine/npy.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "gwb_process.h"
#include "test_models.h"

using gwb::app::test::GwbResult;
using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::writeText;

namespace {

QString config(const char* name) {
    return QStringLiteral(GWB_SOURCE_DIR "/resources/configs/") + QLatin1String(name);
}

/// A temp folder with vocab.txt (40 WordPiece entries), tiny.json (2-layer Grassmann config over
/// that vocabulary) and m.gwb made from them by `gwb init`.
class CliTinyModel : public testing::Test {
protected:
    static constexpr int kVocab = 40;
    void SetUp() override {
        ASSERT_TRUE(m_dir.isValid());
        QByteArray vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nit\nis\na\ntruth\nthe\n.\n";
        for (int i = 11; i < kVocab; ++i)
            vocab += "w" + QByteArray::number(i) + "\n";
        writeText(path("vocab.txt"), vocab);
        writeText(path("tiny.json"),
                  "{\"kind\": \"grassmann\", \"name\": \"tiny\", \"vocab_size\": 40, \"d_model\": 16, "
                  "\"n_layers\": 2, \"d_ff\": 32, \"max_len\": 16, \"dropout\": 0, \"reduced\": 4, "
                  "\"offsets\": {\"schedule\": \"all\", \"set\": [1, 2]}}\n");
        const GwbResult r =
            runGwb({QStringLiteral("init"), QStringLiteral("--config"), path("tiny.json"),
                    QStringLiteral("--tokenizer"), path("vocab.txt"), QStringLiteral("--out"), path("m.gwb")});
        ASSERT_EQ(r.code, 0) << show(r);
        ASSERT_TRUE(QFileInfo::exists(path("m.gwb")));
    }
    QString path(const char* name) const { return m_dir.filePath(QLatin1String(name)); }

private:
    QTemporaryDir m_dir;
};

} // namespace

TEST(CliCommands, VersionAndHelp) {
    const GwbResult v = runGwb({QStringLiteral("--version")});
    EXPECT_EQ(v.code, 0) << show(v);
    EXPECT_TRUE((v.out + v.err).contains(QRegularExpression(QStringLiteral("gwb \\d+\\.\\d+")))) << show(v);

    const GwbResult h = runGwb({QStringLiteral("--help")});
    EXPECT_EQ(h.code, 0) << show(h);
    for (const char* command : {"eval", "figure", "import", "info", "init", "tokenizer", "train", "trace"})
        EXPECT_TRUE(h.out.contains(QRegularExpression(QStringLiteral("\\n  %1 ").arg(QLatin1String(command)))))
            << command << " missing from\n"
            << h.out.toStdString();
    // The window's options are listed too, every one the window parses (--dictionary was missing).
    for (const char* option : {"--prompt", "--run", "--session", "--stats", "--continue", "--fresh", "--dictionary"})
        EXPECT_TRUE(h.out.contains(QRegularExpression(QStringLiteral("\\n  %1 ").arg(QLatin1String(option)))))
            << option << " missing from\n"
            << h.out.toStdString();
    for (const gwb::app::WindowOption& o : gwb::app::kWindowOptions) {
        const QString listed =
            QStringLiteral("\n  --%1%2")
                .arg(QLatin1String(o.name), o.value ? QStringLiteral(" ") + QLatin1String(o.value) : QString());
        EXPECT_TRUE(h.out.contains(listed)) << listed.toStdString() << " missing from\n" << h.out.toStdString();
        // Each description whole (wrapped lines joined).
        QString joined = h.out;
        joined.replace(QRegularExpression(QStringLiteral("\\n {22}")), QStringLiteral(" "));
        EXPECT_TRUE(joined.contains(QString::fromUtf8(o.help))) << o.help;
    }
    const QString window = h.out.section(QStringLiteral("Window options"), 1).section(QStringLiteral("Commands"), 0, 0);
    for (const QString& line : window.split(QLatin1Char('\n')))
        EXPECT_LE(line.size(), 100) << line.toStdString();
}

TEST(CliCommands, ImportTakesEveryVariantOption) {
    // --aggregation was read but never added to the parser: Qt warned "option not defined" and
    // refused the option as unknown. Every option reaches the import (which then names the file).
    QTemporaryDir dir;
    const QString missing = dir.filePath(QStringLiteral("missing.pt"));
    const GwbResult r =
        runGwb({QStringLiteral("import"), missing, dir.filePath(QStringLiteral("out.gwb")),
                QStringLiteral("--aggregation"), QStringLiteral("mean_then_normalize"), QStringLiteral("--norm"),
                QStringLiteral("pre"), QStringLiteral("--empty"), QStringLiteral("bias"), QStringLiteral("--gate"),
                QStringLiteral("paper"), QStringLiteral("--eps"), QStringLiteral("1e-6"), QStringLiteral("--heads"),
                QStringLiteral("4"), QStringLiteral("--offsets"), QStringLiteral("1,2")});
    EXPECT_NE(r.code, 0) << show(r);
    EXPECT_FALSE(r.err.contains(QStringLiteral("Unknown option"))) << show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("missing.pt"))) << show(r);
    EXPECT_FALSE(QFileInfo::exists(dir.filePath(QStringLiteral("out.gwb"))));
    const GwbResult h = runGwb({QStringLiteral("import"), QStringLiteral("--help")});
    EXPECT_TRUE(h.out.contains(QStringLiteral("--aggregation"))) << show(h);
}

TEST(CliCommands, InfoCountsTheTable1Parameters) {
    const GwbResult g =
        runGwb({QStringLiteral("info"), QStringLiteral("--config"), config("paper-6L-128-grassmann.json")});
    ASSERT_EQ(g.code, 0) << show(g);
    EXPECT_TRUE(g.out.contains(QStringLiteral("12607168"))) << show(g);
    EXPECT_TRUE(g.out.contains(QStringLiteral("grassmann"))) << show(g);
    const GwbResult t =
        runGwb({QStringLiteral("info"), QStringLiteral("--config"), config("paper-6L-128-transformer.json")});
    ASSERT_EQ(t.code, 0) << show(t);
    EXPECT_TRUE(t.out.contains(QStringLiteral("12585472"))) << show(t);
}

TEST_F(CliTinyModel, TraceWritesAnNpzWithTheTokensAndStates) {
    const GwbResult r =
        runGwb({QStringLiteral("trace"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--token-ids"),
                QStringLiteral("3,17,5,9"), QStringLiteral("--analysis"), QStringLiteral("--threads"),
                QStringLiteral("1"), QStringLiteral("--out"), path("t.npz")});
    ASSERT_EQ(r.code, 0) << show(r);
    ASSERT_TRUE(QFileInfo::exists(path("t.npz")));
    const auto members = gwb::engine::readZipStored(gwb::engine::readBinaryFile(path("t.npz").toStdString()));
    ASSERT_TRUE(members.count("token_ids.npy"));
    const gwb::engine::NpyArray ids = gwb::engine::parseNpy(members.at("token_ids.npy"));
    EXPECT_EQ(ids.values<int64_t>(), (std::vector<int64_t>{3, 17, 5, 9}));
    ASSERT_TRUE(members.count("l0_z.npy"));
    const gwb::engine::NpyArray z = gwb::engine::parseNpy(members.at("l0_z.npy"));
    ASSERT_FALSE(z.shape.empty());
    EXPECT_EQ(z.shape.front(), 4);
    EXPECT_TRUE(members.count("l1_z.npy"));
    EXPECT_TRUE(members.count("meta.json"));
    // A prompt cut by --max-tokens: the note names that limit, not the model's context.
    const GwbResult cut =
        runGwb({QStringLiteral("trace"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--token-ids"),
                QStringLiteral("3,17,5,9,4,6"), QStringLiteral("--max-tokens"), QStringLiteral("4"),
                QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--out"), path("c.npz")});
    ASSERT_EQ(cut.code, 0) << show(cut);
    EXPECT_TRUE(cut.err.contains(QStringLiteral("note: the prompt has 6 tokens; the first 4 were traced, as "
                                                "--max-tokens asks")))
        << show(cut);
}

TEST_F(CliTinyModel, InfoAndEvalOnTheModel) {
    const GwbResult info = runGwb({QStringLiteral("info"), QStringLiteral("--model"), path("m.gwb")});
    ASSERT_EQ(info.code, 0) << show(info);
    EXPECT_TRUE(info.out.contains(QStringLiteral("tiny"))) << show(info);
    // Which BLAS runs the products, its kernels and the idle-spin setting (docs/performance.md).
    EXPECT_TRUE(info.out.contains(QStringLiteral("blas:        OpenBLAS")) ||
                info.out.contains(QStringLiteral("blas:        not OpenBLAS")))
        << show(info);
    // Which form of gwb's own inference products runs (docs/performance.md, "Matrix products").
    EXPECT_TRUE(info.out.contains(QStringLiteral("kernels:     inference products in gwb's packed kernels")) ||
                info.out.contains(QStringLiteral("kernels:     inference products through the BLAS")))
        << show(info);

    writeText(path("eval.txt"), "it is a truth .\nthe truth is w12 w30 .\n");
    const GwbResult eval =
        runGwb({QStringLiteral("eval"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--data"),
                path("eval.txt"), QStringLiteral("--threads"), QStringLiteral("1")});
    ASSERT_EQ(eval.code, 0) << show(eval);
    EXPECT_TRUE(eval.out.contains(QStringLiteral("ppl"), Qt::CaseInsensitive) ||
                eval.out.contains(QStringLiteral("perplexity"), Qt::CaseInsensitive))
        << show(eval);
}

TEST_F(CliTinyModel, BadInputExitsNonZeroNamingTheProblem) {
    const GwbResult unknown = runGwb({QStringLiteral("frobnicate")});
    EXPECT_NE(unknown.code, 0);
    EXPECT_TRUE(unknown.err.contains(QStringLiteral("unknown command 'frobnicate'"))) << show(unknown);

    const GwbResult missing =
        runGwb({QStringLiteral("info"), QStringLiteral("--model"), QStringLiteral("/nonexistent.gwb")});
    EXPECT_NE(missing.code, 0);
    EXPECT_TRUE(missing.err.contains(QStringLiteral("/nonexistent.gwb"))) << show(missing);

    const GwbResult empty = runGwb({QStringLiteral("trace"), QStringLiteral("--model"), path("m.gwb"),
                                    QStringLiteral("--prompt"), QString(), QStringLiteral("--out"), path("e.npz")});
    EXPECT_NE(empty.code, 0);
    EXPECT_TRUE(empty.err.contains(QStringLiteral("empty"), Qt::CaseInsensitive)) << show(empty);
    EXPECT_FALSE(QFileInfo::exists(path("e.npz")));

    const GwbResult badIds =
        runGwb({QStringLiteral("trace"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--token-ids"),
                QStringLiteral("3,x"), QStringLiteral("--out"), path("e.npz")});
    EXPECT_NE(badIds.code, 0);
    EXPECT_TRUE(badIds.err.contains(QStringLiteral("'x' is not a token id"))) << show(badIds);
}

TEST_F(CliTinyModel, GenerateStreamsAContinuationAndTracesIt) {
    const QStringList common = {
        QStringLiteral("generate"), QStringLiteral("--model"),       path("m.gwb"),
        QStringLiteral("--prompt"), QStringLiteral("it is a truth"), QStringLiteral("--max-new"),
        QStringLiteral("6"),        QStringLiteral("--threads"),     QStringLiteral("1")};
    const GwbResult r =
        runGwb(common + QStringList{QStringLiteral("--seed"), QStringLiteral("7"), QStringLiteral("--top-k"),
                                    QStringLiteral("5"), QStringLiteral("--trace"), path("g.npz")});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.out.startsWith(QStringLiteral("it is a truth"))) << show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("4 tokens in, 6 generated"))) << show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("tokens/s"))) << show(r);
    // The trace covers prompt + continuation: the prompt ids first, then 6 ids inside the vocabulary.
    const auto members = gwb::engine::readZipStored(gwb::engine::readBinaryFile(path("g.npz").toStdString()));
    ASSERT_TRUE(members.count("token_ids.npy"));
    const std::vector<int64_t> ids = gwb::engine::parseNpy(members.at("token_ids.npy")).values<int64_t>();
    ASSERT_EQ(ids.size(), 10u);
    EXPECT_EQ((std::vector<int64_t>(ids.begin(), ids.begin() + 4)), (std::vector<int64_t>{5, 6, 7, 8}));
    for (int64_t id : ids)
        EXPECT_TRUE(id >= 0 && id < kVocab) << id;

    // Same seed, same text; greedy is deterministic too.
    const GwbResult again = runGwb(common + QStringList{QStringLiteral("--seed"), QStringLiteral("7"),
                                                        QStringLiteral("--top-k"), QStringLiteral("5")});
    ASSERT_EQ(again.code, 0) << show(again);
    EXPECT_EQ(again.out, r.out);
    const GwbResult g1 = runGwb(common + QStringList{QStringLiteral("--greedy")});
    const GwbResult g2 =
        runGwb(common + QStringList{QStringLiteral("--greedy"), QStringLiteral("--seed"), QStringLiteral("99")});
    ASSERT_EQ(g1.code, 0) << show(g1);
    EXPECT_EQ(g1.out, g2.out);

    // The context stops at max_len (16): 4 + 12, said on the terminal.
    const GwbResult full =
        runGwb({QStringLiteral("generate"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--prompt"),
                QStringLiteral("it is a truth"), QStringLiteral("--max-new"), QStringLiteral("50")});
    ASSERT_EQ(full.code, 0) << show(full);
    EXPECT_TRUE(full.err.contains(QStringLiteral("12 generated"))) << show(full);
    EXPECT_TRUE(full.err.contains(QStringLiteral("max_len"))) << show(full);
}

TEST_F(CliTinyModel, GenerateRefusesBadOptionsNamingThem) {
    const QStringList base = {QStringLiteral("generate"), QStringLiteral("--model"), path("m.gwb")};
    const GwbResult noPrompt = runGwb(base);
    EXPECT_NE(noPrompt.code, 0);
    EXPECT_TRUE(noPrompt.err.contains(QStringLiteral("--prompt"))) << show(noPrompt);
    const QStringList withPrompt = base + QStringList{QStringLiteral("--prompt"), QStringLiteral("it is")};
    const GwbResult temp = runGwb(withPrompt + QStringList{QStringLiteral("--temperature"), QStringLiteral("0")});
    EXPECT_NE(temp.code, 0);
    EXPECT_TRUE(temp.err.contains(QStringLiteral("temperature"))) << show(temp);
    const GwbResult topP = runGwb(withPrompt + QStringList{QStringLiteral("--top-p"), QStringLiteral("1.5")});
    EXPECT_NE(topP.code, 0);
    EXPECT_TRUE(topP.err.contains(QStringLiteral("top_p")) || topP.err.contains(QStringLiteral("top-p"))) << show(topP);
    const GwbResult notNumber = runGwb(withPrompt + QStringList{QStringLiteral("--max-new"), QStringLiteral("many")});
    EXPECT_NE(notNumber.code, 0);
    EXPECT_TRUE(notNumber.err.contains(QStringLiteral("max_new (--max-new) needs an integer, got 'many'")))
        << show(notNumber);
    // The engine's table: the same sentence as Python's (test_gwb_errors.py).
    EXPECT_TRUE(topP.err.contains(QStringLiteral("top_p (--top-p) must be a number in (0, 1]; got 1.5"))) << show(topP);
    const GwbResult readOnly =
        runGwb(withPrompt + QStringList{QStringLiteral("--trace"), QStringLiteral("/proc/g.npz")});
    EXPECT_NE(readOnly.code, 0);
    EXPECT_TRUE(readOnly.err.contains(QStringLiteral("/proc/g.npz"))) << show(readOnly);
}

TEST_F(CliTinyModel, TraceRefusesBadOptionsNamingThem) {
    const QStringList base = {
        QStringLiteral("trace"), QStringLiteral("--model"), path("m.gwb"), QStringLiteral("--prompt"),
        QStringLiteral("it is"), QStringLiteral("--out"),   path("t.npz")};
    // The engine's table (traceOptions): the same sentence as Python's (test_gwb_errors.py).
    const GwbResult negative = runGwb(base + QStringList{QStringLiteral("--lens-k"), QStringLiteral("-3")});
    EXPECT_NE(negative.code, 0);
    EXPECT_TRUE(negative.err.contains(QStringLiteral("lens_k (--lens-k) must be an integer, at least 0; got -3")))
        << show(negative);
    const GwbResult notNumber = runGwb(base + QStringList{QStringLiteral("--max-tokens"), QStringLiteral("x")});
    EXPECT_NE(notNumber.code, 0);
    EXPECT_TRUE(notNumber.err.contains(QStringLiteral("max_tokens (--max-tokens) needs an integer, got 'x'")))
        << show(notNumber);
    const GwbResult dense = runGwb(base + QStringList{QStringLiteral("--dense-limit"), QStringLiteral("-5")});
    EXPECT_NE(dense.code, 0);
    EXPECT_TRUE(dense.err.contains(QStringLiteral("dense_limit (--dense-limit)"))) << show(dense);
    EXPECT_FALSE(QFileInfo::exists(path("t.npz")));
    const GwbResult ok = runGwb(base + QStringList{QStringLiteral("--lens-k"), QStringLiteral("0")});
    EXPECT_EQ(ok.code, 0) << show(ok);
    EXPECT_TRUE(QFileInfo::exists(path("t.npz")));
}

// Issue 31: a .gwb carries its tokenizer, so it is accepted wherever a tokenizer is asked for;
// `gwb tokenizer --model M` uses a model's own; `export` writes it out; --help lists everything.
// Before, a .gwb was read as a SentencePiece proto ("unsupported wire type 4").
TEST_F(CliTinyModel, TokenizerCommandsTakeAModelsOwnTokenizer) {
    const GwbResult viaFile =
        runGwb({QStringLiteral("tokenizer"), QStringLiteral("encode"), QStringLiteral("--tokenizer"), path("m.gwb"),
                QStringLiteral("--text"), QStringLiteral("it is a truth")});
    ASSERT_EQ(viaFile.code, 0) << show(viaFile);
    const GwbResult viaVocab =
        runGwb({QStringLiteral("tokenizer"), QStringLiteral("encode"), QStringLiteral("--tokenizer"), path("vocab.txt"),
                QStringLiteral("--text"), QStringLiteral("it is a truth")});
    ASSERT_EQ(viaVocab.code, 0) << show(viaVocab);
    EXPECT_EQ(viaFile.out, viaVocab.out);
    EXPECT_TRUE(viaFile.out.contains(QStringLiteral("4 pieces"))) << show(viaFile);
    const GwbResult viaModel = runGwb({QStringLiteral("tokenizer"), QStringLiteral("decode"), QStringLiteral("--model"),
                                       path("m.gwb"), QStringLiteral("--ids"), QStringLiteral("5,6,7,8")});
    ASSERT_EQ(viaModel.code, 0) << show(viaModel);
    EXPECT_EQ(viaModel.out.trimmed(), QStringLiteral("it is a truth"));
    const GwbResult exported = runGwb({QStringLiteral("tokenizer"), QStringLiteral("export"), QStringLiteral("--model"),
                                       path("m.gwb"), QStringLiteral("--out"), path("exported.txt")});
    ASSERT_EQ(exported.code, 0) << show(exported);
    QFile a(path("exported.txt")), b(path("vocab.txt"));
    ASSERT_TRUE(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    EXPECT_EQ(a.readAll(), b.readAll()) << "the model's WordPiece vocabulary, written back";
    // A .gwb without a tokenizer, and a file that is not a model, are named.
    const GwbResult bad = runGwb({QStringLiteral("tokenizer"), QStringLiteral("encode"), QStringLiteral("--tokenizer"),
                                  path("tiny.json.gwb"), QStringLiteral("--text"), QStringLiteral("x")});
    EXPECT_NE(bad.code, 0);
    EXPECT_TRUE(bad.err.contains(QStringLiteral("tiny.json.gwb"))) << show(bad);
    const GwbResult help = runGwb({QStringLiteral("tokenizer"), QStringLiteral("--help")});
    EXPECT_EQ(help.code, 0) << show(help);
    for (const char* sub : {"train", "encode", "decode", "export"})
        EXPECT_TRUE(help.out.contains(QStringLiteral("  %1 ").arg(QLatin1String(sub)))) << show(help);
}

TEST(CliCommands, TraceSaysALayerWarningOnce) {
    // gwb trace --analysis printed "layer 0: prompt subspace has rank 1 < k = 4 ..." once per
    // layer; the window and gwb figure already merged them into one line naming the layers.
    QTemporaryDir dir;
    const gwb::app::test::GwbResult r =
        gwb::app::test::runGwb({"trace", "--model", gwb::app::test::testModels().grassmann, "--prompt", "emma was",
                                "--analysis", "--out", dir.filePath("t.npz")});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    EXPECT_EQ(r.err.count(QStringLiteral("prompt subspace has rank")), 1) << r.err.toStdString();
    EXPECT_TRUE(r.err.contains(QStringLiteral("layers 0"))) << r.err.toStdString();
}

TEST(CliArgs, TerminalPiecesReadAsTheWindowShowsThem) {
    // `gwb features top` printed SentencePiece's raw byte pieces (<0x0A>, <0x55>) where the window
    // shows a return sign and the character (issue 52): every byte piece, and ordinary pieces, alike.
    for (int b = 0; b < 256; ++b) {
        const QString piece = QStringLiteral("<0x%1>")
                                  .arg(b, 2, 16, QLatin1Char('0'))
                                  .toUpper()
                                  .replace(QStringLiteral("<0X"), QStringLiteral("<0x"));
        EXPECT_EQ(gwb::app::cli::terminalPiece(piece.toStdString()), gwb::views::displayPiece(piece).toStdString())
            << piece.toStdString();
    }
    EXPECT_EQ(gwb::app::cli::terminalPiece("\u2581she"), "\u00b7she"); // the Views Guide's one spelling
    for (const char* piece : {"\u2581she", "pon", "<0x4>", "<0x0A>x", "<unk>"})
        EXPECT_EQ(gwb::app::cli::terminalPiece(piece),
                  gwb::views::displayPiece(QString::fromUtf8(piece)).toStdString());
}
