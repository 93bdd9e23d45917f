// Pairs files (JSONL and CSV: usable pairs, every unusable line with its number and reason) and
// the summary of a cell over pairs (mean without undefined values, n, bootstrap interval).
#include "gwb/engine/patch_pairs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace gwb::engine;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}

TEST(PatchPairs, JsonlKeepsUsableLinesAndSaysWhyTheOthersAreSkipped) {
    const std::string text =
        "{\"clean\": \"They laughed\", \"corrupt\": \"She laughed\", \"answer\": \"they\", "
        "\"wrong\": \"she\", \"template\": \"laugh\", \"id\": 7}\n"
        "\n"
        "{\"clean\": \"broken\n"
        "[1, 2]\n"
        "{\"clean\": \"a\", \"corrupt\": \"b\", \"answer\": \"c\"}\n"
        "{\"clean\": \"a\", \"corrupt\": \"b\", \"answer\": \"c\", \"wrong\": 3}\n"
        "{\"clean\": \"a\", \"corrupt\": \"b\", \"answer\": \"c\", \"wrong\": \"d\", \"position\": -2}\n"
        "{\"clean\": \"a\", \"corrupt\": \"b\", \"answer\": \"c\", \"wrong\": \"d\", \"position\": 1.5}\n"
        "{\"clean\": \"\xff\", \"corrupt\": \"b\", \"answer\": \"c\", \"wrong\": \"d\"}\n"
        "{\"clean\": \"a\", \"corrupt\": \"b\", \"answer\": \"c\", \"wrong\": \"d\", \"position\": 4}\r\n";
    const PairsFile f = parsePairs(text, false);
    EXPECT_EQ(f.format, "jsonl");
    ASSERT_EQ(f.pairs.size(), 2u);
    EXPECT_EQ(f.pairs[0].line, 1);
    EXPECT_EQ(f.pairs[0].clean, "They laughed");
    EXPECT_EQ(f.pairs[0].position, -1);
    EXPECT_EQ(f.pairs[0].tags.at("template"), "laugh");
    EXPECT_EQ(f.pairs[0].tags.at("id"), "7");
    EXPECT_EQ(f.pairs[1].line, 10);
    EXPECT_EQ(f.pairs[1].position, 4);
    ASSERT_EQ(f.skipped.size(), 7u);
    const std::vector<std::pair<int64_t, std::string>> want = {
        {3, "malformed JSON"}, {4, "not a JSON object"}, {5, "no \"wrong\" field"}, {6, "\"wrong\" is not a string"},
        {7, "\"position\""},   {8, "\"position\""},      {9, "not UTF-8"}};
    for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(f.skipped[k].line, want[k].first) << k;
        EXPECT_NE(f.skipped[k].reason.find(want[k].second), std::string::npos) << f.skipped[k].reason;
    }
    EXPECT_EQ(f.lines, 9); // the blank line is not a data line
}

TEST(PatchPairs, CsvWithQuotesAndTheSameFields) {
    const std::string text = "clean,corrupt,answer,wrong,position,note\r\n"
                             "\"They said \"\"no\"\", and\",\"She said \"\"no\"\", and\",they,she,,first\r\n"
                             "\"A, B\",C,d,e,2,\"two\nlines\"\n"
                             "x,y,z\n"
                             "a,b,c,d,oops,n\n";
    const PairsFile f = parsePairs(text, true);
    ASSERT_EQ(f.pairs.size(), 2u);
    EXPECT_EQ(f.pairs[0].clean, "They said \"no\", and");
    EXPECT_EQ(f.pairs[0].tags.at("note"), "first");
    EXPECT_EQ(f.pairs[1].clean, "A, B");
    EXPECT_EQ(f.pairs[1].position, 2);
    EXPECT_EQ(f.pairs[1].tags.at("note"), "two\nlines");
    ASSERT_EQ(f.skipped.size(), 2u);
    EXPECT_EQ(f.skipped[0].line, 5); // the quoted line break moved the lines on
    EXPECT_NE(f.skipped[0].reason.find("3 fields"), std::string::npos) << f.skipped[0].reason;
    EXPECT_EQ(f.skipped[1].line, 6);
    EXPECT_NE(f.skipped[1].reason.find("position"), std::string::npos);
    // A header without a needed column: every row says so.
    const PairsFile bad = parsePairs("clean,corrupt,answer\na,b,c\n", true);
    EXPECT_TRUE(bad.pairs.empty());
    ASSERT_EQ(bad.skipped.size(), 1u);
    EXPECT_NE(bad.skipped[0].reason.find("no column \"wrong\""), std::string::npos);
}

TEST(PatchPairs, SummaryLeavesUndefinedCellsOutAndItsIntervalsHoldTheMean) {
    // 4 pairs x 3 cells; cell 1 is undefined in two pairs, cell 2 in all.
    const std::vector<double> v = {1.0, 2.0, kNaN, 3.0, kNaN, kNaN, 5.0, 4.0, kNaN, 7.0, kNaN, kNaN};
    const CellSummary s = summarizeOverPairs(v, 4, 3, 2000, 11);
    EXPECT_DOUBLE_EQ(s.mean[0], 4.0);
    EXPECT_DOUBLE_EQ(s.mean[1], 3.0);
    EXPECT_TRUE(std::isnan(s.mean[2]));
    EXPECT_EQ(s.n, (std::vector<int64_t>{4, 2, 0}));
    for (int c = 0; c < 2; ++c) {
        EXPECT_LE(s.low[c], s.mean[c]);
        EXPECT_GE(s.high[c], s.mean[c]);
    }
    EXPECT_GE(s.low[0], 1.0);
    EXPECT_LE(s.high[0], 7.0);
    EXPECT_GE(s.low[1], 2.0);
    EXPECT_LE(s.high[1], 4.0);
    EXPECT_TRUE(std::isnan(s.low[2]));
    // Reproducible for a seed, different for another.
    const CellSummary again = summarizeOverPairs(v, 4, 3, 2000, 11);
    EXPECT_EQ(again.low[0], s.low[0]);
    EXPECT_EQ(again.high[0], s.high[0]);
    // One pair: the interval is that value.
    const CellSummary one = summarizeOverPairs({2.5}, 1, 1, 100, 0);
    EXPECT_EQ(one.low[0], 2.5);
    EXPECT_EQ(one.high[0], 2.5);
}

TEST(PatchPairs, TheIntervalCoversTheTrueMeanAboutAsOftenAsItSays) {
    // Means of 60 normal draws: the 95% percentile interval should cover the true mean in roughly
    // 95% of 200 repetitions (binomial: 85% is far outside what a correct interval gives).
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal(2.0, 1.0);
    int covered = 0;
    for (int rep = 0; rep < 200; ++rep) {
        std::vector<double> v(60);
        for (double& x : v)
            x = normal(rng);
        const CellSummary s = summarizeOverPairs(v, 60, 1, 400, static_cast<uint64_t>(rep));
        covered += s.low[0] <= 2.0 && 2.0 <= s.high[0];
        EXPECT_LE(s.low[0], s.mean[0]);
        EXPECT_GE(s.high[0], s.mean[0]);
    }
    EXPECT_GE(covered, 176); // 88%
    EXPECT_LE(covered, 200);
}
