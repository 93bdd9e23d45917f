// gwb import with a config found beside the checkpoint (config.json, a run folder's nested
// arguments, Hydra's .hydra/config.yaml): what it says is applied with its source, checked
// against the tensor shapes and overridden by the command line; the layouts' config rules (GrassLM
// before its causality fix, its offsets, Arledge's ignored fields, youdie006's two code
// generations) are reported as the family's code runs them.

#include "gwb/engine/import.h"
#include "import/import_config.h"
#include "import/layout_file.h"
#include "import_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gwb::engine {
namespace {

using namespace import_test;

TEST(Import, ConfigBesideTheCheckpointIsReadAndChecked) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("kanenorman", ModelKind::Grassmann), 13);
    const Tensors t = familyTensors(ref, "kanenorman");
    // An HF-style folder: config.json + model.safetensors, opened by its folder name.
    const std::filesystem::path folder = dir.file("hf");
    std::filesystem::create_directories(folder);
    writeFile(dir, t, "hf/model.safetensors");
    std::ofstream((folder / "config.json").string())
        << R"({"vocab_size": 50, "d_model": 16, "n_layers": 2, "pre_norm": true, "lags": [1, 3]})";
    const auto m = importCheckpoint(folder.string());
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{1, 3}, {1, 3}}));
    std::string notes;
    for (const auto& n : m.report.notes)
        notes += n + "\n";
    for (const auto& n : m.report.flags)
        notes += n + "\n";
    EXPECT_NE(notes.find("norm=pre (from config.json: pre_norm)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("offsets=1,3 (from config.json: lags)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("sizes V=50, d=16, N=2 agree"), std::string::npos) << notes;
    // The command line wins over the config.
    ImportOptions o;
    o.norm = NormPlacement::Post;
    o.empty = EmptyRule::Zero;
    EXPECT_EQ(importCheckpoint(folder.string(), o).model.config().norm, NormPlacement::Post);
    EXPECT_EQ(importCheckpoint(folder.string(), o).model.config().empty, EmptyRule::Zero);
    // A config that belongs to other weights is refused, naming the field.
    std::ofstream((folder / "config.json").string()) << R"({"architecture": {"d_model": 32}})";
    expectImportError([&] { importCheckpoint(folder.string()); },
                      "config.json: architecture.d_model says 32 but the tensor shapes give d = 16");
    std::ofstream((folder / "config.json").string()) << R"({"pre_norm": "maybe"})";
    expectImportError([&] { importCheckpoint(folder.string()); }, "pass --norm pre|post");

    // GrassLM: config.json's window_schedule is not what its code runs (see the next test).
    const Model gl = randomModel(tinyConfig("grasslm", ModelKind::Grassmann), 14);
    std::filesystem::create_directories(dir.file("grasslm"));
    writeFile(dir, familyTensors(gl, "grasslm"), "grasslm/best_model.safetensors");
    std::ofstream(dir.file("grasslm/config.json")) << R"({"architecture": {"window_schedule": [2, 8]}})";
    const auto g = importCheckpoint(dir.file("grasslm/best_model.safetensors"));
    EXPECT_EQ(g.model.config().layerOffsets, (std::vector<std::vector<int>>{{1}, {1}}));
    EXPECT_EQ(g.model.config().empty, EmptyRule::Zero);
}

TEST(Import, GrassLMBeforeItsCausalityFixIsCautioned) {
    // GrassLM's layers.py paired t with t+D (a look-ahead) until 3df2a60 (2026-02-14); its
    // train.py saved args without model_name until 472db8d, later that day. A file whose args
    // lack model_name may come from the look-ahead code, which gwb does not run: the report says
    // so. With model_name (the code after the fix) nothing is said.
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model gl = randomModel(c, 22);
    TempDir dir;
    std::filesystem::create_directories(dir.file("old"));
    std::filesystem::create_directories(dir.file("new"));
    writeFile(dir, familyTensors(gl, "grasslm"), "old/best_model.pt");
    writeFile(dir, familyTensors(gl, "grasslm"), "new/best_model.pt");
    std::ofstream(dir.file("old/config.json")) << R"({"lr": 0.0003, "n_layers": 2})";
    std::ofstream(dir.file("new/config.json")) << R"({"lr": 0.0003, "n_layers": 2, "model_name": "GrassLM-10M"})";
    auto notes = [](const ImportedModel& m) {
        std::string all;
        for (const auto& n : m.report.notes)
            all += n + "\n";
        return all;
    };
    const auto old = importCheckpoint(dir.file("old/best_model.pt"));
    EXPECT_NE(notes(old).find("caution, config rule of the grasslm layout (no model_name in the found config)"),
              std::string::npos)
        << notes(old);
    EXPECT_NE(notes(old).find("paired each token t with t+D"), std::string::npos) << notes(old);
    const auto now = importCheckpoint(dir.file("new/best_model.pt"));
    EXPECT_EQ(notes(now).find("caution"), std::string::npos) << notes(now);
    // Nothing else changes: the same model either way.
    const std::vector<int64_t> ids{3, 1, 4, 1, 5};
    EXPECT_EQ(logits(old.model, ids), logits(now.model, ids));
}

TEST(Import, GrassLMOffsetsFollowItsOwnRuleAndItsModelFolder) {
    // GrassLM's rule (python/grasslm/model.py): a built-in list for 6 and 12 layers, else [1] * N.
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 3), (std::vector<std::vector<int>>{{1}, {1}, {1}}));
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 2), (std::vector<std::vector<int>>{{1}, {1}}));
    // Its trained model: models/NAME/config.json, weights in models/NAME/checkpoints/best_model.pt.
    // train.py builds GrassLM() without window_schedule (so the built-in [1, 1] ran) but writes
    // [1,2,4,8,12,16][:N] = [1, 2] into config.json: the code is followed and the file's list is
    // reported, not applied.
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model gl = randomModel(c, 21);
    TempDir dir;
    std::filesystem::create_directories(dir.file("models/tiny/checkpoints"));
    writeFile(dir, familyTensors(gl, "grasslm"), "models/tiny/checkpoints/best_model.pt");
    std::ofstream(dir.file("models/tiny/config.json"))
        << R"({"name": "tiny", "architecture": {"vocab_size": 50, "n_layers": 2, "window_schedule": [1, 2]}})";
    auto notes = [](const ImportedModel& m) {
        std::string all;
        for (const auto& n : m.report.notes)
            all += n + "\n";
        return all;
    };
    for (const std::string& given : {dir.file("models/tiny/checkpoints/best_model.pt"), dir.file("models/tiny")}) {
        const auto m = importCheckpoint(given);
        EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets) << given;
        const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
        EXPECT_EQ(logits(m.model, ids), logits(gl, ids)) << given;
        EXPECT_NE(notes(m).find("says [1,2], but GrassLM's train.py, evaluate.py and generate.py build GrassLM() "
                                "without window_schedule"),
                  std::string::npos)
            << notes(m);
        EXPECT_NE(notes(m).find("--offsets per_layer:1,2 applies the file's list"), std::string::npos) << notes(m);
    }
    // The option applies the file's list when a user's own script did pass it.
    ImportOptions fileList;
    fileList.offsetSchedule = "per_layer:1,2";
    EXPECT_EQ(importCheckpoint(dir.file("models/tiny"), fileList).model.config().layerOffsets,
              (std::vector<std::vector<int>>{{1}, {2}}));
    // A list of another length (train.py writes 6 entries for 12 layers) is reported the same way.
    std::ofstream(dir.file("models/tiny/config.json")) << R"({"architecture": {"window_schedule": [1, 2, 4]}})";
    const auto three = importCheckpoint(dir.file("models/tiny"));
    EXPECT_EQ(three.model.config().layerOffsets, c.layerOffsets);
    EXPECT_NE(notes(three).find("says [1,2,4], but"), std::string::npos) << notes(three);
    // A list that is what the code runs is said to agree.
    std::ofstream(dir.file("models/tiny/config.json")) << R"({"architecture": {"window_schedule": [1, 1]}})";
    EXPECT_NE(notes(importCheckpoint(dir.file("models/tiny"))).find("[1,1] agrees with what grasslm runs for 2 layers"),
              std::string::npos);
    // Without a config the default is reported as a default, with the option that overrides it.
    TempDir bare;
    const auto d = importCheckpoint(writeFile(bare, familyTensors(gl, "grasslm")));
    std::string flags;
    for (const auto& f : d.report.flags)
        flags += f + "\n";
    EXPECT_NE(flags.find("offsets=1 (default of the grasslm layout for 2 layers; --offsets overrides)"),
              std::string::npos)
        << flags;
    EXPECT_NE(flags.find("norm=post (from the grasslm layout)"), std::string::npos) << flags;
}

const char* kYoudiePre = "model:\n  tensor_lifting_strategy: grassmann\n  num_layers: 2\n  lags:\n  - 1\n  - 2\n"
                         "  - 4\n  pre_norm: true\n  weight_tying: true\ndata:\n  max_context_len: 40\n";

TEST(Import, YoudieHydraConfigSetsPreNormAndLags) {
    // youdie006's pre_norm: true is its pre_mix arrangement; the lags come from the YAML list.
    ModelConfig c = tinyConfig("youdie006", ModelKind::Grassmann);
    c.norm = NormPlacement::PreMix;
    c.layerOffsets = {{1, 2, 4}, {1, 2, 4}};
    const Model ref = randomModel(c, 32);
    TempDir dir;
    std::filesystem::create_directories(dir.file("run/.hydra"));
    std::ofstream(dir.file("run/.hydra/config.yaml")) << kYoudiePre;
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "youdie006"), "run/best.safetensors"));
    EXPECT_EQ(m.report.layout, "youdie006");
    EXPECT_EQ(m.model.config().norm, NormPlacement::PreMix);
    EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets);
    std::string flags;
    for (const auto& f : m.report.flags)
        flags += f + "\n";
    EXPECT_NE(flags.find("norm=pre_mix (from .hydra/config.yaml: model.pre_norm)"), std::string::npos) << flags;
    EXPECT_NE(flags.find("offsets=1,2,4 (from .hydra/config.yaml: model.lags)"), std::string::npos) << flags;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // Without the Hydra folder the same weights are kanenorman's (same keys), and the report
    // names youdie006 as the runner-up that needs its config.
    TempDir bare;
    const auto k = importCheckpoint(writeFile(bare, familyTensors(ref, "youdie006")));
    EXPECT_EQ(k.report.layout, "kanenorman");
    ASSERT_EQ(k.report.detection.size(), 2u);
    EXPECT_NE(k.report.detection[1].find(".hydra/config.yaml not beside the checkpoint"), std::string::npos)
        << k.report.detection[1];
    // Lags repeated unevenly would weigh some offsets more: refused, not averaged wrongly.
    std::ofstream(dir.file("run/.hydra/config.yaml")) << "model:\n  lags: [1, 1, 2]\n";
    expectImportError([&] { importCheckpoint(dir.file("run/best.safetensors")); }, "repeated unevenly");
}

std::string reportText(const ImportedModel& m) {
    std::string s;
    for (const auto& n : m.report.notes)
        s += n + "\n";
    for (const auto& f : m.report.flags)
        s += f + "\n";
    return s;
}

// Issue 30: Arledge's train.py saves TrainingConfig's defaults (reduced_dim 64, window_sizes
// [1,2,4,8,16,32]) with a grassmann_v4 model that its create_model built with r = 32 and
// [1,2,4,8,12,16]. The alphaxiv layout's config rule says so: those fields are reported, not
// applied. Without the rule the same config is refused, naming both values.
TEST(Import, ConfigFieldsTheFamilysCodeIgnoresAreReportedNotApplied) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 41);
    std::filesystem::create_directories(dir.file("run"));
    const std::string path = writeFile(dir, familyTensors(ref, "alphaxiv"), "run/best_model.safetensors");
    std::ofstream(dir.file("run/config.json"))
        << R"({"model_type": "grassmann_v4", "model_dim": 16, "num_layers": 2, "reduced_dim": 64,
              "window_sizes": [1, 2, 4, 8, 16, 32], "num_heads": 8, "ff_dim": 64, "max_seq_len": 40})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.model.config().layerOffsets,
              (std::vector<std::vector<int>>{{1, 2, 4, 8, 12, 16}, {1, 2, 4, 8, 12, 16}}));
    const std::string report = reportText(m);
    EXPECT_NE(report.find("config rule of the alphaxiv layout (config.json: model_type = grassmann_v4)"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("config.json: reduced_dim says 64: not applied"), std::string::npos) << report;
    EXPECT_NE(report.find("config.json: window_sizes says 1,2,4,8,16,32: not applied"), std::string::npos) << report;
    EXPECT_NE(report.find("offsets=1,2,4,8,12,16 (what alphaxiv's code runs here"), std::string::npos) << report;
    EXPECT_NE(report.find("sizes d=16, N=2, d_ff=64, Lmax=40 agree"), std::string::npos) << report;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // Another model_type: nothing says the field is ignored, so r = 64 contradicts the weights.
    std::ofstream(dir.file("run/config.json")) << R"({"model_type": "grassmann", "reduced_dim": 64})";
    expectImportError([&] { importCheckpoint(path); },
                      "config.json: reduced_dim says 64 but the tensor shapes give r = 4: the config does not belong");
    // Sizes under the names other families use are checked too.
    std::ofstream(dir.file("run/config.json")) << R"({"model_dim": 32})";
    expectImportError([&] { importCheckpoint(path); },
                      "config.json: model_dim says 32 but the tensor shapes give d = 16");
    std::ofstream(dir.file("run/config.json")) << R"({"ff_dim": 128})";
    expectImportError([&] { importCheckpoint(path); }, "ff_dim says 128 but the tensor shapes give d_ff = 64");
    std::ofstream(dir.file("run/config.json")) << R"({"model": {"d_low": 8}})";
    expectImportError([&] { importCheckpoint(path); }, "model.d_low says 8 but the tensor shapes give r = 4");
}

// Arledge's train_exp4_ddp.py: bare state dicts in run_dir/checkpoints/, and run_dir/config.json
// keeps the arguments under "config", with --window-sizes as the string "1,3".
TEST(Import, NestedConfigSectionsAndListsWrittenAsStrings) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 42);
    std::filesystem::create_directories(dir.file("run/checkpoints"));
    const std::string path =
        writeFile(dir, familyTensors(ref, "alphaxiv"), "run/checkpoints/grassmann_best.safetensors");
    std::ofstream(dir.file("run/config.json"))
        << R"({"run_id": "20260101_000000", "config": {"model": "both", "model_dim": 16, "reduced_dim": 4,
              "window_sizes": "1,3", "max_seq_len": 40}, "env": {"rank": 0}})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{1, 3}, {1, 3}}));
    const std::string report = reportText(m);
    EXPECT_NE(report.find("offsets=1,3 (from config.json: config.window_sizes)"), std::string::npos) << report;
    EXPECT_NE(report.find("sizes d=16, Lmax=40, r=4 agree"), std::string::npos) << report;
    // Lists in other spellings.
    EXPECT_EQ(normalizeListText("1,3,5"), "1,3,5");
    EXPECT_EQ(normalizeListText(" [1, 3, 5] "), "1,3,5");
    EXPECT_EQ(normalizeListText("(2, 4)"), "2,4");
    EXPECT_EQ(normalizeListText("1 2  4"), "1,2,4");
    EXPECT_EQ(normalizeListText("64"), "64");
    for (const char* notAList : {"1,,3", "1,3,", ",1", "a,b", "1.5,2", "-1,2", "[]", "both", "1;2"})
        EXPECT_EQ(normalizeListText(notAList), notAList) << notAList;
    // A head count that cannot divide d is refused with both values.
    const Model t = randomModel(tinyConfig("alphaxiv", ModelKind::Transformer), 43);
    std::filesystem::create_directories(dir.file("t"));
    const std::string tp = writeFile(dir, familyTensors(t, "alphaxiv"), "t/model.safetensors");
    std::ofstream(dir.file("t/config.json")) << R"({"num_heads": 3})";
    expectImportError([&] { importCheckpoint(tp); },
                      "config.json: num_heads says 3 heads, but the tensor shapes give d = 16");
}

// Arledge's train.py --model gpt2: the GPT2 baseline (its own layout), heads from the config.
TEST(Import, ArledgeGpt2BaselineOpensWithTheConfigsHeads) {
    ModelConfig c = tinyConfig("arledge-gpt2", ModelKind::Transformer);
    c.nHeads = 2;
    const Model ref = randomModel(c, 44);
    TempDir dir;
    Tensors t = familyTensors(ref, "arledge-gpt2");
    for (int l = 0; l < 2; ++l) { // the causal_mask buffer: 1 x 1 x Lmax x Lmax lower-triangular ones
        FloatArray mask = FloatArray::zeros({1, 1, 40, 40});
        for (int i = 0; i < 40; ++i)
            for (int j = 0; j <= i; ++j)
                mask.data[static_cast<size_t>(i * 40 + j)] = 1.0f;
        t["blocks." + std::to_string(l) + ".attention.causal_mask"] = mask;
    }
    std::filesystem::create_directories(dir.file("run"));
    const std::string path = writeFile(dir, t, "run/best_model.safetensors");
    std::ofstream(dir.file("run/config.json")) << R"({"model_type": "gpt2", "num_heads": 2, "model_dim": 16})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.report.layout, "arledge-gpt2");
    EXPECT_EQ(m.model.config().nHeads, 2);
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
}

// youdie006's current code (e8aa8c8 and later; its configs carry layerwise_lags): pre_norm true
// puts a residual around the mixer (pre), and layerwise_lags gives layer i the lag lags[i].
// A config without layerwise_lags is the initial code's: pre_mix (YoudieHydraConfigSetsPreNormAndLags).
TEST(Import, YoudieCurrentCodeIsToldApartByItsConfig) {
    ModelConfig c = tinyConfig("youdie006", ModelKind::Grassmann);
    c.norm = NormPlacement::Pre;
    c.layerOffsets = {{1}, {2}};
    const Model ref = randomModel(c, 45);
    TempDir dir;
    std::filesystem::create_directories(dir.file("run/.hydra"));
    std::ofstream(dir.file("run/.hydra/config.yaml"))
        << "model:\n  tensor_lifting_strategy: grassmann\n  num_layers: 2\n  d_model: 16\n  d_low: 4\n"
           "  expansion_ratio: 4\n  lags:\n  - 1\n  - 2\n  pre_norm: true\n  weight_tying: true\n"
           "  layerwise_lags: true\n  use_custom_init: false\ndata:\n  max_context_len: 40\n";
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "youdie006"), "run/best.safetensors"));
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets);
    const std::string report = reportText(m);
    EXPECT_EQ(report.find("config rule"), std::string::npos) << report;
    EXPECT_NE(report.find("d_ff/d=4"), std::string::npos) << report;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // The same weights with the initial code's config (no layerwise_lags): pre_mix, said why.
    std::ofstream(dir.file("run/.hydra/config.yaml")) << kYoudiePre;
    const auto old = importCheckpoint(dir.file("run/best.safetensors"));
    EXPECT_EQ(old.model.config().norm, NormPlacement::PreMix);
    EXPECT_NE(reportText(old).find("youdie006's initial code (8aa6e5bc"), std::string::npos) << reportText(old);
}

} // namespace
} // namespace gwb::engine
