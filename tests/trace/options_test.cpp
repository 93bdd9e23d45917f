// An analysis's option table (gwb/engine/options.h): the range texts, the checks and the sentences
// every front end gives, and the setters over a request's members.

#include "gwb/engine/options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

using namespace gwb::engine;

namespace {

struct Request {
    int count = 10;
    int64_t big = 4096;
    double share = 0.95;
    double rate = 0.1;
    std::string word = "one";
};

const OptionTable<Request>& table() {
    using R = Request;
    static const OptionTable<R> t = {
        integerOption<R>("count", "count", "N", "Items, at most", 1, kNoMax, &R::count),
        integerOption<R>("big", "big", "N", "A wide integer", 0, 1e6, &R::big),
        numberOption<R>("share", "share", "P", "A share", 0, true, 1, false, &R::share),
        numberOption<R>("rate", "rate", "X", "A rate", 0, false, 1, true, &R::rate),
        textOption<R>(
            "word", "word", "one|two", "A word", [](const R& r) { return r.word; },
            [](R& r, const std::string& v) {
                if (v != "one" && v != "two") throw std::invalid_argument("word must be one or two, got '" + v + "'");
                r.word = v;
            }),
    };
    return t;
}

std::string message(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST(Options, RangesReadAsTheHelpWritesThem) {
    const auto& t = table();
    EXPECT_EQ(optionRangeText(t[0]), "an integer, at least 1");
    EXPECT_EQ(optionRangeText(t[1]), "an integer in [0, 1000000]");
    EXPECT_EQ(optionRangeText(t[2]), "a number in (0, 1]");
    EXPECT_EQ(optionRangeText(t[3]), "a number in [0, 1)");
    EXPECT_EQ(optionRangeText(t[4]), "one|two");
    EXPECT_EQ(t[0].defaultAndRange(), "default 10; an integer, at least 1");
    EXPECT_EQ(t[2].defaultAndRange(), "default 0.95; a number in (0, 1]");
    EXPECT_EQ(t[4].defaultAndRange(), "default one");
    EXPECT_EQ(formatOptionNumber(2147483647.0), "2147483647");
    EXPECT_EQ(formatOptionNumber(1e-3), "0.001");
}

TEST(Options, EachBadValueIsRefusedWithOneSentence) {
    const auto& t = table();
    Request r;
    EXPECT_EQ(message([&] { setOptionNumber(t[0], r, 0); }), "count (--count) must be an integer, at least 1; got 0");
    EXPECT_EQ(message([&] { setOptionNumber(t[0], r, 2.5); }),
              "count (--count) must be an integer, at least 1; got 2.5");
    EXPECT_EQ(message([&] { setOptionNumber(t[2], r, 0); }), "share (--share) must be a number in (0, 1]; got 0");
    EXPECT_EQ(message([&] { setOptionNumber(t[3], r, 1); }), "rate (--rate) must be a number in [0, 1); got 1");
    EXPECT_EQ(message([&] { setOptionNumber(t[3], r, std::nan("")); }),
              "rate (--rate) must be a number in [0, 1); got nan");
    EXPECT_EQ(message([&] { setOptionNumber(t[0], r, 3e9); }),
              "count (--count) must be an integer, at least 1 and at most 2147483647; got 3000000000");
    EXPECT_EQ(message([&] { setOptionText(t[0], r, "many"); }), "count (--count) needs an integer, got 'many'");
    EXPECT_EQ(message([&] { setOptionText(t[2], r, "0.5x"); }), "share (--share) needs a number, got '0.5x'");
    EXPECT_EQ(message([&] { setOptionNumber(t[4], r, 1); }), "word (--word) is written as one|two, not a number");
    EXPECT_EQ(message([&] { findOption(t, "colour", "the test"); }),
              "the test has no option 'colour' (its options: count, big, share, rate, word)");
    // Nothing was set by a refused value.
    EXPECT_EQ(r.count, 10);
    EXPECT_EQ(r.share, 0.95);
    // A request set directly is checked by the same table.
    r.big = -1;
    EXPECT_EQ(message([&] { checkOptions(t, r); }), "big (--big) must be an integer in [0, 1000000]; got -1");
}

TEST(Options, ValuesReachTheirMembersByKeyOrFlag) {
    const auto& t = table();
    Request r;
    setOptionText(findOption(t, "count", "t"), r, "3");
    setOptionNumber(findOption(t, "big", "t"), r, 123456);
    setOptionText(findOption(t, "share", "t"), r, "0.5");
    setOptionText(findOption(t, "word", "t"), r, "two");
    EXPECT_EQ(r.count, 3);
    EXPECT_EQ(r.big, 123456);
    EXPECT_EQ(r.share, 0.5);
    EXPECT_EQ(r.word, "two");
    EXPECT_EQ(t[1].shown(r), "123456");
    EXPECT_EQ(message([&] { checkOptions(t, r); }), "no error");
    EXPECT_THROW(setOptionText(t[4], r, "three"), std::invalid_argument);
}
