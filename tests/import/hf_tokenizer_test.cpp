// tokenizer.json: Hugging Face's (BPE byte-level or not, WordPiece, WordLevel) and Wake2vec's
// character map. The byte-level BPE and WordPiece files must encode exactly like our GPT-2 and
// WordPiece tokenizers on the same vocabularies (a vocabulary trained here, and many texts);
// hand-made files have encodings worked out by hand; bad files are refused by name; the
// tokenizer travels through a .gwb and through `--vocab tokenizer.json` into an import, where a
// size that differs from the embedding's is refused with both numbers.

#include "import_test_util.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "import/layout_file.h"
#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_normalizers.h"
#include "tokenizers/hf_tokenizer.h"
#include "tokenizers/wordpiece_unicode.h"

#include <gtest/gtest.h>
#include <sstream>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <unistd.h>

namespace gwb::engine {
namespace {

using nlohmann::json;

std::vector<int32_t> ids(const std::vector<TokenPiece>& p) {
    std::vector<int32_t> out;
    for (const auto& x : p)
        out.push_back(x.id);
    return out;
}

std::string symbolOf(const std::vector<char32_t>& alphabet, unsigned char b) {
    std::string s;
    unicode::appendUtf8(alphabet[b], s);
    return s;
}

/// A GPT-2 style vocabulary trained here: the 256 byte symbols, then `merges` merges of the most
/// frequent pair (ties by text) over the corpus' GPT-2 pre-tokens, then <|endoftext|>.
struct Gpt2Vocab {
    json vocab = json::object();
    std::vector<std::pair<std::string, std::string>> merges;
    int32_t eot = 0;
};

Gpt2Vocab trainGpt2(const std::string& corpus, int merges) {
    const auto alphabet = gpt2ByteAlphabet();
    Gpt2Vocab v;
    int32_t next = 0;
    for (int b = 0; b < 256; ++b)
        v.vocab[symbolOf(alphabet, static_cast<unsigned char>(b))] = next++;
    const auto chars = unicode::decodeUtf8(corpus);
    std::vector<std::vector<std::string>> words;
    for (size_t i = 0; i < chars.size();) {
        const size_t e = gpt2PreTokenEnd(chars, i);
        std::vector<std::string> w;
        for (int64_t k = chars[i].begin; k < chars[e - 1].end; ++k)
            w.push_back(symbolOf(alphabet, static_cast<unsigned char>(corpus[static_cast<size_t>(k)])));
        words.push_back(std::move(w));
        i = e;
    }
    for (int m = 0; m < merges; ++m) {
        std::map<std::pair<std::string, std::string>, int> counts;
        for (const auto& w : words)
            for (size_t k = 0; k + 1 < w.size(); ++k)
                ++counts[{w[k], w[k + 1]}];
        std::pair<std::string, std::string> best;
        int bestCount = 0;
        for (const auto& [pair, n] : counts)
            if (n > bestCount) bestCount = n, best = pair;
        if (bestCount == 0) break; // every pre-token is one piece
        v.merges.push_back(best);
        const std::string merged = best.first + best.second;
        if (!v.vocab.contains(merged)) v.vocab[merged] = next++;
        for (auto& w : words) {
            std::vector<std::string> out;
            for (size_t k = 0; k < w.size(); ++k) {
                if (k + 1 < w.size() && w[k] == best.first && w[k + 1] == best.second) {
                    out.push_back(merged);
                    ++k;
                } else {
                    out.push_back(w[k]);
                }
            }
            w = std::move(out);
        }
    }
    v.eot = next;
    v.vocab["<|endoftext|>"] = next;
    return v;
}

const char* kCorpus =
    "The quick brown fox jumps over the lazy dog. The dog's owner didn't mind; they'd seen it before.\n"
    "In 1923, the theory of the thing was that the theorist thought the other theory thoroughly.\n"
    "Naïve café owners serve crème brûlée — 3.14159 times a day!!! Don't they? We're sure they'll.\n"
    "你好，世界。 Привет, мир! Γειά σου Κόσμε. 🙂🙂 emoji and more emoji.\n"
    "   indented    lines\tand\ttabs\n\n\nthe end of the corpus, the end of the story, the end.\n";

std::string hfGpt2Json(const Gpt2Vocab& v, bool pairMerges) {
    json merges = json::array();
    for (const auto& [a, b] : v.merges)
        merges.push_back(pairMerges ? json::array({a, b}) : json(a + " " + b));
    json j = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", json::array({{{"id", v.eot},
                                       {"content", "<|endoftext|>"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", true},
                                       {"special", true}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
        {"post_processor",
         {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"vocab", v.vocab},
          {"merges", merges}}}};
    return j.dump();
}

std::string mergesText(const Gpt2Vocab& v) {
    std::string s = "#version: 0.2\n";
    for (const auto& [a, b] : v.merges)
        s += a + " " + b + "\n";
    return s;
}

/// Random texts from pieces that exercise both pre-tokenizers (no U+2028-like separators that
/// BERT's Python rules and tokenizers' Rust rules classify differently).
std::vector<std::string> randomTexts(uint32_t seed, const std::vector<std::string>& parts, int n) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, parts.size() - 1);
    std::uniform_int_distribution<int> len(0, 14);
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
        std::string s;
        for (int k = len(rng); k > 0; --k)
            s += parts[pick(rng)];
        out.push_back(s);
    }
    return out;
}

void expectSameEncoding(const Tokenizer& ours, const Tokenizer& hf, const std::string& text) {
    const auto a = ours.encode(text), b = hf.encode(text);
    ASSERT_EQ(a.size(), b.size()) << "text: '" << text << "'";
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].id, b[i].id) << "piece " << i << " of '" << text << "'";
        EXPECT_EQ(a[i].begin, b[i].begin) << "piece " << i << " of '" << text << "'";
        EXPECT_EQ(a[i].end, b[i].end) << "piece " << i << " of '" << text << "'";
        EXPECT_EQ(a[i].text, b[i].text) << "piece " << i << " of '" << text << "'";
    }
}

TEST(HfTokenizer, ByteLevelBpeEncodesLikeGpt2) {
    const Gpt2Vocab v = trainGpt2(kCorpus, 300);
    ASSERT_GT(v.merges.size(), 150u);
    const auto gpt2 = makeByteLevelBpeTokenizer(v.vocab.dump(), mergesText(v));
    for (bool pairs : {false, true}) {
        const auto hf = makeTokenizerJson(hfGpt2Json(v, pairs));
        EXPECT_EQ(hf->kind(), "huggingface");
        ASSERT_EQ(hf->vocabSize(), gpt2->vocabSize());
        std::vector<std::string> texts{"",
                                       kCorpus,
                                       "the theory of the thing",
                                       "Hello world's 123 don't 'S 'll",
                                       "  two  spaces   three\n\n\tend  ",
                                       "naïve café 你好 🙂 ÀÉ",
                                       "3.14159!!!???...",
                                       " leading space",
                                       "trailing space "};
        const auto more =
            randomTexts(7, {"the", " the", "theory", " ",   "  ", "\n", "\t", "'s", "'t",     "'re", "dog", "é",
                            "É",   "你",   "🙂",   "123", "4",  ".",  "!!", "—",  "Привет", "x",   "Q",   "'"},
                        400);
        texts.insert(texts.end(), more.begin(), more.end());
        for (const std::string& t : texts) {
            expectSameEncoding(*gpt2, *hf, t);
            EXPECT_EQ(hf->decode(hf->encodeIds(t)), t);
        }
        // The trained merges do apply: "the" is one piece, not three bytes.
        EXPECT_EQ(hf->encodeIds("the").size(), 1u);
        for (int32_t id = 0; id < hf->vocabSize(); ++id)
            ASSERT_EQ(hf->pieceText(id), gpt2->pieceText(id)) << id;
    }
}

TEST(HfTokenizer, ByteLevelSpecialTokenAndPrefixSpace) {
    const Gpt2Vocab v = trainGpt2(kCorpus, 300);
    const auto hf = makeTokenizerJson(hfGpt2Json(v, false));
    // The added token matches as a whole string; so does <|endoftext|> in a vocab.json + merges.txt
    // tokenizer (transformers' GPT2Tokenizer takes it as its special token), with the same spans.
    const auto gpt2 = makeByteLevelBpeTokenizer(v.vocab.dump(), mergesText(v));
    for (const char* text : {"the<|endoftext|>the", "<|endoftext|>", " a<|endoftext|><|endoftext|> b\n"})
        expectSameEncoding(*gpt2, *hf, text);
    const auto p = hf->encode("the<|endoftext|>the");
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[1].id, v.eot);
    EXPECT_EQ(p[1].begin, 3);
    EXPECT_EQ(p[1].end, 16);
    EXPECT_EQ(p[0].id, p[2].id);
    EXPECT_EQ(hf->decode(ids(p)), "the<|endoftext|>the");
    // U+001C..U+001F: spaces for GPT-2's Python pattern, not for tokenizers': refused, not guessed.
    EXPECT_THROW(hf->encodeIds("a\x1c b"), std::invalid_argument);

    // add_prefix_space: "the" encodes as " the" does, the added space covering no byte.
    json j = json::parse(hfGpt2Json(v, false));
    {
        // An added token with characters outside the byte alphabet decodes as written.
        json k = j;
        k["added_tokens"].push_back({{"id", v.eot + 1}, {"content", "a｜b"}, {"special", true}});
        const auto withBar = makeTokenizerJson(k.dump());
        EXPECT_EQ(withBar->vocabSize(), v.eot + 2);
        EXPECT_EQ(withBar->encodeIds("the a｜b"),
                  (std::vector<int32_t>{withBar->encodeIds("the").at(0), ' ', v.eot + 1})); // byte b has id b
        EXPECT_EQ(withBar->decode({v.eot + 1, v.eot}), "a｜b<|endoftext|>");
    }
    j["pre_tokenizer"]["add_prefix_space"] = true;
    const auto spaced = makeTokenizerJson(j.dump());
    const auto s = spaced->encode("the");
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].id, hf->encodeIds(" the").at(0));
    EXPECT_EQ(s[0].begin, 0);
    EXPECT_EQ(s[0].end, 3);
}

std::vector<std::string> bertVocab() { // unique entries (a repeated line would leave a gap in tokenizer.json's ids)
    std::vector<std::string> v{"[PAD]", "[UNK]",    "[CLS]",   "[SEP]", "[MASK]", "hello", "world",
                               "un",    "##aff",    "##able",  "cafe",  "naive",  "the",   "你",
                               "好",    "istanbul", "strasse", "ᄒ",    "##ᅡ",   "##ᆫ"};
    for (char c = 'a'; c <= 'z'; ++c) {
        v.emplace_back(1, c);
        v.push_back(std::string("##") + c);
    }
    for (char c = '0'; c <= '9'; ++c)
        v.emplace_back(1, c);
    for (const char* p : {",", ".", "!", "?", "'", "\"", "(", ")", "-", "$", "^", "`", "¿", "—", "…"})
        v.emplace_back(p);
    return v;
}

std::string hfBertJson(const std::vector<std::string>& v, bool lowercase = true) {
    json vocab = json::object();
    for (size_t i = 0; i < v.size(); ++i)
        vocab[v[i]] = i;
    json added = json::array();
    for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
        added.push_back({{"id", vocab[s]},
                         {"content", s},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
    json j = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer",
               {{"type", "BertNormalizer"},
                {"clean_text", true},
                {"handle_chinese_chars", true},
                {"strip_accents", nullptr},
                {"lowercase", lowercase}}},
              {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
              {"post_processor",
               {{"type", "TemplateProcessing"},
                {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                        {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}})}}},
              {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
              {"model",
               {{"type", "WordPiece"},
                {"unk_token", "[UNK]"},
                {"continuing_subword_prefix", "##"},
                {"max_input_chars_per_word", 100},
                {"vocab", vocab}}}};
    return j.dump();
}

TEST(HfTokenizer, WordPieceEncodesLikeOurWordPiece) {
    const auto v = bertVocab();
    std::string text;
    for (const auto& s : v)
        text += s + "\n";
    const auto ours = makeWordPieceTokenizer(text);
    const auto hf = makeTokenizerJson(hfBertJson(v));
    ASSERT_EQ(hf->vocabSize(), ours->vocabSize());
    std::vector<std::string> texts{"",
                                   "Héllo,  WORLD! unaffable 你好",
                                   "İstanbul STRASSE Straße naïve café",
                                   "hello [SEP] world [MASK]",
                                   "한 \xC2\xA0 tab\there\r\nnew\x01line\xEF\xBF\xBD",
                                   "$^`¿—… (x) \"y\" 'z' a-b",
                                   std::string(120, 'a') + " hello"};
    const auto more =
        randomTexts(11, {"hello", "world", "un", "aff", "able", "HELLO", "Café", "É", "é", " ", "  ", "\n",
                         "\t",    ",",     ".",  "!",   "你",   "好",    "xyz",  "q", "9", "—", "ß",  " [CLS] "},
                    400);
    texts.insert(texts.end(), more.begin(), more.end());
    for (const std::string& t : texts)
        expectSameEncoding(*ours, *hf, t);
    // tokenizers' WordPiece decoder glues "##" pieces and cleans up spaces before punctuation.
    EXPECT_EQ(hf->decode(hf->encodeIds("Hello, unaffable world!")), "hello, unaffable world!");
}

TEST(HfTokenizer, CasedWordPieceKeepsCase) {
    auto v = bertVocab();
    v.push_back("Hello");
    const auto hf = makeTokenizerJson(hfBertJson(v, false));
    const auto p = hf->encode("Hello hello HELLO");
    const int32_t helloCased = static_cast<int32_t>(v.size()) - 1;
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[0].id, helloCased);
    EXPECT_EQ(p[1].id, 5);
    EXPECT_EQ(p[2].id, 1); // "HELLO": no capital letters in the vocabulary -> [UNK]
}

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

TEST(HfTokenizer, TravelsThroughMakeTokenizerAndAGwbFile) {
    const Gpt2Vocab v = trainGpt2(kCorpus, 60);
    const std::string wake = R"({"char_to_id": {"<pad>": 0, "<eos>": 1, "a": 2, "b": 3}})";
    const auto dir = std::filesystem::temp_directory_path() / ("gwb_hf_tok_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const std::string& file : {hfGpt2Json(v, true), wake}) {
        const auto tok = makeTokenizerJson(file);
        const auto back = makeTokenizer(tok->kind(), tok->serialize());
        EXPECT_EQ(back->encodeIds("the ab"), tok->encodeIds("the ab"));

        ModelConfig c;
        c.kind = ModelKind::Transformer;
        c.vocabSize = tok->vocabSize();
        c.dModel = 8;
        c.nLayers = 1;
        c.dFF = 16;
        c.maxLen = 8;
        c.nHeads = 2;
        const std::string path = (dir / "tok.gwb").string();
        Model::init(c, 1, tok, "cpu").save(path);
        const Model m = Model::load(path, "cpu");
        ASSERT_TRUE(m.tokenizer());
        EXPECT_EQ(m.tokenizer()->kind(), tok->kind());
        EXPECT_EQ(m.tokenizer()->encodeIds("the ab"), tok->encodeIds("the ab"));
    }
    // loadTokenizerFile (gwb tokenizer encode --tokenizer) picks the format by content.
    std::ofstream((dir / "tokenizer.json").string()) << wake;
    EXPECT_EQ(loadTokenizerFile((dir / "tokenizer.json").string())->kind(), "wake2vec_chars");
    std::ofstream((dir / "vocab.json").string()) << v.vocab.dump();
    std::ofstream((dir / "merges.txt").string()) << mergesText(v);
    EXPECT_EQ(loadTokenizerFile((dir / "vocab.json").string())->kind(), "bpe");
    std::filesystem::remove_all(dir);
}

TEST(HfTokenizer, ImportAttachesATokenizerJsonOfTheEmbeddingSize) {
    const ModelConfig c = import_test::tinyConfig("grasslm", ModelKind::Transformer);
    const Layout& layout = builtinLayout("grasslm");
    const Model ref = Model::init(c, 3, nullptr, "cpu");
    const auto ours = ref.parameters();
    SafetensorsFile f;
    for (const KeyMapping& k : layoutMappings(layout, c.kind, c.nLayers, c.mixerLayerNorm)) {
        const FloatArray& a = ours.at(k.ours);
        f.tensors[k.theirs.at(0)] = makeStoredTensor(a.shape, a.data.data(), "F32");
    }
    const FloatArray& emb = ours.at("tok_embed.weight");
    f.tensors[layout.head] = makeStoredTensor(emb.shape, emb.data.data(), "F32");
    const auto dir = std::filesystem::temp_directory_path() / ("gwb_hf_import_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string ckpt = (dir / "ckpt.safetensors").string();
    writeSafetensors(ckpt, f);

    auto charMap = [](int n) {
        json m = json::object();
        m["<pad>"] = 0;
        for (int i = 1; i < n; ++i)
            m[std::string(1, static_cast<char>(' ' + i))] = i;
        return json{{"char_to_id", m}}.dump();
    };
    ImportOptions o;
    o.vocabPath = (dir / "tokenizer.json").string();
    std::ofstream(o.vocabPath) << charMap(50);
    const ImportedModel m = importCheckpoint(ckpt, o);
    ASSERT_TRUE(m.model.tokenizer());
    EXPECT_EQ(m.model.tokenizer()->kind(), "wake2vec_chars");
    EXPECT_EQ(m.model.tokenizer()->encodeIds("!\"~"), (std::vector<int32_t>{1, 2, 0}));

    // A Hugging Face file under another name is recognised by its content.
    {
        json vocab = json::object();
        for (int i = 0; i < 50; ++i)
            vocab["w" + std::to_string(i)] = i;
        ImportOptions hf;
        hf.vocabPath = (dir / "words.json").string();
        std::ofstream(hf.vocabPath) << json{{"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                                            {"model", {{"type", "WordLevel"}, {"unk_token", "w0"}, {"vocab", vocab}}}}
                                           .dump();
        const ImportedModel h = importCheckpoint(ckpt, hf);
        ASSERT_TRUE(h.model.tokenizer());
        EXPECT_EQ(h.model.tokenizer()->kind(), "huggingface");
        EXPECT_EQ(h.model.tokenizer()->encodeIds("w7 w49 zz"), (std::vector<int32_t>{7, 49, 0}));
    }

    // Found beside the checkpoint by loadOrImportModel, and said so.
    const ImportedModel found = loadOrImportModel(ckpt, "cpu");
    ASSERT_TRUE(found.model.tokenizer());
    bool noted = false;
    for (const auto& n : found.report.notes)
        noted = noted || n.find("tokenizer.json (found next to the checkpoint)") != std::string::npos;
    EXPECT_TRUE(noted);

    // Wake2vec's run folder: tokenizer.json above grassmann/best.pt.
    std::filesystem::create_directories(dir / "grassmann");
    const std::string nested = (dir / "grassmann" / "best.safetensors").string();
    writeSafetensors(nested, f);
    const ImportedModel above = loadOrImportModel(nested, "cpu");
    ASSERT_TRUE(above.model.tokenizer());
    EXPECT_EQ(above.model.tokenizer()->kind(), "wake2vec_chars");
    bool notedAbove = false;
    for (const auto& n : above.report.notes)
        notedAbove =
            notedAbove || n.find("tokenizer.json (found in the folder above the checkpoint)") != std::string::npos;
    EXPECT_TRUE(notedAbove);

    // Adipks's project: checkpoints/grassmann_lm.pt with data/tokenizer.json.
    std::filesystem::create_directories(dir / "project" / "checkpoints");
    std::filesystem::create_directories(dir / "project" / "data");
    const std::string adipks = (dir / "project" / "checkpoints" / "grassmann_lm.safetensors").string();
    writeSafetensors(adipks, f);
    std::ofstream((dir / "project" / "data" / "tokenizer.json").string()) << charMap(50);
    const ImportedModel project = loadOrImportModel(adipks, "cpu");
    ASSERT_TRUE(project.model.tokenizer());
    bool notedProject = false;
    for (const auto& n : project.report.notes)
        notedProject =
            notedProject || n.find("tokenizer.json (found in the project's data/ folder)") != std::string::npos;
    EXPECT_TRUE(notedProject);
    // gwb import without --vocab uses the same search.
    const FoundVocabulary where = findVocabulary(adipks);
    EXPECT_EQ(where.path, (dir / "project" / "data" / "tokenizer.json").string());
    EXPECT_EQ(where.where, "in the project's data/ folder");
    EXPECT_EQ(findVocabulary(nested).where, "in the folder above the checkpoint");
    EXPECT_EQ(findVocabulary(ckpt).where, "next to the checkpoint");
    // Only a folder named checkpoints/ looks there: a stray data/ beside another folder does not count.
    std::filesystem::create_directories(dir / "project" / "runs");
    const std::string elsewhere = (dir / "project" / "runs" / "grassmann_lm.safetensors").string();
    writeSafetensors(elsewhere, f);
    EXPECT_FALSE(loadOrImportModel(elsewhere, "cpu").model.tokenizer());
    EXPECT_EQ(findVocabulary(elsewhere).path, "");

    // A size that is not the embedding's is refused with both numbers.
    std::ofstream(o.vocabPath, std::ios::trunc) << charMap(40);
    try {
        importCheckpoint(ckpt, o);
        ADD_FAILURE() << "expected a size mismatch";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("has 40 entries but the embedding table has 50 rows"), std::string::npos)
            << e.what();
    }
    // A broken tokenizer.json names the vocabulary file and the problem.
    std::ofstream(o.vocabPath, std::ios::trunc) << R"({"model": {"type": "Unigram"}})";
    try {
        importCheckpoint(ckpt, o);
        ADD_FAILURE() << "expected an error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("model type 'Unigram' is not supported"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace gwb::engine
