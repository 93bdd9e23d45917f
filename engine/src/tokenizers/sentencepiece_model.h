#pragma once
// The fields of a SentencePiece ModelProto (sentencepiece_model.proto) that encoding needs,
// read with a minimal protobuf wire-format parser (engine-internal).

#include <string>
#include <vector>

namespace gwb::engine {

/// sentencepiece_model.proto SentencePiece.Type values.
enum class SpmPieceType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
/// TrainerSpec.ModelType values.
enum class SpmModelType { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

struct SentencePieceModel {
    struct Piece {
        std::string piece;
        float score = 0;
        SpmPieceType type = SpmPieceType::Normal;
    };
    std::vector<Piece> pieces; ///< id = index
    SpmModelType type = SpmModelType::Unigram;
    bool byteFallback = false;
    std::string normalizationName; ///< NormalizerSpec.name ("identity" for our models)
    bool hasCharsMap = false;      ///< a precompiled normalization map is present (unsupported)
    bool addDummyPrefix = true;
    bool removeExtraWhitespaces = true;
    bool escapeWhitespaces = true;
};

/// Throws std::invalid_argument naming what is malformed or unsupported (non-identity
/// normalization, WORD/CHAR model types, treat_whitespace_as_suffix).
SentencePieceModel parseSentencePieceModel(const std::string& bytes);

} // namespace gwb::engine
