// SentencePiece: training through spm_train, exact round trips with spans covering the text,
// invalid UTF-8 errors, and agreement with libsentencepiece's spm_encode.

#include "engine_test_util.h"
#include "gwb/engine/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace gwb::engine;

namespace {

bool haveProgram(const char* name) {
    const std::string cmd = std::string("command -v ") + name + " > /dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

/// A small corpus: English-like sentences with some accented words, so that CJK and emoji are
/// left to byte fallback.
std::string makeCorpus() {
    const char* words[] = {"the",  "of",     "and",    "to",     "a",       "in",    "that",  "was",       "her",
                           "she",  "not",    "be",     "had",    "it",      "his",   "as",    "Elizabeth", "Darcy",
                           "Emma", "café",   "naïve",  "Bennet", "very",    "would", "could", "said",      "Mr.",
                           "Mrs.", "letter", "sister", "felt",   "herself", "been",  "which", "when",      "all",
                           "no",   "there",  "were",   "have",   "so",      "much",  "by"};
    std::mt19937 rng(3);
    std::ostringstream out;
    for (int line = 0; line < 3000; ++line) {
        const int n = 4 + int(rng() % 12);
        for (int w = 0; w < n; ++w)
            out << (w ? " " : "") << words[rng() % (sizeof words / sizeof *words)];
        out << (rng() % 3 ? "." : ",") << "\n";
    }
    return out.str();
}

class SentencePiece : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!haveProgram("spm_train")) return;
        dir = new test::TempDir;
        corpus = dir->file("corpus.txt");
        std::ofstream(corpus) << makeCorpus();
        SentencePieceTrainOptions o;
        o.inputs = {corpus};
        o.vocabSize = 340;
        unigram = makeSentencePieceTokenizer(trainSentencePiece(o));
        o.modelType = "bpe";
        bpe = makeSentencePieceTokenizer(trainSentencePiece(o));
    }
    static void TearDownTestSuite() {
        delete dir;
        dir = nullptr;
    }
    void SetUp() override {
        if (!unigram) GTEST_SKIP() << "spm_train not installed (Debian package sentencepiece)";
    }
    static inline test::TempDir* dir = nullptr;
    static inline std::string corpus;
    static inline TokenizerPtr unigram, bpe;
};

const std::vector<std::string> kSamples = {
    "The letter was from Mr. Darcy.",
    "Élodie's café served crème brûlée; naïve Zoë paid 12€.",
    "日本語のテキストと中文文本。",
    "Emoji: 🙂👍🏽 and 🇬🇧 flags",
    "  leading, double  spaces and trailing  ",
    "tabs\tand\nnewlines\r\n",
    "x",
};

void checkRoundTripAndSpans(const Tokenizer& tok, const std::string& text) {
    const auto pieces = tok.encode(text);
    std::vector<int32_t> ids;
    std::vector<int> covered(text.size(), 0);
    int64_t last = 0;
    for (const TokenPiece& p : pieces) {
        ids.push_back(p.id);
        ASSERT_GE(p.begin, last) << "spans out of order in: " << text;
        ASSERT_LE(p.end, int64_t(text.size()));
        ASSERT_LE(p.begin, p.end);
        for (int64_t b = p.begin; b < p.end; ++b)
            ++covered[size_t(b)];
        last = p.end;
        EXPECT_EQ(p.text, tok.pieceText(p.id));
    }
    for (size_t b = 0; b < text.size(); ++b)
        EXPECT_EQ(covered[b], 1) << "byte " << b << " of: " << text;
    EXPECT_EQ(tok.decode(ids), text);
    EXPECT_EQ(tok.encodeIds(text), ids);
}

} // namespace

TEST_F(SentencePiece, RoundTripsWithSpansCoveringTheText) {
    for (const auto& tok : {unigram, bpe}) {
        EXPECT_EQ(tok->vocabSize(), 340);
        EXPECT_EQ(tok->kind(), "sentencepiece");
        for (const std::string& s : kSamples)
            checkRoundTripAndSpans(*tok, s);
        EXPECT_TRUE(tok->encode("").empty());
    }
}

TEST_F(SentencePiece, ByteFallbackPiecesHaveOneByteEach) {
    const auto pieces = unigram->encode("a 🙂");
    int bytes = 0;
    for (const auto& p : pieces)
        if (p.text.rfind("<0x", 0) == 0) {
            ++bytes;
            EXPECT_EQ(p.end - p.begin, 1);
        }
    EXPECT_EQ(bytes, 4); // U+1F642 is 4 bytes in UTF-8
}

TEST_F(SentencePiece, InvalidUtf8NamesTheByteOffset) {
    for (const std::string& bad : {std::string("abc\xff"), std::string("ok \xc3"), std::string("\xe2\x28\xa1")}) {
        try {
            (void)unigram->encode(bad);
            FAIL() << "accepted invalid UTF-8";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte"), std::string::npos) << e.what();
        }
    }
    try {
        checkUtf8("abc\xff");
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("byte 3"), std::string::npos) << e.what();
    }
    EXPECT_THROW(unigram->decode({340}), std::out_of_range);
    EXPECT_THROW(unigram->pieceText(-1), std::out_of_range);
}

TEST_F(SentencePiece, SerializedBytesRebuildTheSameTokenizer) {
    const TokenizerPtr again = makeTokenizer("sentencepiece", unigram->serialize());
    for (const std::string& s : kSamples)
        EXPECT_EQ(again->encodeIds(s), unigram->encodeIds(s));
    EXPECT_THROW(makeTokenizer("sentencepiece", "not a proto"), std::invalid_argument);
    EXPECT_THROW(makeTokenizer("morse", ""), std::invalid_argument);
}

TEST_F(SentencePiece, AgreesWithLibsentencepiece) {
    if (!haveProgram("spm_encode")) GTEST_SKIP() << "spm_encode not installed";
    for (const auto& [tok, name] : {std::pair{unigram, "unigram"}, std::pair{bpe, "bpe"}}) {
        const std::string model = dir->file(std::string(name) + ".model");
        std::ofstream(model, std::ios::binary) << tok->serialize();
        const std::string in = dir->file("lines.txt"), out = dir->file("ids.txt");
        std::vector<std::string> lines = {"The letter was from Mr. Darcy.", "Élodie's café, naïve Zoë: 12€!",
                                          "日本語 🙂 mixed with words", "herself---and  Emma"};
        std::ifstream corpusIn(corpus);
        std::string line;
        for (int i = 0; i < 200 && std::getline(corpusIn, line); ++i)
            lines.push_back(line);
        {
            std::ofstream f(in);
            for (const auto& l : lines)
                f << l << "\n";
        }
        const std::string cmd = "spm_encode --model " + model + " --output_format=id < " + in + " > " + out;
        ASSERT_EQ(std::system(cmd.c_str()), 0);
        std::ifstream ids(out);
        for (const auto& l : lines) {
            std::string row;
            std::getline(ids, row);
            std::istringstream ss(row);
            std::vector<int32_t> expect;
            for (int32_t v; ss >> v;)
                expect.push_back(v);
            EXPECT_EQ(tok->encodeIds(l), expect) << name << ": " << l;
        }
    }
}

// Found by tests/fuzz/fuzz_sentencepiece (libFuzzer): a BYTE piece spelled "<0x-3>" passed
// sscanf's "%2X" as 4294967293 and indexed the 256-entry byte table with it (out of bounds).
// A BYTE piece must be exactly <0xHH>; anything else is refused, naming the piece.
TEST(SentencePieceModel, FuzzFoundBytePieceOutOfRangeIsRefused) {
    // Protobuf wire format of ModelProto.pieces (field 1): {piece (1), score (2, float), type (3)}.
    auto piece = [](const std::string& text, char type) {
        std::string p = std::string("\x0a") + static_cast<char>(text.size()) + text;
        p += std::string("\x15\x00\x00\x00\x00", 5) + "\x18" + type;
        return std::string("\x0a") + static_cast<char>(p.size()) + p;
    };
    const std::string unk = piece("<unk>", 2), a = piece("a", 1);
    try {
        (void)makeSentencePieceTokenizer(unk + piece("<0x-3>", 6) + a);
        FAIL() << "accepted a byte piece <0x-3>";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'<0x-3>', not <0xHH>"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)makeSentencePieceTokenizer(unk + piece("<0x4>", 6) + a), std::invalid_argument);
    EXPECT_THROW((void)makeSentencePieceTokenizer(unk + piece("<0xG1>", 6) + a), std::invalid_argument);
    // A well-formed byte piece still decodes to its byte.
    const TokenizerPtr t = makeSentencePieceTokenizer(unk + piece("<0x4a>", 6) + a);
    EXPECT_EQ(t->decode({1}), "J");
}
