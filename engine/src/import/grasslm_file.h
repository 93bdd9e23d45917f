#pragma once
// GrassLM's own weight file (.grasslm), as adriansimonn/GrassLM's python/grasslm/export.py writes it and
// its cpp/src/weight_loader.cpp reads it (read at the repository's newest commit, aee352c1b5f7,
// 2026-02-17; export.py last changed in ee304fb, weight_loader.cpp in 466f09f), the format its C++ engine and macOS app
// read: a 64-byte header
// ("GRLM", version 1, n_layers, d_model, d_reduce, d_ff, vocab_size, max_seq_len, dtype 0 = float32 / 1 = float16,
// zeros), then a table of named tensors (u32 count; per tensor u32 name length, UTF-8 name, u32 rank, u32 extents,
// row-major data), all little-endian. It holds GrassLM's state dict without lm_head.weight (tied to tok_embed.weight)
// and the pair-index buffers, plus `window_offsets` (one offset per block, as floats): the schedule the model was
// trained with. Torch- and Qt-free.

#include "import/import_tensor_file.h"

#include <cstdint>
#include <vector>

namespace gwb::engine {

/// True when the bytes start with GrassLM's magic "GRLM".
bool looksLikeGrassLM(const std::vector<uint8_t>& bytes);

/// The file as the importer's named tensors, under GrassLM's state-dict names: lm_head.weight
/// restored as the tied copy of tok_embed.weight, and window_offsets turned into one int64 tensor
/// per block (blocks.{i}.mixing.window_offsets, which the grasslm layout reads as the offsets).
/// Throws TensorFileError naming what is wrong: magic, version, dtype, sizes, a truncated or
/// overlong table, duplicate names, bytes after the last tensor, or a header that disagrees with
/// the tensors it describes.
TensorFile readGrassLMBytes(const std::vector<uint8_t>& bytes);

} // namespace gwb::engine
