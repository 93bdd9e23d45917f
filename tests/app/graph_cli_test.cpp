// gwb graph as a person runs it: a transcoder set trained with gwb features train --transcoders,
// then the graph of a prompt as circuit-tracer's JSON and an NPZ, its summary on the terminal, and
// clear refusals (no transcoders, another model's transcoders, a read-only output).

#include "gwb/engine/npy.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gwb_process.h"
#include "test_models.h"

using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::testModels;

namespace {

/// A transcoder set of `model` in dir/name (a few steps on a small corpus of the test vocabulary).
QString trainSet(const QTemporaryDir& dir, const QString& model, const QString& name) {
    const QString corpus = dir.filePath(QStringLiteral("corpus.txt"));
    if (!QFile::exists(corpus)) {
        QByteArray text;
        for (int i = 0; i < 60; ++i)
            text += "it is a truth universally acknowledged that a single man in the emma was her and she had be\n";
        gwb::app::test::writeText(corpus, text);
    }
    const QString out = dir.filePath(name);
    const auto r =
        runGwb({QStringLiteral("features"), QStringLiteral("train"), QStringLiteral("--transcoders"),
                QStringLiteral("--model"), model, QStringLiteral("--corpus"), corpus, QStringLiteral("--out"), out,
                QStringLiteral("--d-sae"), QStringLiteral("32"), QStringLiteral("--k"), QStringLiteral("4"),
                QStringLiteral("--tokens"), QStringLiteral("512"), QStringLiteral("--batch"), QStringLiteral("128"),
                QStringLiteral("--context"), QStringLiteral("16")});
    EXPECT_EQ(r.code, 0) << show(r);
    return out;
}

} // namespace

TEST(GraphCli, WritesCircuitTracersJsonAndTheUnprunedNpz) {
    QTemporaryDir dir;
    for (const QString& model : {testModels().grassmann, testModels().transformer}) {
        const QString set = trainSet(dir, model, QFileInfo(model).baseName() + QStringLiteral("-tc"));
        const QString json = dir.filePath(QStringLiteral("g.json")), npz = dir.filePath(QStringLiteral("g.npz"));
        const auto r =
            runGwb({QStringLiteral("graph"), QStringLiteral("--model"), model, QStringLiteral("--transcoders"), set,
                    QStringLiteral("--prompt"), gwb::app::test::promptOfTokens(10), QStringLiteral("--out"), json,
                    QStringLiteral("--npz"), npz});
        ASSERT_EQ(r.code, 0) << show(r);
        for (const char* line : {"active features: ", "replacement score: ", "completeness score: ",
                                 "completeness error (max over rows): ", "its strongest inputs:"})
            EXPECT_TRUE(r.out.contains(QLatin1String(line))) << line << "\n" << show(r);
        // A split across the mixer's units under each edge that crosses one.
        const bool grassmann = model == testModels().grassmann;
        EXPECT_TRUE(r.out.contains(grassmann ? QStringLiteral("offset.") : QStringLiteral("head."))) << show(r);
        QFile f(json);
        ASSERT_TRUE(f.open(QIODevice::ReadOnly));
        const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString());
        EXPECT_EQ(j["metadata"]["slug"], "g");
        EXPECT_EQ(j["metadata"]["gwb"]["architecture"], grassmann ? "grassmann" : "transformer");
        EXPECT_LT(j["metadata"]["gwb"]["max_completeness_error"].get<double>(), 1e-9);
        EXPECT_FALSE(j["nodes"].empty());
        EXPECT_FALSE(j["links"].empty());
        bool logit = false, embedding = false;
        for (const auto& n : j["nodes"]) {
            logit = logit || n["feature_type"] == "logit";
            embedding = embedding || n["feature_type"] == "embedding";
        }
        EXPECT_TRUE(logit && embedding);
        const auto members = gwb::engine::readZipStored(gwb::engine::readBinaryFile(npz.toStdString()));
        EXPECT_TRUE(members.count("adjacency_rows.npy") && members.count("meta.json"));
    }
}

TEST(GraphCli, RefusalsNameTheProblem) {
    QTemporaryDir dir;
    const QString json = dir.filePath(QStringLiteral("g.json"));
    auto r = runGwb({QStringLiteral("graph"), QStringLiteral("--model"), testModels().grassmann,
                     QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"), json});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.contains(QStringLiteral("--transcoders DIR is required"))) << show(r);
    const QString set = trainSet(dir, testModels().grassmann, QStringLiteral("tc"));
    r = runGwb({QStringLiteral("graph"), QStringLiteral("--model"), testModels().grassmannPre,
                QStringLiteral("--transcoders"), set, QStringLiteral("--prompt"), QStringLiteral("it is"),
                QStringLiteral("--out"), json});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.startsWith(QStringLiteral("gwb graph: "))) << show(r);
    EXPECT_FALSE(QFile::exists(json));
    r = runGwb({QStringLiteral("graph"), QStringLiteral("--model"), testModels().grassmann,
                QStringLiteral("--transcoders"), set, QStringLiteral("--prompt"), QStringLiteral("it is"),
                QStringLiteral("--out"), QStringLiteral("/nonexistent-folder/g.json")});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.contains(QStringLiteral("does not exist"))) << show(r);
}
