#pragma once
// What the tokenizer.json tests share (hf_tokenizer_test.cpp, hf_tokenizer_handmade_test.cpp): the
// ids of a list of pieces.

#include "gwb/engine/tokenizer.h"

#include <cstdint>
#include <vector>

namespace gwb::engine::hf_tokenizer_test {

inline std::vector<int32_t> ids(const std::vector<TokenPiece>& p) {
    std::vector<int32_t> out;
    for (const auto& x : p)
        out.push_back(x.id);
    return out;
}

} // namespace gwb::engine::hf_tokenizer_test
