#include "test_models.h"

#include "gwb/engine/config.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <memory>

namespace gwb::app::test {
namespace {

std::string vocabulary() {
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const char* w : {"it", "is",  "a",  "truth", "universally", "acknowledged", "that", "single", "man", "the",
                          "of", "and", "to", "emma",  "was",         "in",           "her",  "she",    "had", "be"})
        v += std::string(w) + "\n";
    for (char c = 'a'; c <= 'z'; ++c)
        v += std::string(1, c) + "\n##" + std::string(1, c) + "\n";
    for (const char* p : {".", ",", ";", "!", "?", "'"})
        v += std::string(p) + "\n";
    return v;
}

gwb::engine::ModelConfig smallConfig(gwb::engine::ModelKind kind, int64_t vocab) {
    gwb::engine::ModelConfig c;
    c.kind = kind;
    c.name = kind == gwb::engine::ModelKind::Grassmann ? "test-grassmann" : "test-transformer";
    c.vocabSize = vocab;
    c.dModel = 16;
    c.reduced = 4;
    c.nLayers = 2;
    c.dFF = 32;
    c.maxLen = 24;
    c.nHeads = 2;
    c.dropout = 0;
    if (kind == gwb::engine::ModelKind::Grassmann) c.layerOffsets = {{1, 2}, {1, 3}};
    return c;
}

struct Holder {
    QTemporaryDir dir;
    TestModels models;
};

} // namespace

const TestModels& testModels() {
    static const std::unique_ptr<Holder> holder = [] {
        auto h = std::make_unique<Holder>();
        const auto tok = gwb::engine::makeWordPieceTokenizer(vocabulary());
        h->models.folder = h->dir.path();
        h->models.grassmann = QDir(h->dir.path()).filePath(QStringLiteral("g.gwb"));
        h->models.transformer = QDir(h->dir.path()).filePath(QStringLiteral("t.gwb"));
        h->models.notAModel = QDir(h->dir.path()).filePath(QStringLiteral("notes.gwb"));
        gwb::engine::Model::init(smallConfig(gwb::engine::ModelKind::Grassmann, tok->vocabSize()), 1, tok, "cpu")
            .save(h->models.grassmann.toStdString());
        gwb::engine::Model::init(smallConfig(gwb::engine::ModelKind::Transformer, tok->vocabSize()), 2, tok, "cpu")
            .save(h->models.transformer.toStdString());
        h->models.grassmannPre = QDir(h->dir.path()).filePath(QStringLiteral("gpre.gwb"));
        gwb::engine::ModelConfig pre = smallConfig(gwb::engine::ModelKind::Grassmann, tok->vocabSize());
        pre.norm = gwb::engine::NormPlacement::Pre;
        gwb::engine::Model::init(pre, 3, tok, "cpu").save(h->models.grassmannPre.toStdString());
        QFile f(h->models.notAModel);
        if (f.open(QIODevice::WriteOnly)) f.write("these are notes, not a model\n");
        return h;
    }();
    return holder->models;
}

QString promptOfTokens(int n) {
    const QStringList words = {QStringLiteral("it"),    QStringLiteral("is"),          QStringLiteral("a"),
                               QStringLiteral("truth"), QStringLiteral("universally"), QStringLiteral("acknowledged")};
    QStringList out;
    for (int i = 0; i < n; ++i)
        out << words[i % words.size()];
    return out.join(QLatin1Char(' '));
}

} // namespace gwb::app::test
