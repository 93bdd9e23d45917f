// The bundled models (resources/models) against their model card: both load, are the size-matched
// pair the card describes, and reproduce the card's perplexity on a fixed slice of the validation
// split (within 2%). Skips with a message when ../shared/data is absent (a user's fresh clone).

#include "gwb/engine/model.h"
#include "gwb/engine/train.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kModels = fs::path(GWB_SOURCE_DIR) / "resources" / "models";
const fs::path kAusten = fs::path(GWB_SHARED_DIR) / "data" / "austen";

json referenceMetrics() {
    std::ifstream in(kModels / "reference-metrics.json");
    if (!in) throw std::runtime_error("cannot read " + (kModels / "reference-metrics.json").string());
    return json::parse(in);
}

/// Lines [first, first + count) of the validation part (last 10% of lines) of one novel, written
/// to a temporary file: the split rule of scripts/train-defaults (first n*9/10 lines train).
fs::path validationSlice(const std::string& novel, int64_t first, int64_t count) {
    std::ifstream in(kAusten / novel);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    const auto ntrain = static_cast<int64_t>(lines.size()) * 9 / 10;
    const fs::path out = fs::temp_directory_path() / ("gwb-bundled-slice-" + novel);
    std::ofstream os(out);
    for (int64_t i = ntrain + first; i < std::min<int64_t>(ntrain + first + count, lines.size()); ++i)
        os << lines[static_cast<size_t>(i)] << '\n';
    return out;
}

} // namespace

TEST(BundledModels, LoadAndAreSizeMatched) {
    const auto g =
        gwb::engine::Model::load((kModels / "grassmann-austen.gwb").string(), "cpu", gwb::engine::ModelKind::Grassmann);
    const auto t = gwb::engine::Model::load((kModels / "transformer-austen.gwb").string(), "cpu",
                                            gwb::engine::ModelKind::Transformer);
    ASSERT_TRUE(g.tokenizer());
    ASSERT_TRUE(t.tokenizer());
    EXPECT_EQ(g.tokenizer()->serialize(), t.tokenizer()->serialize()) << "one shared tokenizer";
    const double pg = static_cast<double>(g.parameterCount());
    const double pt = static_cast<double>(t.parameterCount());
    EXPECT_LT(std::abs(pg - pt) / pt, 0.01) << pg << " vs " << pt;
    const json ref = referenceMetrics();
    EXPECT_EQ(g.parameterCount(), ref["grassmann"]["parameters"].get<int64_t>());
    EXPECT_EQ(t.parameterCount(), ref["transformer"]["parameters"].get<int64_t>());
}

TEST(BundledModels, PerplexityMatchesModelCard) {
    if (!fs::exists(kAusten))
        GTEST_SKIP() << "../shared/data/austen is absent: the bundled models' perplexity check needs the corpus";
    const json ref = referenceMetrics();
    const json& slice = ref["slice"];
    const fs::path file = validationSlice(slice["novel"].get<std::string>(), slice["first_line"].get<int64_t>(),
                                          slice["lines"].get<int64_t>());
    for (const char* kind : {"grassmann", "transformer"}) {
        const auto model = gwb::engine::Model::load((kModels / (std::string(kind) + "-austen.gwb")).string(), "cpu");
        const auto r = gwb::engine::evaluate(model, {file.string()});
        const double expected = ref[kind]["slice_perplexity"].get<double>();
        EXPECT_NEAR(r.perplexity, expected, 0.02 * expected) << kind;
        EXPECT_GT(r.tokens, 1000) << "the slice must be long enough to be a stable check";
    }
    fs::remove(file);
}
