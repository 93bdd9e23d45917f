#pragma once
// Opening checkpoints trained with the public PyTorch re-implementations (model-spec.md,
// "State-dict names used by public PyTorch re-implementations"): torch.save .pt/.pth archives
// and .safetensors files. Std types only.
//
// Security: .pt files are read by our own restricted unpickler, never by Python's pickle or
// LibTorch. It rebuilds tensors and plain containers only, keeps a few plain-data classes
// (argparse.Namespace, numpy scalars) as inert records, refuses every other class by name, and
// executes nothing, so opening an untrusted checkpoint cannot run code.

#include "gwb/engine/config.h"
#include "gwb/engine/model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

/// Key-name families, each with its verified semantics (model-spec.md, "Verified semantics of
/// each family"):
///  GrassLM    post-norm, paper gate, one offset per layer (1,2,4,8,12,16 spread over N layers),
///             each offset projected then averaged with zero padding (empty=zero), eps 1e-8;
///             dict with model_state_dict. No Transformer baseline.
///  AlphaXiv   pre-norm with mixer LayerNorm, all six offsets per layer, empty=zero, eps 1e-6;
///             keys may carry `_orig_mod.`.
///  KaneNorman geometry-only gate (x = LN(x + sigmoid(W[x;g]) * g)), post-norm (pre with its
///             pre_norm flag), all six offsets, mean in Plücker space then one projection
///             (empty=bias), eps 1e-6; idx_i/idx_j buffers; Transformer with qkv_projection,
///             out_projection and a causal_mask buffer; bare state_dict.
enum class ImportLayout { Auto, GrassLM, AlphaXiv, KaneNorman };

/// "auto", "grasslm", "alphaxiv", "kanenorman".
const char* layoutName(ImportLayout layout);
/// Inverse of layoutName (case-insensitive); throws std::invalid_argument listing the names.
ImportLayout layoutFromName(const std::string& name);

struct ImportOptions {
    ImportLayout layout = ImportLayout::Auto;
    /// When set, a checkpoint of the other kind is rejected by name.
    std::optional<ModelKind> expectedKind;
    /// Offset schedule overriding the layout's (text for parseOffsetSchedule()); "" = the layout's.
    std::string offsetSchedule;
    /// Transformer heads: not visible in the tensor shapes. Default: the checkpoint's `args`
    /// (n_heads / num_heads / nhead) when present, else 4 (model-spec).
    std::optional<int64_t> nHeads;
    std::optional<double> pluckerEps;         ///< overrides the layout's (and a found config's) eps
    std::optional<NormPlacement> norm;        ///< overrides the layout's block arrangement
    std::optional<EmptyRule> empty;           ///< overrides the layout's empty-offset rule
    std::optional<GateVariant> gate;          ///< overrides the layout's gate
    /// Read sizes, offsets and flags from a config found with the checkpoint (`args` / `config`
    /// in the .pt, config.json beside it or in its folder). Off: the family's defaults only.
    bool useFoundConfig = true;
    /// Tokenizer: a WordPiece vocab.txt, or a GPT-2 vocab.json (merges.txt beside it or
    /// mergesPath).
    std::string vocabPath;
    std::string mergesPath;
    std::string device = "cpu"; ///< "auto", "cpu", "cuda"
};

struct ImportReport {
    ImportLayout layout = ImportLayout::Auto;    ///< the layout used (detected when Auto was asked)
    std::string format;                          ///< "torch-zip", "safetensors" or "gwb"
    std::map<std::string, std::string> metadata; ///< epoch, val_ppl, args.* found in the file
    std::vector<std::string> notes;              ///< what was inferred or skipped, one line each
};

struct ImportedModel {
    Model model;
    ImportReport report;
};

/// Reads `path` (a checkpoint file, or a folder holding config.json + model.safetensors), maps its tensors onto our model with the layout's variant, checks every key
/// and shape, and attaches the tokenizer. A .gwb file is loaded as is. Throws std::runtime_error
/// whose message names the file and the problem: unknown or missing keys, shape mismatches, a
/// Transformer checkpoint where a Grassmann one was expected (and vice versa), index buffers
/// that are not a pair order, an untied head, a vocabulary whose size differs from the
/// embedding table, a pickle asking for a class outside the allowed set.
ImportedModel importCheckpoint(const std::string& path, const ImportOptions& options = {});

/// What the GUI calls for any model file: a .gwb is loaded with Model::load; a .pt/.pth/.bin/
/// .ckpt/.safetensors file is imported with the detected layout, taking the tokenizer from a
/// vocab.txt (or vocab.json + merges.txt) in the same folder when there is one. Throws
/// std::runtime_error naming the file and the problem.
ImportedModel loadOrImportModel(const std::string& path, const std::string& device = "auto",
                                std::optional<ModelKind> expectedKind = std::nullopt);

/// "kanenorman grassmann: norm=post gate=geometry_only empty=bias eps=1e-06" for an imported
/// model (status lines, gwb info); "" when config.family is empty (a model made here).
std::string importedVariantText(const ModelConfig& config);

/// True for names the importer reads: .pt, .pth, .bin, .ckpt, .safetensors (case-insensitive).
bool isImportableCheckpointPath(const std::string& path);

/// Offset schedule text -> per-layer sets for `nLayers` layers:
///   "1,2,4,8,12,16"            the same set in every layer
///   "per_layer:1,2,4,8,12,16"  one offset per layer, layer l gets entry floor(l * K / N)
///   "1,2;4;8,12"               explicit sets separated by ';' (one per layer)
/// Throws std::invalid_argument naming the problem.
std::vector<std::vector<int>> parseOffsetSchedule(const std::string& text, int64_t nLayers);

/// The layout's default schedule for N layers.
std::vector<std::vector<int>> defaultLayoutOffsets(ImportLayout layout, int64_t nLayers);

} // namespace gwb::engine
