// tokenizer.json: Hugging Face's byte-level BPE and WordPiece files must encode exactly like our
// GPT-2 and WordPiece tokenizers on the same vocabularies (a vocabulary trained here, and many
// texts); the tokenizer travels through a .gwb and through `--vocab tokenizer.json` into an
// import, where a size that differs from the embedding's is refused with both numbers. Hand-made
// files (WordLevel, classic BPE, Wake2vec's character map), normal forms and bad files are in
// hf_tokenizer_handmade_test.cpp.

#include "hf_tokenizer_test_util.h"
#include "import_test_util.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "import/layout_file.h"
#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"
#include "tokenizers/wordpiece_unicode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <unistd.h>

namespace gwb::engine {
namespace {

using hf_tokenizer_test::ids;
using nlohmann::json;

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
