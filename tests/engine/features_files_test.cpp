// Sparse dictionary files (gwb/engine/features.h, features/dictionary_config.cpp): they round trip
// in SAELens 6.x's layout, SAELens's own files (its trainer's options, 5.x's flat layout) are read
// as SAELens computes them, and broken or foreign ones are refused by name. (SAELens's own loader
// and trainer judge the same files in tests/python/test_saelens_dictionaries.py.)

#include "engine_test_util.h"
#include "features_test_util.h"

#include "gwb/engine/features.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace gwb::engine;
using gwb::engine::test::smallDictionary;

TEST(Features, FilesRoundTripAndBrokenOnesAreRefusedByName) {
    test::TempDir dir;
    Dictionary d = smallDictionary(4, 6, "topk", 3);
    d.config.modelName = "m";
    d.config.corpus = {"a.txt"};
    const std::string folder = dir.file("sae");
    saveDictionary(d, folder);
    const Dictionary back = loadDictionary(folder);
    EXPECT_EQ(back.config.site, "resid.1");
    EXPECT_EQ(back.config.k, 3);
    EXPECT_EQ(back.config.architecture, "topk");
    EXPECT_EQ(back.wEnc.data, d.wEnc.data);
    EXPECT_EQ(back.wDec.data, d.wDec.data);
    EXPECT_EQ(back.bEnc.data, d.bEnc.data);
    EXPECT_EQ(back.bDec.data, d.bDec.data);
    // Not a folder, broken JSON, a wrong shape, k beyond d_sae: each names the file and the problem.
    auto message = [](const std::string& path) {
        try {
            loadDictionary(path);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_NE(message(dir.file("nothing")).find("not a dictionary folder"), std::string::npos);
    {
        std::ofstream(folder + "/cfg.json") << "{\"d_in\": 4, \"d_sae\": 7, \"hook_name\": \"resid.1\", "
                                               "\"activation_fn_str\": \"topk\", \"k\": 3}";
    }
    const std::string shape = message(folder);
    EXPECT_NE(shape.find("W_enc has shape [4, 6], expected [4, 7]"), std::string::npos) << shape;
    {
        std::ofstream(folder + "/cfg.json") << "{\"d_in\": 4, \"d_sae\": 6, \"hook_name\": \"resid.1\", "
                                               "\"activation_fn_str\": \"topk\", \"k\": 9}";
    }
    EXPECT_NE(message(folder).find("k = 9 is outside 1..6"), std::string::npos) << message(folder);
    // A count written as a float out of any integer's range is refused by name (converting it was
    // undefined: the fuzzer's finding); 4.0 for 4, as some Python writers put a count, is read.
    { std::ofstream(folder + "/cfg.json") << "{\"d_in\": 8.9e128, \"d_sae\": 6, \"hook_name\": \"resid.1\"}"; }
    EXPECT_NE(message(folder).find("'d_in' is 8.9e+128, not an integer"), std::string::npos) << message(folder);
    {
        std::ofstream(folder + "/cfg.json") << "{\"d_in\": 4.0, \"d_sae\": 6, \"hook_name\": \"resid.1\", "
                                               "\"activation_fn_str\": \"topk\", \"k\": 3.0}";
    }
    EXPECT_EQ(loadDictionary(folder).config.k, 3);
    { std::ofstream(folder + "/cfg.json") << "{ broken"; }
    EXPECT_NE(message(folder).find("cfg.json: not valid JSON"), std::string::npos) << message(folder);
}

TEST(Features, SaeLensSixLayoutIsWrittenAndItsTrainersOptionsAreRead) {
    test::TempDir dir;
    const std::string folder = dir.file("sae");
    saveDictionary(smallDictionary(4, 6, "topk", 3), folder);
    std::ifstream in(folder + "/cfg.json");
    const nlohmann::json cfg = nlohmann::json::parse(in);
    EXPECT_EQ(cfg["architecture"], "topk");
    EXPECT_EQ(cfg["k"], 3);
    EXPECT_EQ(cfg["metadata"]["hook_name"], "resid.1");
    EXPECT_EQ(cfg["metadata"]["sae_lens_version"], "6.0.0");
    EXPECT_FALSE(cfg.contains("hook_name")); // 6.x: the site is metadata, not a field of the architecture
    // A SAELens TopK SAE as its trainer saves it by default: decoder-norm rescaling, and here no
    // b_dec subtracted from the input. Read: z = topk(relu((x W_enc + b_enc) * n)), x^ = (z / n) W_dec + b_dec.
    auto writeCfg = [&](const std::string& extra) {
        std::ofstream(folder + "/cfg.json") << "{\"architecture\": \"topk\", \"d_in\": 4, \"d_sae\": 6, \"k\": 2, "
                                               "\"metadata\": {\"sae_lens_version\": \"6.54.12\", \"hook_name\": "
                                               "\"resid.1\", \"model_name\": \"m\"}"
                                            << extra << "}";
    };
    writeCfg(", \"rescale_acts_by_decoder_norm\": true, \"apply_b_dec_to_input\": false");
    const Dictionary raw = smallDictionary(4, 6, "topk", 2);
    const Dictionary d = loadDictionary(folder);
    EXPECT_FALSE(d.config.applyBDecToInput);
    EXPECT_EQ(d.config.modelName, "m");
    const FloatArray x({1, 4}, {1.0f, -0.5f, 0.25f, 2.0f});
    std::vector<double> pre(6), norm(6);
    for (int64_t f = 0; f < 6; ++f) {
        for (int64_t i = 0; i < 4; ++i)
            norm[f] += std::pow(raw.wDec.at2(f, i), 2);
        norm[f] = std::sqrt(norm[f]);
        pre[f] = raw.bEnc.data[static_cast<size_t>(f)];
        for (int64_t i = 0; i < 4; ++i)
            pre[f] += x.at2(0, i) * raw.wEnc.at2(i, f);
        pre[f] = std::max(0.0, pre[f] * norm[f]);
    }
    std::vector<double> sorted = pre;
    std::sort(sorted.rbegin(), sorted.rend());
    const FloatArray z = d.encode(x), xhat = d.decode(z);
    std::vector<double> expectHat(4);
    for (int64_t f = 0; f < 6; ++f) {
        const double zf = pre[f] >= sorted[1] ? pre[f] : 0.0;
        EXPECT_NEAR(z.at2(0, f), zf, 1e-5) << f;
        for (int64_t i = 0; i < 4; ++i)
            expectHat[i] += zf / norm[f] * raw.wDec.at2(f, i);
    }
    for (int64_t i = 0; i < 4; ++i)
        EXPECT_NEAR(xhat.at2(0, i), expectHat[i] + raw.bDec.data[static_cast<size_t>(i)], 1e-5) << i;
    // What gwb cannot compute as SAELens does is refused by name.
    auto message = [&](const std::string& extra) {
        writeCfg(extra);
        try {
            loadDictionary(folder);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_NE(message(", \"architecture\": \"jumprelu\"").find("architecture 'jumprelu' is not one gwb reads"),
              std::string::npos);
    EXPECT_NE(message(", \"normalize_activations\": \"layer_norm\"").find("normalize_activations is 'layer_norm'"),
              std::string::npos);
}

// Issue 67: cfg.json's corpus paths travel. They are stored relative to the dictionary's folder
// (gwb.corpus_paths says so) with the absolute ones beside them: a project moved whole, or the
// dictionary folder copied alone, still finds its training files. A file from before that rule
// (paths relative to wherever training ran) is read beside its folder, where `--out DIR` ran.
TEST(Features, CorpusPathsTravelWithTheDictionaryFolder) {
    namespace fs = std::filesystem;
    test::TempDir dir;
    const fs::path project = dir.path / "project";
    fs::create_directories(project / "corpus");
    std::ofstream(project / "corpus" / "a.txt") << "It is a truth universally acknowledged.\n";
    const std::string corpus = fs::weakly_canonical(project / "corpus" / "a.txt").string();
    Dictionary d = smallDictionary(4, 6, "topk", 3);
    d.config.corpus = {corpus};
    saveDictionary(d, (project / "sae").string());
    auto readCfg = [](const fs::path& folder) {
        std::ifstream in(folder / "cfg.json");
        return nlohmann::json::parse(in);
    };
    const nlohmann::json cfg = readCfg(project / "sae");
    EXPECT_EQ(cfg["gwb"]["corpus"], nlohmann::json::array({"../corpus/a.txt"}));
    EXPECT_TRUE(cfg["gwb"].contains("corpus_paths"));
    EXPECT_EQ(cfg["gwb"]["corpus_absolute"], nlohmann::json::array({corpus}));
    EXPECT_EQ(loadDictionary((project / "sae").string()).config.corpus, std::vector<std::string>{corpus});

    // The dictionary folder copied alone: the absolute paths find the files.
    fs::create_directories(dir.path / "alone");
    fs::copy(project / "sae", dir.path / "alone" / "sae");
    EXPECT_EQ(loadDictionary((dir.path / "alone" / "sae").string()).config.corpus, std::vector<std::string>{corpus});

    // The project moved whole: the relative paths find the files.
    const fs::path moved = dir.path / "moved";
    fs::rename(project, moved);
    const std::string movedCorpus = fs::weakly_canonical(moved / "corpus" / "a.txt").string();
    EXPECT_EQ(loadDictionary((moved / "sae").string()).config.corpus, std::vector<std::string>{movedCorpus});

    // A file from before gwb.corpus_paths, trained from the project folder with --out sae.
    nlohmann::json old = readCfg(moved / "sae");
    old["gwb"].erase("corpus_paths");
    old["gwb"].erase("corpus_absolute");
    old["gwb"]["version"] = 2;
    old["gwb"]["corpus"] = nlohmann::json::array({"corpus/a.txt"});
    std::ofstream(moved / "sae" / "cfg.json") << old.dump(2);
    EXPECT_EQ(loadDictionary((moved / "sae").string()).config.corpus, std::vector<std::string>{movedCorpus});
}
