// WordPiece (bert-base-uncased behaviour) and GPT-2 byte-level BPE: fixed expectations with
// byte spans, and a comparison with a Python reference built on Python's own unicodedata.

#include "tokenizers/bpe_tokenizer.h"
#include "gwb/engine/tokenizer.h"
#include "python_runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace gwb::engine {
namespace {

std::string testVocab() {
    std::vector<std::string> v{"[PAD]", "[UNK]",    "[CLS]",   "[SEP]",  "[MASK]", "hello", "world", "un",
                               "##aff", "##able",   "cafe",    "naive",  "resume", "the",   "##s",   "σας",
                               "σ",     "ς",        "α",       "你",     "好",     "ᄒ",    "##ᅡ",  "##ᆫ",
                               "i",     "istanbul", "strasse", "straße", "##e"};
    for (char c = 'a'; c <= 'z'; ++c) {
        v.emplace_back(1, c);
        v.push_back(std::string("##") + c);
    }
    for (char c = '0'; c <= '9'; ++c)
        v.emplace_back(1, c);
    for (const char* p : {",", ".", "!", "?", "'", "\"", "(", ")", "-", "$", "^", "`", "¿", "—", "…"})
        v.emplace_back(p);
    std::string text;
    for (const auto& s : v)
        text += s + "\n";
    return text;
}

std::vector<std::string> texts(const std::vector<TokenPiece>& pieces) {
    std::vector<std::string> out;
    for (const auto& p : pieces)
        out.push_back(p.text);
    return out;
}

TEST(WordPiece, BasicTokenizationWithSpans) {
    const auto tok = makeWordPieceTokenizer(testVocab());
    EXPECT_EQ(tok->kind(), "wordpiece");
    const std::string text = "Héllo,  WORLD! unaffable 你好";
    const auto p = tok->encode(text);
    EXPECT_EQ(texts(p), (std::vector<std::string>{"hello", ",", "world", "!", "un", "##aff", "##able", "你", "好"}));
    // Spans point at the original bytes ("Héllo" is 6 bytes: é takes two).
    EXPECT_EQ(text.substr(static_cast<size_t>(p[0].begin), static_cast<size_t>(p[0].end - p[0].begin)), "Héllo");
    EXPECT_EQ(p[1].begin, 6);
    EXPECT_EQ(text.substr(static_cast<size_t>(p[2].begin), 5), "WORLD");
    EXPECT_EQ(text.substr(static_cast<size_t>(p[5].begin), static_cast<size_t>(p[5].end - p[5].begin)), "aff");
    EXPECT_EQ(text.substr(static_cast<size_t>(p[7].begin), static_cast<size_t>(p[7].end - p[7].begin)), "你");
    for (size_t i = 1; i < p.size(); ++i)
        EXPECT_LE(p[i - 1].end, p[i].begin);
    EXPECT_EQ(tok->decode(tok->encodeIds("unaffable hello")), "unaffable hello");
}

TEST(WordPiece, UnknownsLongWordsAndSpecials) {
    const auto tok = makeWordPieceTokenizer(testVocab());
    EXPECT_EQ(texts(tok->encode("xyz€ [MASK] hello")), (std::vector<std::string>{"[UNK]", "[MASK]", "hello"}));
    EXPECT_EQ(texts(tok->encode(std::string(101, 'a'))), std::vector<std::string>{"[UNK]"});
    EXPECT_EQ(tok->encode(std::string(100, 'a')).size(), 100u);            // a ##a ##a ...
    EXPECT_EQ(texts(tok->encode("ΣΑΣ")), std::vector<std::string>{"σας"}); // final sigma
    EXPECT_EQ(texts(tok->encode("a\x01"
                                "b\tc")),
              (std::vector<std::string>{"a", "##b", "c"})); // control dropped
    EXPECT_THROW(tok->encode("bad \xff utf8"), std::invalid_argument);
    EXPECT_THROW(tok->pieceText(100000), std::out_of_range);
    EXPECT_THROW(makeWordPieceTokenizer("a\nb\n"), std::invalid_argument); // no [UNK]
    EXPECT_EQ(tok->vocabSize(), static_cast<int64_t>(29 + 52 + 10 + 15));
}

TEST(WordPiece, MatchesPythonReference) {
    const auto py = test::findPython();
    if (!py) GTEST_SKIP() << "no python3 found: WordPiece reference comparison skipped";
    const auto dir = std::filesystem::temp_directory_path() / "gwb_wordpiece_test";
    std::filesystem::create_directories(dir);
    const std::string vocab = testVocab();
    std::ofstream((dir / "vocab.txt").string(), std::ios::binary) << vocab;
    const std::vector<std::string> inputs{"Héllo,  WORLD! unaffable 你好",
                                          "Crème brûlée? Naïve RÉSUMÉ — ok…",
                                          "İstanbul STRASSE Straße ΣΑΣ σας",
                                          "한 ḱ Ǆ ﬁ x²",
                                          "tab\there\nnew\rline\u00a0nbsp\u2003em",
                                          "a\u0301\u0327 z\u200b\u200dq",
                                          "[CLS] hi [SEP]",
                                          "don't stop-believing ($5.00^2) `quote` ¿qué?",
                                          std::string(120, 'b') + " end",
                                          "emoji 😀👍🏽 fin",
                                          "\u0130\u0307 \u1E9E \u00DF",
                                          ""};
    std::ofstream((dir / "texts.json").string()) << nlohmann::json(inputs).dump();
    const std::string cmd = "'" + *py + "' " + GWB_PYTHON_DIR "/wordpiece_reference.py '" +
                            (dir / "vocab.txt").string() + "' '" + (dir / "texts.json").string() + "' '" +
                            (dir / "out.json").string() + "'";
    ASSERT_TRUE(test::runQuiet(cmd)) << cmd;
    const auto expected = nlohmann::json::parse(std::ifstream((dir / "out.json").string()));
    const auto tok = makeWordPieceTokenizer(vocab);
    for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_EQ(tok->encodeIds(inputs[i]), expected[i].get<std::vector<int32_t>>()) << "text: " << inputs[i];
    std::filesystem::remove_all(dir);
}

TEST(ByteLevelBpe, MergesAndPreTokenization) {
    // A toy GPT-2 style vocabulary: all 256 byte symbols, then merged pieces.
    nlohmann::json vocab = nlohmann::json::object();
    auto symbol = [](int b) {
        int n = 0;
        for (int x = 0; x < b; ++x)
            if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) ++n;
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n);
        std::string s;
        if (cp < 0x80)
            s += static_cast<char>(cp);
        else {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        return s;
    };
    for (int b = 0; b < 256; ++b)
        vocab[symbol(b)] = b;
    const std::string sp = symbol(' '); // "Ġ"
    vocab["he"] = 256;
    vocab["ll"] = 257;
    vocab["hell"] = 258;
    vocab["hello"] = 259;
    vocab[sp + "w"] = 260;
    const std::string merges = "#version: 0.2\nh e\nl l\nhe ll\nhell o\n" + sp + " w\n";
    const auto tok = makeByteLevelBpeTokenizer(vocab.dump(), merges);
    EXPECT_EQ(tok->kind(), "bpe");
    EXPECT_EQ(tok->vocabSize(), 261);
    const std::string text = "hello world's  x\n";
    const auto p = tok->encode(text);
    // Pre-tokens: "hello" " world" "'s" " " " x" "\n"; merges make "hello" one piece and " w" one.
    std::vector<int32_t> ids;
    for (const auto& t : p)
        ids.push_back(t.id);
    EXPECT_EQ(ids, (std::vector<int32_t>{259, 260, 'o', 'r', 'l', 'd', '\'', 's', ' ', ' ', 'x', '\n'}));
    EXPECT_EQ(p[1].begin, 5);
    EXPECT_EQ(p[1].end, 7);
    EXPECT_EQ(p[1].text, " w");
    EXPECT_EQ(tok->decode(tok->encodeIds(text)), text);
    const std::string utf = "é€😀";
    EXPECT_EQ(tok->decode(tok->encodeIds(utf)), utf);
    const auto again = makeByteLevelBpeFromSerialized(tok->serialize());
    EXPECT_EQ(again->encodeIds(text), tok->encodeIds(text));
    EXPECT_THROW(makeByteLevelBpeTokenizer("{\"a\": 0}", ""),
                 std::invalid_argument); // byte symbols missing
}

// Found by tests/fuzz/fuzz_bpe (libFuzzer): a merges.txt with a byte that is not UTF-8 was
// accepted, and serialize() (what a .gwb embeds) then failed inside the JSON library. Refused
// when read, naming the file and the byte.
TEST(ByteLevelBpe, FuzzFoundMergesThatAreNotUtf8AreRefused) {
    nlohmann::json vocab = nlohmann::json::object();
    int extra = 0; // GPT-2's byte alphabet: printable bytes stand for themselves, the rest U+0100..
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const int cp = printable ? b : 256 + extra++;
        std::string s;
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        vocab[s] = b;
    }
    vocab["he"] = 256;
    EXPECT_EQ(makeByteLevelBpeTokenizer(vocab.dump(), "#version: 0.2\nh e\n")->vocabSize(), 257);
    try {
        (void)makeByteLevelBpeTokenizer(vocab.dump(), "#version: 0.2\nh e\n\xad\xc4\xa0 w\n");
        ADD_FAILURE() << "accepted a merges.txt that is not UTF-8";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("merges.txt is not UTF-8 text: invalid UTF-8 at byte 18"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace gwb::engine
