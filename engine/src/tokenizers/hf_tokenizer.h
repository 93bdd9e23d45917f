#pragma once
// The two files called tokenizer.json, engine-internal factories (the public entry point is
// makeTokenizerJson() in gwb/engine/tokenizer.h):
// - Hugging Face `tokenizers`' tokenizer.json (kind "huggingface"): BPE (byte-level or not),
//   WordPiece and WordLevel models with the normalizers, pre-tokenizers, decoders and added tokens
//   that GPT-2, BERT and character-level exports use. serialize() is the file's text.
// - Wake2vec's character map (kind "wake2vec_chars"): {"char_to_id": {"<pad>": 0, "<eos>": 1,
//   "a": 2, ...}}, one code point a piece, an unknown character encodes to 0. serialize() is the text.

#include "gwb/engine/tokenizer.h"

#include <string>

namespace gwb::engine {

/// "huggingface" for a JSON object with "model", "wake2vec_chars" for one with "char_to_id",
/// "" for anything else (another JSON file, or not JSON).
std::string tokenizerJsonFormat(const std::string& text);

/// Throw std::invalid_argument("tokenizer.json: ...") naming the problem or the unsupported
/// component; never fall back to a guess.
TokenizerPtr makeHuggingFaceTokenizer(const std::string& json);
TokenizerPtr makeWake2vecCharTokenizer(const std::string& json);

} // namespace gwb::engine
