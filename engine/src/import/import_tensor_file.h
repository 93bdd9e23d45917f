#pragma once
// Named tensors read from a PyTorch checkpoint (.pt/.pth zip archive written by torch.save) or
// a .safetensors file, without LibTorch: the bytes are parsed by our own readers
// (zip_reader.h, pickle_reader.h), so nothing in the file is ever executed. Torch- and Qt-free.

#include "import/pickle_reader.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gwb::engine {

/// Thrown when a checkpoint file cannot be read; the message names the file part and problem.
class TensorFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One tensor, copied out of its storage into a dense row-major block.
struct RawTensor {
    ScalarType dtype = ScalarType::Float32;
    std::vector<int64_t> shape; ///< extents, outermost first (empty = scalar)
    std::vector<uint8_t> bytes; ///< numel() * scalarTypeSize(dtype) bytes, row-major, host (little) endian

    int64_t numel() const;
    /// Values converted to float (float16/bfloat16 widened exactly; integers cast).
    std::vector<float> toFloat() const;
    /// Values of an integer or bool tensor as int64. Throws TensorFileError for float tensors.
    std::vector<int64_t> toInt64() const;
    /// "float32 [30522, 256]" for messages.
    std::string describe() const;
};

/// What a checkpoint file holds.
struct TensorFile {
    std::string format;                       ///< "torch-zip" or "safetensors"
    std::map<std::string, RawTensor> tensors; ///< state-dict name (prefixes stripped) -> tensor
    /// Scalars found next to the weights ("epoch" -> "12", "args.lr" -> "0.0003"), for display.
    std::map<std::string, std::string> metadata;
    std::vector<std::string> warnings; ///< things skipped (non-tensor state-dict entries, ...)
};

/// Reads a torch.save zip archive from memory: locates <top>/data.pkl, unpickles it with the
/// restricted reader, takes `model_state_dict` (or `state_dict`) when the root dict has one,
/// else the root, strips `_orig_mod.` and `module.` prefixes, and copies each tensor's view out
/// of its <top>/data/<key> record (honouring <top>/byteorder, strides and storage offsets).
TensorFile readTorchArchive(std::vector<uint8_t> bytes);
/// Reads a .safetensors file from memory (8-byte header length, JSON header, data block) with
/// the engine's container reader (checkpoint.h), then strips prefixes like readTorchArchive.
TensorFile readSafetensorsBytes(const std::vector<uint8_t>& bytes);
/// Reads `path`, choosing the format from its first bytes (zip signature or safetensors
/// header). Throws TensorFileError naming the file for unreadable or unknown files, including
/// the legacy pre-1.6 torch.save format.
TensorFile readTensorFile(const std::string& path);

/// Strips the `_orig_mod.` (torch.compile) and `module.` (DataParallel) prefixes, repeatedly.
std::string stripStateDictPrefixes(std::string name);

} // namespace gwb::engine
