// gwb lens and the Lens figure as a person runs them: a tuned lens of the Grassmann model and a
// Jacobian lens of the Transformer (small budgets, seconds), their evaluation on held-out text and
// its file, the figure of both beside the logit lens at one and two columns (whole text, the
// caption naming each lens and its model), the per-layer summary figure, a lens read out on a model
// it was not fitted on, and the refusals.

#include "gwb/engine/npy.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "../views/svg_text.h"
#include "gwb_process.h"
#include "test_models.h"

using gwb::app::test::GwbResult;
using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::testModels;

namespace {

QStringList textsOf(const QString& svgPath) {
    QFile f(svgPath);
    return f.open(QIODevice::ReadOnly) ? gwb::test::svgTexts(f.readAll()) : QStringList();
}

struct Lenses {
    QTemporaryDir dir;
    QString corpus, grassmannTuned, transformerJacobian;
};

/// The corpus and the two fits, once for the file's tests.
const Lenses& lenses() {
    static Lenses* l = [] {
        auto* x = new Lenses;
        x->corpus = x->dir.filePath(QStringLiteral("corpus.txt"));
        QByteArray text;
        for (int i = 0; i < 40; ++i)
            text += "it is a truth universally acknowledged that a single man in the emma was her and she had be\n";
        gwb::app::test::writeText(x->corpus, text);
        x->grassmannTuned = x->dir.filePath(QStringLiteral("g-tuned"));
        x->transformerJacobian = x->dir.filePath(QStringLiteral("t-jacobian"));
        const GwbResult t =
            runGwb({"lens", "fit", "--kind", "tuned", "--model", testModels().grassmann, "--corpus", x->corpus, "--out",
                    x->grassmannTuned, "--window", "16", "--steps", "4", "--tokens-per-step", "32"});
        EXPECT_EQ(t.code, 0) << show(t);
        const GwbResult j =
            runGwb({"lens", "fit", "--kind", "jacobian", "--model", testModels().transformer, "--corpus", x->corpus,
                    "--out", x->transformerJacobian, "--window", "16", "--skip-first", "2", "--max-prompts", "2"});
        EXPECT_EQ(j.code, 0) << show(j);
        return x;
    }();
    return *l;
}

QStringList figureArgs(const QString& model, const QString& out, const QString& width) {
    return {"figure",
            "--model",
            model,
            "--baseline",
            testModels().transformer,
            "--view",
            "lens",
            "--prompt",
            gwb::app::test::promptOfTokens(12),
            "--width",
            width,
            "--out",
            out};
}

} // namespace

TEST(LensCli, FitsEvaluatesAndWritesTheFilesTheReferenceToolsRead) {
    const Lenses& l = lenses();
    for (const char* f : {"config.json", "params.pt", "gwb_lens.json"})
        EXPECT_TRUE(QFileInfo::exists(QDir(l.grassmannTuned).filePath(QString::fromLatin1(f)))) << f;
    for (const char* f : {"jacobian_lens.pt", "gwb_lens.json"})
        EXPECT_TRUE(QFileInfo::exists(QDir(l.transformerJacobian).filePath(QString::fromLatin1(f)))) << f;
    const QString npz = l.dir.filePath(QStringLiteral("eval.npz"));
    const GwbResult r = runGwb({"lens", "eval", "--model", testModels().grassmann, "--lens", l.grassmannTuned,
                                "--corpus", l.corpus, "--window", "16", "--max-prompts", "3", "--out", npz});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("3 prompts"))) << show(r);
    for (const char* row : {"logit", "tuned"})
        for (int s = 0; s < 2; ++s) // a row per lens and residual state
            EXPECT_TRUE(
                r.out.contains(QRegularExpression(QStringLiteral("^%1 +%2 +[0-9.]+ ").arg(QLatin1String(row)).arg(s),
                                                  QRegularExpression::MultilineOption)))
                << row << " " << s << "\n"
                << show(r);
    EXPECT_FALSE(r.out.contains(QStringLiteral("note:"))) << show(r); // fitted on this model
    const auto members = gwb::engine::readZipStored(gwb::engine::readBinaryFile(npz.toStdString()));
    for (const char* m : {"kl.npy", "ce.npy", "top1.npy", "rank.npy", "final_ce.npy", "meta.json"})
        EXPECT_TRUE(members.count(m)) << m;
    // The Transformer's lens on the Grassmann model does not fit it (or, fitting, is named as another model's).
    const GwbResult other = runGwb({"lens", "eval", "--model", testModels().grassmannPre, "--lens", l.grassmannTuned,
                                    "--corpus", l.corpus, "--window", "16", "--max-prompts", "2"});
    ASSERT_EQ(other.code, 0) << show(other);
    EXPECT_TRUE(other.out.contains(QStringLiteral("note: the tuned lens"))) << show(other);
}

TEST(LensCli, FigureDrawsEachLensBesideTheLogitLensWholeAtBothWidths) {
    const Lenses& l = lenses();
    for (const QString& width : {QStringLiteral("3.5in"), QStringLiteral("7in")}) {
        SCOPED_TRACE(width.toStdString());
        const QString out = l.dir.filePath(QStringLiteral("lens-%1.svg").arg(width));
        QStringList args = figureArgs(testModels().grassmann, out, width);
        args << "--lens" << l.grassmannTuned << "--lens" << l.transformerJacobian;
        const GwbResult r = runGwb(args);
        ASSERT_EQ(r.code, 0) << show(r);
        EXPECT_FALSE(r.err.contains(QStringLiteral("lens:"))) << show(r); // each lens on its own model
        const QStringList texts = textsOf(out);
        const QString all = texts.join(QLatin1Char(' '));
        for (const char* s : {"KL to final", "Rank of the actual next token"})
            EXPECT_TRUE(all.contains(QString::fromUtf8(s))) << s << "\n" << all.toStdString();
        if (width == QStringLiteral("7in")) {
            // A grid per model and lens, a window of tokens each.
            for (const char* s : {"Grassmann \u00b7 logit lens", "Grassmann \u00b7 tuned lens",
                                  "Transformer \u00b7 logit lens", "Transformer \u00b7 Jacobian lens"})
                EXPECT_TRUE(all.contains(QString::fromUtf8(s))) << s << "\n" << all.toStdString();
            // The Jacobian lens is not drawn on the Grassmann model, nor the tuned lens on the Transformer.
            EXPECT_FALSE(all.contains(QStringLiteral("Grassmann \u00b7 Jacobian"))) << all.toStdString();
            EXPECT_FALSE(all.contains(QStringLiteral("Transformer \u00b7 tuned"))) << all.toStdString();
        } else {
            // One column: a grid per model, its lenses as columns at the selected token.
            const auto g = all.indexOf(QStringLiteral("Grassmann \u00b7 lenses at token"));
            const auto t = all.indexOf(QStringLiteral("Transformer \u00b7 lenses at token"));
            const auto k = all.indexOf(QStringLiteral("KL to final"), t);
            ASSERT_TRUE(g >= 0 && t > g && k > t) << all.toStdString();
            const QString grassmann = all.mid(g, t - g), transformer = all.mid(t, k - t);
            EXPECT_TRUE(grassmann.contains(QStringLiteral("logit tuned"))) << grassmann.toStdString();
            EXPECT_FALSE(grassmann.contains(QStringLiteral("Jacobian"))) << grassmann.toStdString();
            EXPECT_TRUE(transformer.contains(QStringLiteral("logit Jacobian"))) << transformer.toStdString();
            EXPECT_FALSE(transformer.contains(QStringLiteral("tuned"))) << transformer.toStdString();
            EXPECT_TRUE(all.contains(QStringLiteral("one column per lens"))) << all.toStdString();
        }
        EXPECT_FALSE(all.contains(QStringLiteral("another model"))) << all.toStdString();
        EXPECT_TRUE(all.contains(QStringLiteral("fitted on"))) << all.toStdString();
        const QStringList cut = gwb::test::cutTexts(texts);
        EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
    }
}

TEST(LensCli, FigureSaysWhenALensWasFittedOnAnotherModel) {
    const Lenses& l = lenses();
    const QString out = l.dir.filePath(QStringLiteral("other.svg"));
    QStringList args = figureArgs(testModels().grassmannPre, out, QStringLiteral("3.5in"));
    args << "--lens" << l.grassmannTuned;
    const GwbResult r = runGwb(args);
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("note: lens: the tuned lens"))) << show(r);
    const QString all = textsOf(out).join(QLatin1Char(' '));
    EXPECT_TRUE(all.contains(QStringLiteral("another model"))) << all.toStdString();
    EXPECT_TRUE(all.contains(QStringLiteral("not the model drawn"))) << all.toStdString();
}

TEST(LensCli, FigureDrawsTheEvalSummaryPerLayer) {
    const Lenses& l = lenses();
    const QString npz = l.dir.filePath(QStringLiteral("summary.npz"));
    const GwbResult e = runGwb({"lens", "eval", "--model", testModels().transformer, "--lens", l.transformerJacobian,
                                "--corpus", l.corpus, "--window", "16", "--max-prompts", "2", "--out", npz});
    ASSERT_EQ(e.code, 0) << show(e);
    for (const QString& width : {QStringLiteral("3.5in"), QStringLiteral("7in")}) {
        const QString out = l.dir.filePath(QStringLiteral("summary-%1.svg").arg(width));
        QStringList args = figureArgs(testModels().grassmann, out, width);
        args << "--lens-eval" << npz;
        const GwbResult r = runGwb(args);
        ASSERT_EQ(r.code, 0) << show(r);
        const QStringList texts = textsOf(out);
        const QString all = texts.join(QLatin1Char(' '));
        for (const char* s : {"KL(p_final", "Cross-entropy against the next token", "Top-1 agreement",
                              "Mean rank of the next token", "jacobian", "2 prompts"})
            EXPECT_TRUE(all.contains(QString::fromUtf8(s), Qt::CaseInsensitive)) << s << "\n" << all.toStdString();
        EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty()) << gwb::test::cutTexts(texts).join(" | ").toStdString();
    }
}

TEST(LensCli, RefusalsNameTheProblem) {
    const Lenses& l = lenses();
    const QString out = l.dir.filePath(QStringLiteral("x.png"));
    QStringList gate = figureArgs(testModels().grassmann, out, QStringLiteral("3.5in"));
    gate[gate.indexOf(QStringLiteral("lens"))] = QStringLiteral("gate");
    gate << "--lens" << l.grassmannTuned;
    const GwbResult a = runGwb(gate);
    EXPECT_EQ(a.code, 1) << show(a);
    EXPECT_TRUE(a.err.contains(QStringLiteral("--lens and --lens-eval only apply to --view lens"))) << show(a);
    QStringList notLens = figureArgs(testModels().grassmann, out, QStringLiteral("3.5in"));
    notLens << "--lens" << l.dir.path();
    const GwbResult b = runGwb(notLens);
    EXPECT_EQ(b.code, 1) << show(b);
    EXPECT_TRUE(b.err.contains(l.dir.path())) << show(b);
    EXPECT_FALSE(QFileInfo::exists(out));
    const GwbResult c = runGwb({"lens", "fit", "--kind", "sideways", "--model", testModels().grassmann, "--corpus",
                                l.corpus, "--out", l.dir.filePath(QStringLiteral("no"))});
    EXPECT_EQ(c.code, 1) << show(c);
    EXPECT_TRUE(c.err.contains(QStringLiteral("sideways"))) << show(c);
}
