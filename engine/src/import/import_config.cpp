#include "import/import_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {
namespace {

using json = nlohmann::json;

/// Text of a scalar or an integer list; "" for anything else.
std::string valueText(const json& v) {
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number_float()) {
        std::ostringstream s;
        s.precision(10);
        s << v.get<double>();
        return s.str();
    }
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array() && !v.empty()) {
        std::string s;
        for (const auto& e : v) {
            if (!e.is_number_integer()) return "";
            s += (s.empty() ? "" : ",") + std::to_string(e.get<int64_t>());
        }
        return s;
    }
    return "";
}

void addObject(const json& o, const std::string& prefix, FoundConfig& out) {
    for (auto it = o.begin(); it != o.end(); ++it) {
        const std::string text = valueText(it.value());
        if (!text.empty()) out.values.emplace(it.key(), FoundSetting{text, "config.json: " + prefix + it.key()});
    }
}

} // namespace

std::optional<FoundSetting> FoundConfig::get(std::initializer_list<const char*> names) const {
    for (const char* n : names)
        if (const auto it = values.find(n); it != values.end()) return it->second;
    return std::nullopt;
}

FoundConfig findConfig(const std::string& folder, const std::map<std::string, std::string>& metadata) {
    FoundConfig out;
    for (const auto& [key, value] : metadata) {
        for (const char* record : {"args.", "config.", "hparams.", "hyper_parameters."}) {
            const std::string r = record;
            if (key.rfind(r, 0) == 0 && key.size() > r.size())
                out.values.emplace(key.substr(r.size()), FoundSetting{value, key + " in the checkpoint"});
        }
    }
    const std::filesystem::path file = std::filesystem::path(folder) / "config.json";
    if (!std::filesystem::is_regular_file(file)) return out;
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    json j;
    try {
        j = json::parse(ss.str());
    } catch (const json::parse_error& e) {
        throw std::runtime_error(file.string() + " is not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw std::runtime_error(file.string() + ": top level must be a JSON object");
    out.files = file.string();
    // GrassLM keeps the sizes under `architecture`; HF-style files keep them at the top.
    for (const char* section : {"architecture", "model", "model_config"})
        if (j.contains(section) && j.at(section).is_object()) addObject(j.at(section), std::string(section) + ".", out);
    addObject(j, "", out);
    return out;
}

} // namespace gwb::engine
