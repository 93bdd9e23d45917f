// PyTorch parity: for each family, tests/python/parity_<family>.py builds the family's model
// from model-spec.md with its own module names, saves random weights the way the family saves
// them, and records logits for prompts of length 1 (t = 0 alone), 5, 18 (past the largest
// offset 16) and Lmax = 40. We import the file and require max |ours - PyTorch| < 1e-4.
// Skipped with a message when no python3 with torch is found.

#include "gwb/engine/import.h"
#include "model_impl.h"
#include "python_runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>

#include <unistd.h>

namespace gwb::engine {
namespace {

struct Case {
    std::string family, kind, format, dtype;
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << c.family << " " << c.kind << " " << c.format << " " << c.dtype;
}

std::string caseName(const testing::TestParamInfo<Case>& info) {
    return info.param.family + "_" + info.param.kind + "_" + info.param.format + "_" + info.param.dtype;
}

/// Logits (T x V, row-major) of `ids` through the imported model in eval mode.
std::vector<float> logits(const Model& model, const std::vector<int64_t>& ids) {
    torch::NoGradGuard noGrad;
    auto& net = *model.impl().net;
    net.eval();
    const torch::Tensor x = torch::tensor(ids, torch::kLong).view({1, -1}).to(model.impl().device);
    const torch::Tensor y = net.forward(x).to(torch::kCPU).contiguous();
    return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

/// The folder holding every case, generated once by parity_all.py (one torch start-up) and
/// shared by the test processes ctest starts: named after the scripts' sizes and times, built
/// in a private folder and renamed into place, so parallel runs never see a half-written one.
std::optional<std::filesystem::path> casesFolder(const std::string& python) {
    namespace fs = std::filesystem;
    static std::optional<fs::path> cached;
    if (cached) return cached;
    uint64_t key = 1469598103934665603ull;
    for (const auto& e : fs::directory_iterator(GWB_PYTHON_DIR)) {
        if (e.path().filename().string().rfind("parity_", 0) != 0) continue;
        const uint64_t parts[2] = {static_cast<uint64_t>(e.file_size()),
                                   static_cast<uint64_t>(e.last_write_time().time_since_epoch().count())};
        for (uint64_t v : parts)
            key = (key ^ v) * 1099511628211ull;
    }
    const fs::path dir = fs::temp_directory_path() / ("gwb_parity_cases_" + std::to_string(key));
    if (!fs::exists(dir)) {
        const fs::path tmp = dir.string() + ".tmp" + std::to_string(::getpid());
        fs::remove_all(tmp);
        const std::string cmd = "cd '" GWB_PYTHON_DIR "' && '" + python + "' parity_all.py '" + tmp.string() + "'";
        if (!test::runQuiet(cmd)) return std::nullopt;
        std::error_code ec;
        fs::rename(tmp, dir, ec);
        if (ec) fs::remove_all(tmp); // another process won the race: use its folder
    }
    cached = dir;
    return cached;
}

class Parity : public testing::TestWithParam<Case> {};

TEST_P(Parity, LogitsMatchPyTorch) {
    const Case& c = GetParam();
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: PyTorch parity skipped";
    const auto cases = casesFolder(*py);
    ASSERT_TRUE(cases) << "parity_all.py failed";
    const auto dir = *cases / (c.family + "_" + c.kind + "_" + c.format + "_" + c.dtype);
    const auto expected = nlohmann::json::parse(std::ifstream((dir / "expected.json").string()));
    const std::string checkpoint = (dir / (c.format == "pt" ? "model.pt" : "model.safetensors")).string();

    ImportOptions options;
    options.expectedKind = c.kind == "grassmann" ? ModelKind::Grassmann : ModelKind::Transformer;
    const ImportedModel imported = importCheckpoint(checkpoint, options);
    EXPECT_EQ(layoutName(imported.report.layout), c.family);
    const ModelConfig& cfg = imported.model.config();
    EXPECT_EQ(cfg.vocabSize, 50);
    EXPECT_EQ(cfg.dModel, 16);
    EXPECT_EQ(cfg.nLayers, 2);
    EXPECT_EQ(cfg.maxLen, 40);
    EXPECT_EQ(cfg.dFF, 64);
    if (c.kind == "grassmann") {
        EXPECT_EQ(cfg.reduced, 4);
    }

    double worst = 0.0;
    for (size_t p = 0; p < expected["prompts"].size(); ++p) {
        const auto ids = expected["prompts"][p].get<std::vector<int64_t>>();
        const auto want = expected["logits"][p].get<std::vector<float>>();
        const auto got = logits(imported.model, ids);
        ASSERT_EQ(got.size(), want.size());
        double diff = 0.0;
        for (size_t i = 0; i < got.size(); ++i)
            diff = std::max(diff, static_cast<double>(std::abs(got[i] - want[i])));
        EXPECT_LT(diff, 1e-4) << "prompt of length " << ids.size();
        worst = std::max(worst, diff);
    }
    // Negative control: a different offset schedule must change the logits, so the comparison
    // above can fail.
    if (c.kind == "grassmann") {
        options.offsetSchedule = "3";
        const ImportedModel wrong = importCheckpoint(checkpoint, options);
        const auto ids = expected["prompts"][3].get<std::vector<int64_t>>();
        const auto want = expected["logits"][3].get<std::vector<float>>();
        const auto got = logits(wrong.model, ids);
        double diff = 0.0;
        for (size_t i = 0; i < got.size(); ++i)
            diff = std::max(diff, static_cast<double>(std::abs(got[i] - want[i])));
        EXPECT_GT(diff, 1e-2) << "the offset schedule does not reach the logits";
    }
    std::cout << "[          ] " << c.family << " " << c.kind << " (" << c.format << ", " << c.dtype
              << "): max |logit diff| = " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(Families, Parity,
                         testing::Values(Case{"grasslm", "grassmann", "pt", "float32"},
                                         Case{"grasslm", "transformer", "pt", "float32"},
                                         Case{"alphaxiv", "grassmann", "pt", "float32"},
                                         Case{"alphaxiv", "transformer", "pt", "float32"},
                                         Case{"kanenorman", "grassmann", "pt", "float32"},
                                         Case{"kanenorman", "transformer", "pt", "float32"},
                                         Case{"grasslm", "grassmann", "safetensors", "bfloat16"},
                                         Case{"alphaxiv", "grassmann", "pt", "float16"},
                                         Case{"kanenorman", "grassmann", "safetensors", "float32"}),
                         caseName);

} // namespace
} // namespace gwb::engine
