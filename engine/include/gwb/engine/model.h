#pragma once
// A loaded or freshly initialized language model (Grassmann or Transformer). Std types only:
// the LibTorch module lives behind the pimpl. Copies share the same underlying model.
//
// .gwb checkpoint = safetensors (checkpoint.h) with tensors named as parameterSpecs() lists,
// "tokenizer.model" (U8) when a tokenizer is embedded, and __metadata__ keys:
//   "format" = "gwb", "format_version" = "1", "model_config" (configToJson), "training_summary"
//   (JSON, may be "{}"), "tokenizer_kind" (when a tokenizer is embedded).

#include "gwb/engine/array.h"
#include "gwb/engine/config.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/tokenizer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

enum class SaveDtype { F32, F16 };

/// Version written to and accepted from __metadata__["format_version"].
constexpr const char* kCheckpointFormatVersion = "1";

class Model {
public:
    struct Impl;

    Model();
    ~Model();
    Model(const Model&);
    Model& operator=(const Model&);
    Model(Model&&) noexcept;
    Model& operator=(Model&&) noexcept;

    /// Loads a .gwb file onto `device` ("auto", "cpu", "cuda"). Every structural problem is
    /// reported with the path and what is wrong (std::runtime_error). With `expectedKind`, a
    /// checkpoint of the other kind is rejected by name ("... is a Transformer checkpoint").
    static Model load(const std::string& path, const std::string& device = "auto",
                      std::optional<ModelKind> expectedKind = std::nullopt);
    /// Fresh weights: N(0, 0.02), zero biases, LayerNorm 1/0, from `seed`. A tokenizer, when given,
    /// must have config.vocabSize ids.
    static Model init(const ModelConfig& config, uint64_t seed, TokenizerPtr tokenizer = nullptr,
                      const std::string& device = "auto");
    /// Model from named float tensors (names and shapes of parameterSpecs(config); every one
    /// required, no others). Used by the importer and the checkpoint loader.
    static Model fromParameters(const ModelConfig& config, const std::map<std::string, FloatArray>& parameters,
                                TokenizerPtr tokenizer = nullptr, const std::string& device = "auto");

    /// Writes the checkpoint atomically (temp file + rename).
    void save(const std::string& path, SaveDtype dtype = SaveDtype::F32) const;

    bool valid() const { return static_cast<bool>(m_impl); }
    const ModelConfig& config() const;
    /// May be null: the model then only accepts token ids.
    TokenizerPtr tokenizer() const;
    void setTokenizer(TokenizerPtr tokenizer);
    std::string device() const;      ///< "cpu", "cuda:0"
    std::string path() const;        ///< file it was loaded from or last saved to ("" if none)
    std::string displayName() const; ///< config name, else the file's stem, else the kind

    int64_t parameterCount() const; ///< numel of the instantiated parameters (tied head once)
    ParameterCounts parameterCounts() const;
    /// Multi-line human-readable architecture and parameter summary.
    std::string summary() const;
    /// JSON text of the training summary ("{}" when unknown).
    std::string trainingSummary() const;
    void setTrainingSummary(const std::string& json);

    /// Copies of every parameter tensor (CPU float), by name.
    std::map<std::string, FloatArray> parameters() const;

    Impl& impl() const; ///< engine-internal access (Torch types)

private:
    explicit Model(std::shared_ptr<Impl> impl);
    std::shared_ptr<Impl> m_impl;
};

/// Architecture summary from a config alone (gwb info --config).
std::string configSummary(const ModelConfig& config);

} // namespace gwb::engine
