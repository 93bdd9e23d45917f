#pragma once
// The id check every tokenizer makes before it looks a piece up (engine-internal).

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gwb::engine::detail {

/// Throws std::out_of_range naming the id and the vocabulary size unless 0 <= id < vocabSize.
inline void checkTokenId(int64_t id, int64_t vocabSize) {
    if (id < 0 || id >= vocabSize)
        throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(vocabSize) + " pieces");
}

} // namespace gwb::engine::detail
