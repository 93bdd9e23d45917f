#pragma once
// Sparse dictionaries (sparse autoencoders) on a site of either model: training from text files,
// their files in SAELens's layout, the standard quality figures and the top-activating contexts.
// Std types only; LibTorch inside (engine/src/features).
//
// A dictionary reads one site of the hook vocabulary (hooks.h: resid.L, mixer.L, gate.L, ffn.L,
// offset.L.D, head.L.H). Its features are named feature.<site>.<index> ("feature.resid.3.17"),
// the one name the command line, the NPZ labels and Python use.
//
// Encoder and decoder (SAELens's "standard" and "topk" architectures, apply_b_dec_to_input):
//   pre = (x - b_dec) W_enc + b_enc        x: 1 x d_in, W_enc: d_in x d_sae
//   z   = ReLU(pre)                         ("relu": trained with an L1 penalty l1 * sum |z|)
//       = the k largest of ReLU(pre), others 0   ("topk")
//   x^  = z W_dec + b_dec                   W_dec: d_sae x d_in, rows of unit norm while training
// Training runs on activations scaled by one factor s (mean ||s x|| = sqrt(d_in), measured on the
// first buffer); the saved weights have s folded in (W_enc * s, W_dec / s, b_dec / s), so a file
// reads raw activations, as SAELens's fold_activation_norm_scaling_factor leaves it.

#include "gwb/engine/array.h"
#include "gwb/engine/feature_results.h"
#include "gwb/engine/model.h"
#include "gwb/engine/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

struct DictionaryConfig {
    std::string architecture = "topk"; ///< "topk" or "relu" (ReLU + L1)
    std::string site;                  ///< hook site read, e.g. "resid.3"
    int64_t dIn = 0;                   ///< width of the site's value
    int64_t dSae = 0;                  ///< number of features
    int64_t k = 32;                    ///< active features per token ("topk")
    double l1 = 1.0;                   ///< L1 coefficient on scaled activations ("relu")
    std::string modelName;             ///< the model it was trained on (display name)
    std::string modelHash;             ///< fnv1a-64 of the model's parameters: a dictionary is refused on another model
    int64_t contextSize = 128;         ///< tokens per window it was trained on
    double scaling = 1.0;              ///< s, already folded into the weights (for the record)
    std::vector<std::string> corpus;   ///< training files
    int64_t trainedTokens = 0;         ///< activation rows seen
    uint64_t seed = 0;
    // A crosscoder (secondSite set): one dictionary over the same tokens of two models that share
    // their tokenizer. It reads x = [x_1, x_2]: `site` of the first model (d_1 = firstWidth values)
    // and `secondSite` of the second; each part was scaled to mean norm sqrt(d_m) for training
    // (blockScaling, folded in like `scaling`) and decoder rows had joint unit norm there.
    std::string secondSite;
    std::string secondModelName, secondModelHash;
    int64_t firstWidth = 0;
    std::vector<double> blockScaling;
    bool crosscoder() const { return !secondSite.empty(); }
    // A transcoder (targetSite set, e.g. ffn_in.L -> ffn.L): it reads `site` and reconstructs
    // `targetSite` of the same model (d_out values): pre = x W_enc + b_enc (no b_dec on the input),
    // y^ = z W_dec + b_dec. blockScaling holds the input's and the target's scale.
    std::string targetSite;
    int64_t dOut = 0; ///< transcoders: the target's width; 0 = d_in (a dictionary reconstructs its input)
    bool transcoder() const { return !targetSite.empty(); }
    int64_t outWidth() const { return transcoder() ? dOut : dIn; }
    /// SAELens's apply_b_dec_to_input: pre = (x - b_dec) W_enc + b_enc when true (gwb's own
    /// dictionaries), x W_enc + b_enc when false (a SAELens SAE may be trained either way;
    /// transcoders never subtract).
    bool applyBDecToInput = true;
};

/// Weights in the file's (raw activation) units.
struct Dictionary {
    DictionaryConfig config;
    FloatArray wEnc; ///< d_in x d_sae
    FloatArray bEnc; ///< d_sae
    FloatArray wDec; ///< d_sae x d_in
    FloatArray bDec; ///< d_in

    /// Feature activations z (rows x d_sae) of `x` (rows x d_in).
    FloatArray encode(const FloatArray& x) const;
    /// Reconstruction x^ (rows x d_in) of activations z (rows x d_sae).
    FloatArray decode(const FloatArray& z) const;
    /// "feature.resid.3.17".
    std::string featureName(int64_t index) const;
};

/// Writes dir/sae_weights.safetensors (W_enc, W_dec, b_enc, b_dec, float32) and dir/cfg.json
/// (SAELens's names: d_in, d_sae, hook_name, architecture, activation_fn_kwargs.k, ...; gwb's own
/// fields under "gwb"), each atomically; creates `dir`.
void saveDictionary(const Dictionary& dictionary, const std::string& dir);
/// Reads what saveDictionary writes. Throws std::runtime_error naming the file and the problem
/// (missing file, a tensor missing or of the wrong shape, an unknown architecture, k > d_sae).
Dictionary loadDictionary(const std::string& dir);
/// Throws std::invalid_argument when `dictionary` was not trained on `model`'s weights, or its
/// site is not one of the model's (naming both models / the site); for a crosscoder the same for
/// `second` and its second site (which must then be given).
void checkDictionaryFits(const Dictionary& dictionary, const Model& model, const Model* second = nullptr);
/// fnv1a-64 of the model's parameters (names, shapes and float bytes), as hex.
std::string modelWeightsHash(const Model& model);

struct FeatureTrainOptions {
    std::string site;
    std::string secondSite;         ///< crosscoders (trainCrosscoder): the second model's site
    int64_t firstWidth = 0;         ///< trainDictionaryOnRows: > 0 makes each row a crosscoder's [x_1 (this many), x_2]
    std::string targetSite;         ///< a transcoder: reconstruct this site of the model (e.g. ffn.L from ffn_in.L)
    std::vector<std::string> files; ///< UTF-8 text files, each tokenized whole
    std::string architecture = "topk";
    int64_t dSae = 1024;
    int64_t k = 32;
    double l1 = 1.0;
    int64_t tokens = 2'000'000;       ///< activation rows to train on (files are repeated as needed)
    int64_t batch = 4096;             ///< rows per step
    int64_t contextSize = 128;        ///< tokens per window (<= max_len)
    int64_t bufferWindows = 64;       ///< windows mixed in one shuffle buffer
    double lr = 2e-3;                 ///< Adam (betas 0.9, 0.999, eps 1e-8)
    int64_t deadAfterTokens = 0;      ///< a feature not firing for this many rows is dead (0 = tokens / 10)
    double auxCoefficient = 1.0 / 32; ///< TopK: AuxK loss weight (Gao et al. 2024), k_aux = d_in / 2
    uint64_t seed = 0;
    std::string device = "auto"; ///< where the dictionary trains (the model stays where it is)
    std::string stateDir;        ///< where an interrupted run keeps its state ("" = no state)
};

/// The training options a front end sets (gwb features train, gwb.features.train and its kin):
/// architecture, d_sae, k, l1, tokens, batch, context, lr, seed, declared once with their help and
/// ranges; the defaults are FeatureTrainOptions{}'s. trainDictionary and its kin check them with the
/// table's sentences.
const OptionTable<FeatureTrainOptions>& featureTrainOptions();

struct FeatureTrainProgress {
    int64_t step = 0, steps = 0;
    int64_t tokens = 0;
    double mse = 0;          ///< last step's mean squared error per row (scaled units)
    double explained = 0;    ///< last batch's explained variance
    double l0 = 0;           ///< last batch's mean active features per row
    double deadFraction = 0; ///< features not firing for deadAfterTokens rows
    double seconds = 0;
    double harvestSeconds = 0; ///< of which: forward passes reading the site
};
/// Returns false to stop (the state is kept as on a signal).
using FeatureTrainCallback = std::function<bool(const FeatureTrainProgress&)>;

struct FeatureTrainResult {
    Dictionary dictionary;
    bool complete = false; ///< false: stopped early; with stateDir, resumeFeatureTraining goes on
    int64_t steps = 0;
    double seconds = 0;
    double tokensPerSecond = 0;
};

/// Trains a dictionary on `site` of `model`. Activations are streamed from the files: windows of
/// contextSize tokens in an order drawn from the seed, bufferWindows of them at a time, their rows
/// shuffled; offset sites leave out rows t < D (no pair there). Repeatable: the same options give
/// the same weights. A stop (flag or callback) ends after the current step and, with stateDir,
/// writes the state there (weights, Adam moments, counters, position in the stream) so that
/// resumeFeatureTraining continues it; the same run uninterrupted and interrupted + resumed give
/// the same weights. Throws std::invalid_argument for bad options (no files, unknown site,
/// contextSize > max_len, k > dSae, batch < 1), naming the option.
FeatureTrainResult trainDictionary(const Model& model, const FeatureTrainOptions& options,
                                   const FeatureTrainCallback& progress = {}, const std::atomic<bool>* stop = nullptr);
/// A crosscoder over the same tokens of two models (sharing their tokenizer): options.site of
/// `first` and options.secondSite of `second` (sites with a row per token: not offset.L.D).
/// Otherwise as trainDictionary.
FeatureTrainResult trainCrosscoder(const Model& first, const Model& second, const FeatureTrainOptions& options,
                                   const FeatureTrainCallback& progress = {}, const std::atomic<bool>* stop = nullptr);
/// Continues a run from its stateDir (its options are read from there; the model, and for a
/// crosscoder the second model, must be the same). Throws std::runtime_error when the state is
/// missing or broken.
FeatureTrainResult resumeDictionaryTraining(const Model& model, const std::string& stateDir,
                                            const FeatureTrainCallback& progress = {},
                                            const std::atomic<bool>* stop = nullptr, const Model* second = nullptr);

/// Per feature of a crosscoder, its relative decoder norm ||W_dec,2[f]|| / (||W_dec,1[f]|| +
/// ||W_dec,2[f]||) in the training units (each model's part at mean norm sqrt(d_m)): 0 = only the
/// first model's, 1 = only the second's, about 0.5 = shared (the model-diffing histogram).
/// NaN for a feature whose decoder is zero. Throws std::invalid_argument for a plain dictionary.
std::vector<double> relativeDecoderNorms(const Dictionary& crosscoder);
/// The kind of a relative norm, as model-diffing papers bin it: "first" (< 0.3), "shared"
/// (0.3..0.7), "second" (> 0.7).
std::string relativeNormKind(double relativeNorm);

/// The same trainer on rows given by the caller (no model, no stream): batch i is rows
/// [i * batch, (i + 1) * batch) modulo the row count, in the given order; the scaling is measured
/// on all rows (per block with options.firstWidth: a crosscoder on rows [x_1, x_2]); options.site only names the
/// result. `initial`, when given, receives the dictionary before the first step (in file units, like the result). For
/// activations a researcher has already, and for checking the trainer against a plain PyTorch loop.
FeatureTrainResult trainDictionaryOnRows(const FloatArray& rows, const FeatureTrainOptions& options,
                                         Dictionary* initial = nullptr, const FeatureTrainCallback& progress = {},
                                         const std::atomic<bool>* stop = nullptr);

/// The feature activations z (T x d_sae) of a prompt's tokens: the site read with a hook and
/// encoded (rows t < D of an offset site are zero). A crosscoder reads both models (second given).
FloatArray featureActivations(const Model& model, const Dictionary& dictionary, const std::vector<int32_t>& ids,
                              const Model* second = nullptr);

/// "feature.resid.3.17" -> {"resid.3", 17}. Throws std::invalid_argument for another form.
std::pair<std::string, int64_t> parseFeatureName(const std::string& name);

/// A causal test on one feature: the site's value x changed at every row (or at one position) as
///   ablate: x - z_f(x) W_dec[f]             (the feature's part of the reconstruction removed; the
///                                            dictionary's error term stays)
///   clamp:  x + (value - z_f(x)) W_dec[f]   (the feature held at `value`)
///   steer:  x + value W_dec[f]              (its direction added)
/// Offset sites leave rows t < D alone (they carry no pair).
struct FeatureEdit {
    int64_t feature = 0;
    std::string mode = "ablate";
    double value = 0;
    int64_t position = -1; ///< -1: every position
};
/// The edited value of the site (T x d_in, the hook's value). Throws std::invalid_argument for an
/// unknown mode, a feature or position out of range, a value of the wrong width.
FloatArray applyFeatureEdit(const Dictionary& dictionary, const FloatArray& value, const FeatureEdit& edit);
/// A transcoder's feature: z_f is read from its input site's value (`input`, T x d_in: the FFN's
/// input) and the target site's value (`output`, T x d_out: the FFN's output) moves along W_dec[f]
/// as applyFeatureEdit moves a dictionary's site (ablate: output - z_f W_dec[f], clamp, steer).
FloatArray applyTranscoderEdit(const Dictionary& transcoder, const FloatArray& input, const FloatArray& output,
                               const FeatureEdit& edit);

struct FeatureEditResult {
    std::string name;              ///< feature.<site>.<f>
    int64_t position = 0;          ///< where the metric is read
    double metricClean = 0;        ///< logit[answer] - logit[wrong] at `position`, the model as it is
    double metricEdited = 0;       ///< the same with the edit
    std::vector<float> activation; ///< z_f at each position of the clean run (0 for rows t < D)
    std::vector<std::pair<int32_t, float>> topClean, topEdited; ///< 5 most probable next pieces, probabilities
};
/// Runs `ids` with and without the edit. `position` -1 = the last token. A transcoder's edit reads
/// its input site and writes its target site in the same pass (applyTranscoderEdit).
FeatureEditResult runFeatureEdit(const Model& model, const Dictionary& dictionary, const FeatureEdit& edit,
                                 const std::vector<int32_t>& ids, int32_t answer, int32_t wrong, int64_t position = -1);
/// A crosscoder's feature edited in both models at once: z_f is read from both models' clean values
/// at the same tokens, and each model's site moves along its own part of W_dec[f]. One result per
/// model (the two share the tokenizer, so the ids and pieces are the same).
std::vector<FeatureEditResult> runCrosscoderEdit(const Model& first, const Model& second, const Dictionary& crosscoder,
                                                 const FeatureEdit& edit, const std::vector<int32_t>& ids,
                                                 int32_t answer, int32_t wrong, int64_t position = -1);

/// Activation rows of `site` for the windows of `files` (contextSize tokens, stride contextSize,
/// in file order), at most maxRows; offset sites without rows t < D. Also the token id and the
/// (window, position) of each row. Used by evaluation, dashboards and the tests.
struct SiteActivations {
    FloatArray rows;                             ///< n x d_in
    std::vector<int32_t> tokens;                 ///< n
    std::vector<int64_t> window;                 ///< n: global window index
    std::vector<int64_t> position;               ///< n: position in its window
    std::vector<std::vector<int32_t>> windowIds; ///< each window's token ids
};
SiteActivations readSiteActivations(const Model& model, const std::string& site, const std::vector<std::string>& files,
                                    int64_t contextSize, int64_t maxRows);

/// The standard quality figures on held-out text.
struct DictionaryQuality {
    int64_t rows = 0;             ///< activation rows scored
    double explainedVariance = 0; ///< 1 - sum ||x - x^||^2 / sum ||x - mean x||^2
    double mse = 0;               ///< mean ||x - x^||^2 per row (raw units)
    double l0 = 0;                ///< mean number of active features per row
    double deadFraction = 0;      ///< features that fired on no row
    double lossClean = 0;         ///< next-token cross-entropy (nats), the model as it is
    double lossSpliced = 0;       ///< with the site replaced by x^ at every position
    /// With the site's value at each position t replaced by its mean at position t over the other
    /// held-out windows (kAblation: the window's own value left out). Not one vector at every position (zeros, or the
    /// overall mean): that makes every position alike, a Grassmann block then pairs identical reduced vectors, and the
    /// normalised Plucker vectors of those planes are rounding noise, so such a loss is not a
    /// property of the model (it moved with the batch size). The per-position mean keeps positions
    /// apart. NaN, with ablationNote saying why, where the hook check still finds a block's pair
    /// planes made of nearly parallel vectors.
    double lossAblated = 0;
    double lossRecovered =
        0; ///< (lossAblated - lossSpliced) / (lossAblated - lossClean); NaN unless the ablation hurts
    /// What lossAblated replaces the site with.
    static constexpr const char* kAblation = "per-position mean of the other windows";
    static constexpr const char* kAblationDefinition =
        "each position t of the site replaced by the site's mean at position t over the other held-out windows "
        "(the window's own value left out, the expectation of resampling that position from another window; rows "
        "t < D of an offset site keep theirs); it keeps positions apart, where one vector at every position "
        "(zeros or the overall mean) makes a Grassmann block pair identical vectors into noise planes";
    std::string ablationNote; ///< why lossAblated is NaN ("" when it is defined)
    int64_t lossTokens = 0;   ///< predictions scored
};
DictionaryQuality evaluateDictionary(const Model& model, const Dictionary& dictionary,
                                     const std::vector<std::string>& files, int64_t contextSize = 128,
                                     int64_t maxWindows = 0, const std::atomic<bool>* stop = nullptr);
/// A crosscoder's figures for each model: its part of x and x^ (explained variance, MSE), the
/// loss with its part of x^ spliced into it; L0 and the dead fraction are the crosscoder's.
std::vector<DictionaryQuality> evaluateCrosscoder(const Model& first, const Model& second, const Dictionary& crosscoder,
                                                  const std::vector<std::string>& files, int64_t contextSize = 128,
                                                  int64_t maxWindows = 0, const std::atomic<bool>* stop = nullptr);

/// One top-activating context of a feature.
struct FeatureContext {
    float activation = 0; ///< at `position`
    int64_t window = 0, position = 0;
    std::vector<int32_t> ids;       ///< the window's tokens [begin, end)
    std::vector<float> activations; ///< the feature at each of them
    int64_t begin = 0;              ///< position of ids[0] in the window
};
struct FeatureSummary {
    int64_t feature = 0;
    int64_t rows = 0, fired = 0; ///< rows scored, rows where it was > 0
    float maxActivation = 0;
    std::vector<FeatureContext> top;    ///< descending activation (ties: earlier row first)
    std::vector<double> histogramEdges; ///< bins of its nonzero activations, [0, max]
    std::vector<int64_t> histogramCounts;
    /// Decoder direction read through the unembedding (W_dec row . tok_embed^T): most promoted and
    /// most suppressed pieces with their values.
    std::vector<std::pair<int32_t, float>> promoted, suppressed;
    /// The share ||P w||^2 / ||w||^2 of the decoder direction w in row(W_red) of the Grassmann
    /// layer that reads it (the reading subspace): layer L for resid.L, layer L + 1 for mixer.L
    /// and ffn.L (they add into its input); NaN (readingLayer -1) for other sites, the last
    /// layer's outputs and Transformers.
    double readingShare = 0;
    int readingLayer = -1;
    /// Crosscoders: relativeDecoderNorms()[feature]; NaN for a plain dictionary.
    double relativeNorm = 0;
};
/// Top contexts (`top` per feature, `before`/`after` tokens of context) and histograms of the given
/// features over the windows of `files`; all features when `features` is empty.
std::vector<FeatureSummary> summarizeFeatures(const Model& model, const Dictionary& dictionary,
                                              const std::vector<std::string>& files,
                                              const std::vector<int64_t>& features, int64_t top = 20,
                                              int64_t before = 8, int64_t after = 4, int64_t contextSize = 128,
                                              int64_t maxWindows = 0, const std::atomic<bool>* stop = nullptr,
                                              const Model* second = nullptr);

/// A transcoder set: the replacement of every FFN of a model by a transcoder (attribution graphs),
/// transcoder L reading the FFN's input ffn_in.L and reconstructing its output ffn.L.
/// On disk: DIR/ffn.L (each in SAELens's layout, as saveDictionary writes it) and
/// DIR/transcoders.json (format "gwb-transcoders", version 1: model, its weights' hash, and per
/// layer its folder and sites; "complete": every layer there).
struct TranscoderSet {
    std::vector<Dictionary> layers; ///< layer L at index L
    std::string modelName, modelHash;
};
/// "ffn.L": transcoder L's folder in the set's directory.
std::string transcoderFolder(int layer);
/// Trains the transcoder of every block of `model` with `options` (site and targetSite are set per
/// layer; stateDir is DIR/ffn.L/state), each saved to DIR/ffn.L when done and the index rewritten
/// (atomically) after each. A layer already saved (a run stopped after it) is kept; a layer with a
/// state is resumed, so a stopped run goes on where it stopped and ends with the weights of an
/// uninterrupted one. `progress(layer, progress)` returns false to stop, as `stop` does: the layer
/// being trained keeps its state. Returns whether every layer is done.
bool trainTranscoderSet(const Model& model, const FeatureTrainOptions& options, const std::string& dir,
                        const std::function<bool(int, const FeatureTrainProgress&)>& progress = {},
                        const std::atomic<bool>* stop = nullptr);
/// The set in `dir`: from its transcoders.json, else from its sub-folders that hold transcoders
/// (a set made elsewhere in SAELens's layout: one folder per layer, reading ffn_in.L or
/// writing ffn.L). With `model`, each must fit it (checkDictionaryFits) and every block must have
/// one. Throws std::invalid_argument naming the folder, the layer and the problem.
TranscoderSet loadTranscoderSet(const std::string& dir, const Model* model = nullptr);

/// The dashboards of `summaries` (summarizeFeatures of `dictionary` on `model`).
std::vector<FeatureDashboard> featureDashboards(const Model& model, const Dictionary& dictionary,
                                                const std::vector<FeatureSummary>& summaries);
/// The dashboards file ("format": "gwb-feature-dashboards", version 1) as text: site, model,
/// dictionary folder, every feature (name, counts, top contexts with ids, pieces and activations,
/// histogram, promoted and suppressed pieces, reading share, relative norm) and, for a crosscoder,
/// the second site and model and the relative decoder norms. `gwb features export --out` and
/// gwb.features.export write it.
std::string featureDashboardsJson(const std::vector<FeatureDashboard>& dashboards, const Dictionary& dictionary,
                                  const std::string& modelName, const std::string& dictionaryPath,
                                  const std::string& secondModelName = {});
/// Crosscoders: the relative decoder norms as the dashboards file and `gwb features eval --json`
/// hold them (definition, models, histogram over 20 bins, each feature's value; JSON text).
std::string relativeNormsJson(const Dictionary& crosscoder);

} // namespace gwb::engine
