// tokenizer.json files made by hand, with encodings worked out by hand: WordLevel (characters,
// words), classic BPE with an unknown token, a continuing suffix and byte fallback, Wake2vec's
// character map; normal forms with their byte spans and equal to Python's unicodedata; bad files
// refused by name. The files that must encode like our own tokenizers are in
// hf_tokenizer_test.cpp.

#include "hf_tokenizer_test_util.h"
#include "gwb/engine/tokenizer.h"
#include "tokenizers/hf_normalizers.h"
#include "tokenizers/hf_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine {
namespace {

using hf_tokenizer_test::ids;
using nlohmann::json;

TEST(HfTokenizer, CharacterLevelWordLevel) {
    // What tokenizers writes for WordLevel + Split("", "isolated") (its answer to "character level").
    const std::string file = R"({"version":"1.0","added_tokens":[
        {"id":0,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
        {"id":1,"content":"[PAD]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
      "normalizer":null,
      "pre_tokenizer":{"type":"Split","pattern":{"String":""},"behavior":"Isolated","invert":false},
      "post_processor":null,"decoder":null,
      "model":{"type":"WordLevel","vocab":{"[UNK]":0,"[PAD]":1,"a":2,"b":3," ":4,"é":5},"unk_token":"[UNK]"}})";
    const auto tok = makeTokenizerJson(file);
    EXPECT_EQ(tok->vocabSize(), 6);
    const auto p = tok->encode("ab é?");
    EXPECT_EQ(ids(p), (std::vector<int32_t>{2, 3, 4, 5, 0}));
    const std::vector<std::pair<int64_t, int64_t>> spans{{0, 1}, {1, 2}, {2, 3}, {3, 5}, {5, 6}};
    for (size_t i = 0; i < p.size(); ++i) {
        EXPECT_EQ(p[i].begin, spans[i].first) << i;
        EXPECT_EQ(p[i].end, spans[i].second) << i;
    }
    EXPECT_EQ(p[3].text, "é");
    // No decoder: tokenizers joins the pieces with spaces.
    EXPECT_EQ(tok->decode({2, 3, 5}), "a b é");
    // [PAD] typed in the text is the added token, not five characters.
    EXPECT_EQ(tok->encodeIds("a[PAD]b"), (std::vector<int32_t>{2, 1, 3}));
}

TEST(HfTokenizer, WordLevelWithWhitespacePreTokenizer) {
    const std::string file = R"({"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},
      "model":{"type":"WordLevel","vocab":{"<unk>":0,"hello":1,",":2,"world":3,"!!":4}}})";
    const auto tok = makeTokenizerJson(file);
    const auto p = tok->encode("Hello, World!! again");
    EXPECT_EQ(ids(p), (std::vector<int32_t>{1, 2, 3, 4, 0}));
    EXPECT_EQ(p[4].begin, 15);
    EXPECT_EQ(p[4].end, 20);
    // \w beyond ASCII: "€!!" is one non-word run, "²" (No) is not a word character although it
    // is a number, "ⓐ" (So, but Other_Alphabetic) is.
    const auto uni = makeTokenizerJson(R"({"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},
      "model":{"type":"WordLevel","vocab":{"<unk>":0,"world":1,"€!!":2,"²":3,"x":4,"ⓐb":5}}})");
    EXPECT_EQ(uni->encodeIds("world€!! ²x Ⓐb"), (std::vector<int32_t>{1, 2, 3, 4, 5}));
}

TEST(HfTokenizer, ClassicBpeWithUnknown) {
    // Merges worked by hand: "lower" -> lo w e r -> low e r -> low er -> lower; "newest" merges
    // "e s" (rank 4) and "es t" (5) before "n e" (6) and "ne w" (7): new + est.
    const std::string file = R"({"pre_tokenizer":{"type":"Whitespace"},"decoder":null,
      "model":{"type":"BPE","unk_token":"[UNK]","vocab":{"[UNK]":0,"l":1,"o":2,"w":3,"e":4,"r":5,"n":6,"s":7,"t":8,
        "lo":9,"low":10,"er":11,"lower":12,"es":13,"est":14,"ne":15,"new":16},
        "merges":["l o","lo w","e r","low er","e s","es t","n e","ne w"]}})";
    const auto tok = makeTokenizerJson(file);
    EXPECT_EQ(tok->encodeIds("lower newest xe"), (std::vector<int32_t>{12, 16, 14, 0, 4}));
    EXPECT_EQ(tok->decode({12, 16, 14}), "lower new est");

    // fuse_unk makes consecutive unknown characters one [UNK].
    json j = json::parse(file);
    j["model"]["fuse_unk"] = true;
    const auto fused = makeTokenizerJson(j.dump());
    const auto p = fused->encode("xyzlow");
    EXPECT_EQ(ids(p), (std::vector<int32_t>{0, 10}));
    EXPECT_EQ(p[0].end, 3);

    // Without an unk_token an unknown character is an error, not a silent drop.
    j = json::parse(file);
    j["model"].erase("unk_token");
    const auto strict = makeTokenizerJson(j.dump());
    try {
        strict->encodeIds("low x");
        ADD_FAILURE() << "expected an error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'x' at byte 4 is not in the vocabulary"), std::string::npos) << e.what();
    }
}

TEST(HfTokenizer, ContinuingPrefixSuffixAndByteFallback) {
    // end_of_word_suffix: the last character carries "</w>"; BPEDecoder turns it into a space.
    const std::string suffix =
        R"({"pre_tokenizer":{"type":"WhitespaceSplit"},"decoder":{"type":"BPEDecoder","suffix":"</w>"},
      "model":{"type":"BPE","unk_token":"<unk>","end_of_word_suffix":"</w>",
        "vocab":{"<unk>":0,"a":1,"b":2,"a</w>":3,"b</w>":4,"ab</w>":5,"ba</w>":6},"merges":["a b</w>","b a</w>"]}})";
    const auto s = makeTokenizerJson(suffix);
    EXPECT_EQ(s->encodeIds("ab ba b"), (std::vector<int32_t>{5, 6, 4}));
    EXPECT_EQ(s->decode({5, 6, 4}), "ab ba b");

    // byte_fallback: a character outside the vocabulary becomes its UTF-8 bytes.
    const std::string fb =
        R"({"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
      "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
        {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
      "model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,
        "vocab":{"<unk>":0,"<0xC3>":1,"<0xA9>":2,"▁":3,"h":4,"i":5,"▁h":6,"▁hi":7},"merges":["▁ h","▁h i"]}})";
    const auto b = makeTokenizerJson(fb);
    const auto p = b->encode("hi é");
    EXPECT_EQ(ids(p), (std::vector<int32_t>{7, 3, 1, 2}));
    EXPECT_EQ(p[2].begin, 3);
    EXPECT_EQ(p[2].end, 4);
    EXPECT_EQ(p[3].begin, 4);
    EXPECT_EQ(p[3].end, 5);
    EXPECT_EQ(b->decode(ids(p)), "hi é");
}

TEST(HfTokenizer, Wake2vecCharacterMap) {
    const std::string file = R"({"char_to_id": {"<pad>": 0, "<eos>": 1, " ": 2, "a": 3, "b": 4, "\u00e9": 5}})";
    EXPECT_EQ(tokenizerJsonFormat(file), "wake2vec_chars");
    const auto tok = makeTokenizerJson(file);
    EXPECT_EQ(tok->kind(), "wake2vec_chars");
    EXPECT_EQ(tok->vocabSize(), 6);
    const auto p = tok->encode("ab é?<eos>");
    // Unknown characters ('?', and '<' 'e' 'o' 's' '>' one by one) encode to 0, as in Wake2vec.
    EXPECT_EQ(ids(p), (std::vector<int32_t>{3, 4, 2, 5, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(p[3].begin, 3);
    EXPECT_EQ(p[3].end, 5);
    EXPECT_EQ(tok->decode({3, 1, 4, 5}), "a<eos>bé");
    EXPECT_THROW(tok->pieceText(6), std::out_of_range);
}

TEST(HfTokenizer, NormalFormsAreComputedWithTheirByteSpans) {
    const std::string file = R"({"normalizer":{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"Lowercase"},
      {"type":"StripAccents"}]},"pre_tokenizer":{"type":"WhitespaceSplit"},
      "model":{"type":"WordLevel","unk_token":"?","vocab":{"?":0,"cafe":1,"naive":2,"café":3,"fine...":4,"한":5}}})";
    EXPECT_EQ(makeTokenizerJson(file)->encodeIds("Café NAÏVE x"), (std::vector<int32_t>{1, 2, 0}));
    json j = json::parse(file);
    j["normalizer"] = {{"type", "NFKC"}};
    const auto nfkc = makeTokenizerJson(j.dump());
    EXPECT_EQ(nfkc->encodeIds("cafe naive"), (std::vector<int32_t>{1, 2}));
    // e + U+0301 composes to é; the ligature ﬁ and the ellipsis unfold (compatibility); the jamo
    // ㅎ ㅏ ㄴ (conjoining) compose into one syllable.
    const auto p = nfkc->encode("cafe\u0301 \uFB01ne\u2026 \u1112\u1161\u11AB");
    EXPECT_EQ(ids(p), (std::vector<int32_t>{3, 4, 5}));
    EXPECT_EQ(p[0].begin, 0);
    EXPECT_EQ(p[0].end, 6); // the composite covers e and U+0301
    EXPECT_EQ(p[1].begin, 7);
    EXPECT_EQ(p[1].end, 15); // ﬁ (3 bytes) + "ne" + … (3 bytes)
    EXPECT_EQ(p[2].begin, 16);
    EXPECT_EQ(p[2].end, 25);
    j["normalizer"] = {{"type", "NFC"}};
    EXPECT_EQ(makeTokenizerJson(j.dump())->encodeIds("cafe\u0301 \uFB01ne\u2026"), (std::vector<int32_t>{3, 0}));
    // StripAccents removes every mark (Mn, Mc, Me) as tokenizers does; BERT's strip_accents only Mn.
    j["normalizer"] = {{"type", "StripAccents"}};
    j["model"]["vocab"]["\u0915"] = 6; // Devanagari KA; U+093E (AA sign) is Mc
    EXPECT_EQ(makeTokenizerJson(j.dump())->encodeIds("\u0915\u093E"), (std::vector<int32_t>{6}));
}

TEST(HfTokenizer, NormalFormsEqualPythonsUnicodedata) {
    // 1,500 texts mixing decomposing characters, combining marks in random order (reordering,
    // blocked compositions), Hangul and other code points; each form computed by Python's
    // unicodedata (tests/python/gen_normalization_cases.py).
    std::ifstream in(GWB_SOURCE_DIR "/tests/import/data/unicode_normalization.txt");
    ASSERT_TRUE(in) << "tests/import/data/unicode_normalization.txt";
    auto codePoints = [](const std::string& field) {
        std::u32string out;
        std::istringstream ss(field);
        std::string hex;
        while (ss >> hex)
            out += static_cast<char32_t>(std::stoul(hex, nullptr, 16));
        return out;
    };
    const hf::Norm forms[] = {hf::Norm::Nfd, hf::Norm::Nfc, hf::Norm::Nfkd, hf::Norm::Nfkc};
    const char* names[] = {"NFD", "NFC", "NFKD", "NFKC"};
    std::string line;
    int cases = 0, changed = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> fields;
        std::istringstream ls(line);
        for (std::string f; std::getline(ls, f, '|');)
            fields.push_back(f);
        ASSERT_EQ(fields.size(), 5u) << line;
        const std::u32string text = codePoints(fields[0]);
        hf::Chars source;
        for (size_t i = 0; i < text.size(); ++i)
            source.push_back({text[i], static_cast<int64_t>(i), static_cast<int64_t>(i + 1)});
        for (int f = 0; f < 4; ++f) {
            hf::Chars w = source;
            hf::NormStep step{};
            step.kind = forms[f];
            hf::normalize({step}, w);
            std::u32string got;
            for (const hf::Char& c : w) {
                got += c.cp;
                ASSERT_LT(c.begin, c.end) << names[f] << " of " << fields[0];
            }
            const std::u32string want = codePoints(fields[static_cast<size_t>(f) + 1]);
            changed += want != text;
            EXPECT_TRUE(got == want) << names[f] << " of " << fields[0] << " should be " << fields[f + 1];
        }
        ++cases;
    }
    EXPECT_EQ(cases, 1500);
    EXPECT_GT(changed, 2000); // most texts change under some form
}

std::string errorOf(const std::string& text) {
    try {
        makeTokenizerJson(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(HfTokenizer, BadFilesAreRefusedByName) {
    const std::string model = R"("model":{"type":"WordLevel","unk_token":"a","vocab":{"a":0,"b":1}})";
    auto expectError = [](const std::string& text, const std::string& needle) {
        const std::string e = errorOf(text);
        EXPECT_NE(e.find(needle), std::string::npos) << "got: " << e;
        EXPECT_EQ(e.rfind("tokenizer.json: ", 0), 0u) << e;
    };
    expectError("{not json", "not valid JSON");
    expectError("[1, 2]", "not a JSON object");
    expectError(R"({"normalizer": null})", "neither a Hugging Face tokenizer.json (no \"model\")");
    expectError(R"({"model": {"type": "Unigram", "vocab": []}})", "model type 'Unigram' is not supported");
    expectError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a zz"]}})",
                "merge 1 'a zz' uses 'zz', which is not in the vocabulary");
    expectError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})",
                "makes 'ab', which is not in the vocabulary");
    expectError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})", "not two pieces");
    expectError(R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": -1}}})", "id of 'b' is -1");
    expectError(R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": [[[1]]]}}})", "id of 'b' is a list");
    expectError(R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "c": 1}}})",
                "id 1 is given to both 'b' and 'c'");
    expectError(R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 2}}})", "no piece has id 1");
    expectError(R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 2000000000}}})",
                "no piece has id 1 (ids must run from 0 to 2000000000 without gaps)");
    std::string nested = R"({"type": "Lowercase"})";
    for (int i = 0; i < 40; ++i)
        nested = R"({"type": "Sequence", "normalizers": [)" + nested + "]}";
    expectError(R"({"normalizer": )" + nested + "," + model + "}", "Sequences nested more than 32 deep");
    expectError(R"({"added_tokens": [{"id": 1, "content": "x", "special": true}],)" + model + "}",
                "id 1 is given to both 'b' and 'x'");
    expectError(R"({"added_tokens": [{"id": 5, "content": "b", "special": true}],)" + model + "}",
                "added token 'b' has id 5 but the vocabulary gives it 1");
    expectError(R"({"pre_tokenizer": {"type": "Digits", "individual_digits": true},)" + model + "}",
                "pre_tokenizer 'Digits' is not supported");
    expectError(R"({"normalizer": {"type": "Precompiled", "precompiled_charsmap": ""},)" + model + "}",
                "normalizer 'Precompiled' is not supported");
    expectError(R"({"decoder": {"type": "CTC"},)" + model + "}", "decoder 'CTC' is not supported");
    expectError(R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"},)" +
                    model + "}",
                "regex '\\d+' is not supported");
    expectError(R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []}})",
                "BPE dropout 0.1 is not supported");
    expectError(R"({"model": {"vocab": {"a": 0}}})", "model has no \"type\"");
    expectError(R"({"char_to_id": {"<pad>": 0, "a": 1, "b": 1}})", "char_to_id: id 1 is given to both");
    expectError(R"({"char_to_id": {"<pad>": 0, "a": 2}})", "char_to_id: no character has id 1");
    expectError(R"({"char_to_id": {"<pad>": 0, "a": "1"}})", "char_to_id: id of 'a' is \"1\"");
}

} // namespace
} // namespace gwb::engine
