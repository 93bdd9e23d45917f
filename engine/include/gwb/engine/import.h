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

/// Layouts: how each public implementation names its tensors, its block arrangement and variant
/// flags, its default offsets and how to recognise it, as data (resources/layouts/*.json,
/// compiled in; README "Layout files"). The built-in ones: grasslm, alphaxiv, kanenorman
/// (model-spec.md, "Verified semantics of each family").

/// Names of the built-in layouts, sorted.
std::vector<std::string> builtinLayoutNames();
/// For `gwb import --list-layouts`: each built-in layout's name, title, kinds, variant and where
/// its file came from, a paragraph each.
std::string describeLayouts();
/// Checks a layout file (every field, every tensor covered once) and returns its name. Throws
/// std::runtime_error naming the file and the problem.
std::string checkLayoutFile(const std::string& path);

struct ImportOptions {
    /// "auto" (detect among the built-in layouts) or a built-in layout's name.
    std::string layout = "auto";
    /// A layout file (gwb-layout JSON) to use instead of a built-in one.
    std::string layoutFile;
    /// When set, a checkpoint of the other kind is rejected by name.
    std::optional<ModelKind> expectedKind;
    /// Offset schedule overriding the layout's (text for parseOffsetSchedule()); "" = the layout's.
    std::string offsetSchedule;
    /// Transformer heads: not visible in the tensor shapes. Default: the checkpoint's `args`
    /// (n_heads / num_heads / nhead) when present, else the layout's, else 4 (model-spec).
    std::optional<int64_t> nHeads;
    std::optional<double> pluckerEps;       ///< overrides the layout's (and a found config's) eps
    std::optional<NormPlacement> norm;      ///< overrides the layout's block arrangement
    std::optional<EmptyRule> empty;         ///< overrides the layout's empty-offset rule
    std::optional<GateVariant> gate;        ///< overrides the layout's gate
    std::optional<Aggregation> aggregation; ///< overrides the layout's aggregation order
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
    std::string layout;       ///< name of the layout used (detected when auto was asked)
    std::string layoutSource; ///< "built-in (resources/layouts/x.json)" or the file
    /// How the layout was chosen: the choice and why, then the runner-up and why it lost (auto),
    /// or "given with --layout".
    std::vector<std::string> detection;
    /// Each variant flag and where it came from: "norm=pre (from .hydra/config.yaml: model.pre_norm)",
    /// "norm=post (default of the kanenorman layout; --norm pre overrides)".
    std::vector<std::string> flags;
    std::string format;                          ///< "torch-zip", "safetensors" or "gwb"
    std::map<std::string, std::string> metadata; ///< epoch, val_ppl, args.* found in the file
    std::vector<std::string> notes;              ///< what was inferred or skipped, one line each
};

struct ImportedModel {
    Model model;
    ImportReport report;
};

/// Reads `path` (a checkpoint file, or a folder holding config.json + model.safetensors), maps its tensors onto our
/// model with the layout's variant, checks every key and shape, and attaches the tokenizer. A .gwb file is loaded as
/// is. Throws std::runtime_error whose message names the file and the problem: unknown or missing keys, shape
/// mismatches, a Transformer checkpoint where a Grassmann one was expected (and vice versa), index buffers that are not
/// a pair order, an untied head, a vocabulary whose size differs from the embedding table, a pickle asking for a class
/// outside the allowed set.
ImportedModel importCheckpoint(const std::string& path, const ImportOptions& options = {});

/// Where a family keeps the tokenizer of a checkpoint: a tokenizer.json, vocab.txt or vocab.json
/// beside it; Wake2vec's tokenizer.json above its grassmann/ or transformer/ folder; Adipks's
/// data/tokenizer.json beside its checkpoints/ folder. Empty path when none is there; `where`
/// says which rule found it ("next to the checkpoint", ...).
struct FoundVocabulary {
    std::string path;
    std::string where;
};
FoundVocabulary findVocabulary(const std::string& checkpointPath);

/// What the GUI calls for any model file: a .gwb is loaded with Model::load; a .pt/.pth/.bin/
/// .ckpt/.safetensors file is imported with the detected layout, taking the tokenizer that
/// findVocabulary() finds. Throws std::runtime_error naming the file and the problem.
ImportedModel loadOrImportModel(const std::string& path, const std::string& device = "auto",
                                std::optional<ModelKind> expectedKind = std::nullopt);

/// "kanenorman grassmann: norm=post gate=geometry_only empty=bias eps=1e-06" for an imported
/// model (status lines, gwb info); "" when config.family is empty (a model made here).
std::string importedVariantText(const ModelConfig& config);

/// True for names the importer reads: .pt, .pth, .bin, .ckpt, .safetensors, .grasslm (case-insensitive),
/// and folders (Hugging Face's save_pretrained output, GrassLM's model folders).
bool isImportableCheckpointPath(const std::string& path);

/// Offset schedule text -> per-layer sets for `nLayers` layers:
///   "1,2,4,8,12,16"            the same set in every layer
///   "per_layer:1,2,4,8,12,16"  one offset per layer, layer l gets entry floor(l * K / N)
///   "1,2;4;8,12"               explicit sets separated by ';' (one per layer)
/// Throws std::invalid_argument naming the problem.
std::vector<std::vector<int>> parseOffsetSchedule(const std::string& text, int64_t nLayers);

/// A built-in layout's default schedule for N layers (GrassLM: one offset per layer,
/// 1,2,4,8,12,16 for 6 layers, 1,1,2,2,...,16,16 for 12, 1 otherwise).
std::vector<std::vector<int>> defaultLayoutOffsets(const std::string& layout, int64_t nLayers);

} // namespace gwb::engine
