#pragma once
// Text <-> token ids, with the byte span of every piece in the original text. Std types only.
// Implementations: SentencePiece (sentencepiece_tokenizer.cpp, the bundled models), WordPiece
// (wordpiece_tokenizer.cpp, bert-base-uncased vocab.txt for imported checkpoints), GPT-2 BPE
// (bpe_tokenizer.cpp, vocab.json + merges.txt), and the two tokenizer.json formats
// (hf_tokenizer.cpp: Hugging Face's, and Wake2vec's character map).
// A tokenizer travels inside a .gwb checkpoint as (kind(), serialize()) and comes back through
// makeTokenizer(kind, bytes).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gwb::engine {

/// One piece of an encoded text.
struct TokenPiece {
    int32_t id = 0;    ///< vocabulary id in [0, vocabSize)
    std::string text;  ///< display text of the piece (byte-fallback pieces as <0xNN>)
    int64_t begin = 0; ///< byte offset of the piece's first byte in the encoded text
    /// One past its last byte. begin == end only for a piece that stands for no input byte
    /// (SentencePiece's word-start marker when the text does not start with a space).
    int64_t end = 0;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    /// "sentencepiece", "wordpiece", "bpe" (GPT-2 byte-level), "huggingface" (a tokenizer.json) or
    /// "wake2vec_chars" (Wake2vec's character map): the key makeTokenizer() dispatches on.
    virtual std::string kind() const = 0;
    /// Number of ids (rows of the embedding table the tokenizer expects).
    virtual int64_t vocabSize() const = 0;

    /// Encodes valid UTF-8 text. Pieces are in text order with non-decreasing, non-overlapping
    /// spans; together they cover every byte of the text except bytes the tokenizer drops by
    /// design (whitespace for WordPiece). Throws std::invalid_argument naming the byte offset
    /// of the first invalid UTF-8 sequence (use checkUtf8()).
    virtual std::vector<TokenPiece> encode(std::string_view text) const = 0;
    /// Ids only (same as encode() without spans; may be faster).
    virtual std::vector<int32_t> encodeIds(std::string_view text) const;
    /// Text of a sequence of ids. Throws std::out_of_range naming an id outside the vocabulary.
    virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
    /// Display text of one id. Throws std::out_of_range for an id outside the vocabulary.
    virtual std::string pieceText(int32_t id) const = 0;

    /// Self-contained bytes from which makeTokenizer(kind(), bytes) rebuilds an equal tokenizer
    /// (SentencePiece: the serialized model proto; WordPiece: the vocab.txt text).
    virtual std::string serialize() const = 0;
};

using TokenizerPtr = std::shared_ptr<const Tokenizer>;

/// Rebuilds a tokenizer from kind() + serialize(). Throws std::invalid_argument for an unknown
/// kind or bytes that do not parse (message names which).
TokenizerPtr makeTokenizer(const std::string& kind, const std::string& bytes);

/// Loads a tokenizer file: a SentencePiece .model, a WordPiece vocab.txt (one token per line,
/// recognized by the .txt extension), or a .json: a tokenizer.json (see makeTokenizerJson()) or a
/// GPT-2 vocab.json with merges.txt beside it. Throws std::runtime_error naming the file and the problem.
TokenizerPtr loadTokenizerFile(const std::string& path);

/// SentencePiece model (unigram or BPE, identity normalization) from its serialized proto bytes;
/// encodes exactly like libsentencepiece (implemented in sentencepiece_tokenizer.cpp).
TokenizerPtr makeSentencePieceTokenizer(const std::string& modelProto);
/// WordPiece tokenizer (lower-cased BERT basic tokenization + greedy longest-match-first) from
/// the text of a vocab.txt (implemented by the importer in wordpiece_tokenizer.cpp).
TokenizerPtr makeWordPieceTokenizer(const std::string& vocabText);

/// A tokenizer.json, the format picked by content: Hugging Face's (a "model" object: BPE,
/// byte-level or not, WordPiece or WordLevel) or Wake2vec's character map ({"char_to_id": {...}},
/// one code point a piece, unknown characters encode to 0). Throws std::invalid_argument
/// ("tokenizer.json: ...") for bad files and for any component it does not implement, by name.
TokenizerPtr makeTokenizerJson(const std::string& text);

/// Settings of `gwb tokenizer train`.
struct SentencePieceTrainOptions {
    std::vector<std::string> inputs;     ///< UTF-8 text files, one sentence per line
    int64_t vocabSize = 8000;            ///< pieces in the model
    std::string modelType = "unigram";   ///< "unigram" or "bpe"
    double characterCoverage = 0.9995;   ///< share of characters covered without byte fallback
    int64_t inputSentenceSize = 2000000; ///< sample at most this many lines (0 = all)
    int64_t seed = 0;                    ///< sampling seed (reproducible models)
    int threads = 0;                     ///< 0 = all cores
};

/// Trains a SentencePiece model with byte fallback (so any valid UTF-8 round-trips) and an
/// identity normalization (so spans map 1:1 to the original text) by running the `spm_train`
/// program (libsentencepiece cannot share a process with LibTorch's protobuf; see
/// sentencepiece_tokenizer.cpp). Returns the serialized model proto; write it with an atomic
/// file write. Throws std::runtime_error with spm_train's output on failure.
std::string trainSentencePiece(const SentencePieceTrainOptions& options);

/// Throws std::invalid_argument("invalid UTF-8 at byte N: ...") for the first invalid sequence.
void checkUtf8(std::string_view text);

} // namespace gwb::engine
