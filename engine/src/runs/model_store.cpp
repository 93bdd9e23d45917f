#include "gwb/engine/model_store.h"

#include "gwb/engine/features.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace gwb::engine {

namespace fs = std::filesystem;

/// One (path, device)'s model; its own mutex is held while it loads, so that a second caller
/// waits for the first load instead of starting another.
struct ModelStore::Slot {
    std::mutex mutex;
    std::optional<StoredModel> model;
    fs::file_time_type modified{};
    std::uintmax_t size = 0;
    std::string options; ///< optionsKey() of the import options it was opened with
};

/// One transcoder folder's set, loaded under its own mutex like a model's slot.
struct ModelStore::SetSlot {
    std::mutex mutex;
    std::shared_ptr<const TranscoderSet> set;
    fs::file_time_type modified{};
    std::uintmax_t size = 0;
    int64_t lastUse = 0; ///< m_uses when last asked for (guarded by the store's mutex)
};

namespace {

/// The import options as text, to tell whether a model was opened with the ones asked for now
/// (the device is the slot's own, so it is left out).
std::string optionsKey(const std::optional<ImportOptions>& o) {
    if (!o) return "detect";
    std::ostringstream s;
    auto opt = [&s](const auto& v) {
        if (v)
            s << static_cast<double>(*v);
        else
            s << '-';
        s << '|';
    };
    auto optEnum = [&s](const auto& v) {
        if (v)
            s << static_cast<int>(*v);
        else
            s << '-';
        s << '|';
    };
    s << o->layout << '|' << o->layoutFile << '|' << o->offsetSchedule << '|' << o->vocabPath << '|' << o->mergesPath
      << '|' << o->useFoundConfig << '|';
    optEnum(o->expectedKind);
    opt(o->nHeads);
    opt(o->pluckerEps);
    optEnum(o->norm);
    optEnum(o->empty);
    optEnum(o->gate);
    optEnum(o->aggregation);
    return s.str();
}

/// Time and size of a file, or of a folder's newest entry and total size (a model folder changes
/// when a file in it is rewritten).
std::pair<fs::file_time_type, std::uintmax_t> stamp(const fs::path& p) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) return {fs::last_write_time(p, ec), fs::file_size(p, ec)};
    fs::file_time_type newest = fs::last_write_time(p, ec);
    std::uintmax_t total = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(p, ec)) {
        if (!e.is_regular_file(ec)) continue;
        newest = std::max(newest, e.last_write_time(ec));
        total += e.file_size(ec);
    }
    return {newest, total};
}

/// stamp() over a transcoder set's folder and its sub-folders (one per layer, where the weights are).
std::pair<fs::file_time_type, std::uintmax_t> setStamp(const fs::path& folder) {
    auto [newest, total] = stamp(folder);
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
        if (!e.is_directory(ec)) continue;
        const auto [t, size] = stamp(e.path());
        newest = std::max(newest, t);
        total += size;
    }
    return {newest, total};
}

} // namespace

std::string StoredModel::weightsHash() const {
    return modelWeightsHash(model);
}

ModelStore::ModelStore() = default;
ModelStore::~ModelStore() = default;

const std::shared_ptr<ModelStore>& ModelStore::process() {
    static const std::shared_ptr<ModelStore> store = std::make_shared<ModelStore>();
    return store;
}

StoredModel ModelStore::get(const std::string& path, const std::string& device,
                            const std::optional<ImportOptions>& import) {
    std::error_code ec;
    if (path.empty()) throw std::runtime_error("no model file given");
    if (!fs::exists(path, ec)) throw std::runtime_error("model file '" + path + "' does not exist");
    const fs::path abs = fs::absolute(path, ec).lexically_normal();
    const std::string file = ec ? path : abs.string();
    std::shared_ptr<Slot> slot;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::shared_ptr<Slot>& s = m_slots[{file, device}];
        if (!s) s = std::make_shared<Slot>();
        slot = s;
    }
    std::lock_guard<std::mutex> lock(slot->mutex);
    const auto [modified, size] = stamp(abs);
    const std::string key = optionsKey(import);
    if (slot->model && slot->modified == modified && slot->size == size && slot->options == key) return *slot->model;
    slot->model.reset(); // a failed load below leaves nothing behind
    ImportedModel loaded;
    if (import) {
        ImportOptions o = *import;
        o.device = device;
        loaded = importCheckpoint(file, o);
    } else {
        loaded = loadOrImportModel(file, device);
    }
    {
        std::lock_guard<std::mutex> count(m_mutex);
        ++m_loads;
    }
    slot->model = StoredModel{loaded.model, file, device, loaded.report};
    slot->modified = modified;
    slot->size = size;
    slot->options = key;
    return *slot->model;
}

std::shared_ptr<const TranscoderSet> ModelStore::transcoders(const std::string& folder) {
    std::error_code ec;
    if (folder.empty()) throw std::runtime_error("no transcoder folder given");
    const fs::path abs = fs::absolute(folder, ec).lexically_normal();
    const std::string key = ec ? folder : abs.string();
    std::shared_ptr<SetSlot> slot;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::shared_ptr<SetSlot>& s = m_sets[key];
        if (!s) s = std::make_shared<SetSlot>();
        s->lastUse = ++m_uses;
        slot = s;
        // Beyond the sets kept, the least recently asked for is dropped (its handles stay valid).
        while (m_sets.size() > kTranscoderSetsKept) {
            auto oldest = m_sets.begin();
            for (auto it = m_sets.begin(); it != m_sets.end(); ++it)
                if (it->second->lastUse < oldest->second->lastUse) oldest = it;
            m_sets.erase(oldest);
        }
    }
    std::lock_guard<std::mutex> lock(slot->mutex);
    const auto [modified, size] = setStamp(abs);
    if (slot->set && slot->modified == modified && slot->size == size) return slot->set;
    slot->set.reset(); // a failed load below leaves nothing behind
    slot->set = std::make_shared<const TranscoderSet>(loadTranscoderSet(key));
    slot->modified = modified;
    slot->size = size;
    {
        std::lock_guard<std::mutex> count(m_mutex);
        ++m_transcoderLoads;
    }
    return slot->set;
}

int64_t ModelStore::transcoderLoads() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_transcoderLoads;
}

int64_t ModelStore::loads() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_loads;
}

void ModelStore::clear() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_slots.clear();
    m_sets.clear();
}

} // namespace gwb::engine
