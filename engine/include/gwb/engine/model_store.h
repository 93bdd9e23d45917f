#pragma once
// One model store: a model file is opened once per (file, device) and shared by every
// run that asks for it: the window's runners (trace, saliency, patching, paths, features, corpus)
// and `gwb figure` hold handles to one store, which also keeps the transcoder sets last used. Std-only.

#include "gwb/engine/features.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace gwb::engine {

/// What the store hands out: the model (copies share its weights, so handing it out is cheap)
/// and how it was opened.
struct StoredModel {
    Model model;
    std::string path;    ///< absolute
    std::string device;  ///< as asked
    ImportReport report; ///< how a checkpoint was imported (empty layout for a .gwb file)
    /// The weights' hash (modelWeightsHash, features.h: what a dictionary names its model by),
    /// computed on the first call for this model and kept with it (every copy shares it).
    std::string weightsHash() const;
};

/// Loaded models by (absolute path, device). Thread-safe: two threads asking for the same model at
/// once load it once (the second waits); different models load in parallel. A file changed on
/// disk (time or size), or asked for with other import options, is loaded again.
class ModelStore {
public:
    ModelStore();
    ~ModelStore();
    ModelStore(const ModelStore&) = delete;
    ModelStore& operator=(const ModelStore&) = delete;

    /// The process's store (the window and `gwb figure` use it).
    static const std::shared_ptr<ModelStore>& process();

    /// The model at `path` (a file or a model folder) on `device`. Without `import`, a .gwb file
    /// loads as is and a checkpoint is imported with its detected layout (loadOrImportModel); with
    /// it, the checkpoint is imported with those options (their device replaced by `device`).
    /// Throws std::runtime_error naming the file and the problem (missing, unreadable, not a
    /// model); a failed load is not kept, so the next call tries again.
    StoredModel get(const std::string& path, const std::string& device,
                    const std::optional<ImportOptions>& import = std::nullopt);

    /// The transcoder set in `folder` (loadTranscoderSet, without a model check), opened once and
    /// kept while the folder's files are unchanged (time and size): the Graph view's hover asks for
    /// many features of the same sets. The store keeps the kTranscoderSetsKept sets used last (a
    /// set of a 100M model is gigabytes); a handle already given out stays valid. Throws as
    /// loadTranscoderSet does; a failed load is not kept.
    std::shared_ptr<const TranscoderSet> transcoders(const std::string& folder);
    static constexpr size_t kTranscoderSetsKept = 2; ///< one for each model of the Graph view

    /// How many times this store has read a model from disk.
    int64_t loads() const;
    /// How many times this store has read a transcoder set from disk.
    int64_t transcoderLoads() const;
    /// Forgets every model and transcoder set (the next get loads again).
    void clear();

private:
    struct Slot;
    struct SetSlot;
    mutable std::mutex m_mutex;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<Slot>> m_slots;
    std::map<std::string, std::shared_ptr<SetSlot>> m_sets; ///< by absolute folder
    int64_t m_loads = 0, m_transcoderLoads = 0, m_uses = 0;
};

} // namespace gwb::engine
