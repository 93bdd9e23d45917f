#include "import/import_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {
namespace {

using json = nlohmann::json;

/// Where families keep their settings, inside a checkpoint's dict or a config.json: GrassLM's
/// `architecture`, argparse namespaces saved as `args` or `config` (Arledge's train.py and
/// train_exp4_ddp.py, the CausalGrassmannMixer trainer's asdict(cfg)), Lightning's `hparams`.
constexpr const char* kConfigSections[] = {"architecture", "model",   "model_config",    "config",
                                           "args",         "hparams", "hyper_parameters"};

} // namespace

/// "1,3,5" for a string that spells a list of integers ("1,3,5", "[1, 3, 5]", "(1, 3, 5)",
/// "1 3 5"), as argparse-saved arguments keep them (Arledge's --window-sizes "1,3,5"); any other
/// string unchanged.
std::string normalizeListText(const std::string& s) {
    auto trimmed = [](const std::string& t) {
        const size_t a = t.find_first_not_of(" \t");
        if (a == std::string::npos) return std::string();
        return t.substr(a, t.find_last_not_of(" \t") - a + 1);
    };
    std::string body = trimmed(s);
    if (body.size() >= 2 &&
        ((body.front() == '[' && body.back() == ']') || (body.front() == '(' && body.back() == ')')))
        body = trimmed(body.substr(1, body.size() - 2));
    if (body.empty()) return s;
    const char separator = body.find(',') != std::string::npos ? ',' : ' ';
    std::string out, item;
    std::stringstream ss(body);
    while (std::getline(ss, item, separator)) {
        item = trimmed(item);
        if (item.empty() && separator == ' ') continue; // several spaces
        if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) return s;
        out += (out.empty() ? "" : ",") + item;
    }
    if (body.back() == ',') return s; // "1,2," is not a list
    return out.empty() ? s : out;
}

namespace {

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
    if (v.is_string()) return normalizeListText(v.get<std::string>());
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

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    const size_t b = s.find_last_not_of(" \t\r");
    return s.substr(a, b - a + 1);
}

/// A YAML scalar as text: quotes removed; "" for null (nothing to report).
std::string yamlScalar(std::string v) {
    v = trim(v);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
        return v.substr(1, v.size() - 2);
    if (v == "null" || v == "~") return "";
    if (v.size() >= 2 && v.front() == '[' && v.back() == ']') { // inline list: "1,2,4"
        std::string out, item;
        std::stringstream ss(v.substr(1, v.size() - 2));
        while (std::getline(ss, item, ','))
            out += (out.empty() ? "" : ",") + yamlScalar(item);
        return out;
    }
    return v;
}

/// The subset of YAML that Hydra writes to .hydra/config.yaml: nested mappings by indentation,
/// block lists of scalars ("- 1"), inline lists, scalars, comments. Leaves land under their own
/// names, with the dotted path in the source ("model.pre_norm").
void addYaml(const std::string& text, const std::string& file, FoundConfig& out) {
    std::vector<std::pair<size_t, std::string>> path; // (indent, key) of the open mappings
    std::string listKey, listPath, listItems;
    auto flushList = [&] {
        if (!listKey.empty() && !listItems.empty())
            out.values.emplace(listKey, FoundSetting{listItems, file + ": " + listPath});
        listKey.clear();
        listItems.clear();
    };
    std::stringstream ss(text);
    std::string raw;
    while (std::getline(ss, raw)) {
        const size_t first = raw.find_first_not_of(" \r");
        if (first == std::string::npos || raw[first] == '#' || raw[first] == '\t') continue;
        // A comment starts at " #" outside quotes.
        std::string line = raw;
        char quote = 0;
        for (size_t i = first; i < line.size(); ++i) {
            const char ch = line[i];
            if (quote) {
                if (ch == quote) quote = 0;
            } else if ((ch == '"' || ch == '\'') && (i == first || line[i - 1] == ' ' || line[i - 1] == ':')) {
                quote = ch;
            } else if (ch == '#' && line[i - 1] == ' ') {
                line.resize(i);
                break;
            }
        }
        if (trim(line).empty()) continue;
        const size_t indent = line.find_first_not_of(' ');
        const std::string body = trim(line);
        if (body.rfind("- ", 0) == 0 || body == "-") {
            if (!listKey.empty()) listItems += (listItems.empty() ? "" : ",") + yamlScalar(body.substr(1));
            continue;
        }
        flushList();
        const size_t colon = body.find(':');
        if (colon == std::string::npos) continue; // not a mapping entry: ignore
        const std::string key = trim(body.substr(0, colon));
        const std::string value = trim(body.substr(colon + 1));
        while (!path.empty() && path.back().first >= indent)
            path.pop_back();
        std::string dotted;
        for (const auto& [i, k] : path)
            dotted += k + ".";
        dotted += key;
        if (value.empty()) { // a nested mapping or a block list follows
            path.emplace_back(indent, key);
            listKey = key;
            listPath = dotted;
            continue;
        }
        const std::string v = yamlScalar(value);
        if (!v.empty()) out.values.emplace(key, FoundSetting{v, file + ": " + dotted});
    }
    flushList();
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
        for (const char* record : kConfigSections) {
            const std::string r = std::string(record) + ".";
            if (key.rfind(r, 0) == 0 && key.size() > r.size())
                out.values.emplace(key.substr(r.size()),
                                   FoundSetting{normalizeListText(value), key + " in the checkpoint"});
        }
        if (key == "model_type" || key == "model_name" || key == "arch")
            out.values.emplace(key, FoundSetting{value, key + " in the checkpoint"});
    }
    // A Hydra run folder (youdie006): .hydra/config.yaml beside the checkpoint.
    const std::filesystem::path hydra = std::filesystem::path(folder) / ".hydra" / "config.yaml";
    if (std::filesystem::is_regular_file(hydra)) {
        std::ifstream in(hydra, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        addYaml(text.str(), ".hydra/config.yaml", out);
        out.files = hydra.string();
    }
    const std::filesystem::path file = std::filesystem::path(folder) / "config.json";
    if (!std::filesystem::is_regular_file(file)) return out;
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    json j;
    try {
        j = json::parse(ss.str());
    } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e999
        throw std::runtime_error(file.string() + " is not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw std::runtime_error(file.string() + ": top level must be a JSON object");
    out.files += (out.files.empty() ? "" : ", ") + file.string();
    // GrassLM keeps the sizes under `architecture`; Arledge's train_exp4_ddp.py under `config`
    // (its argparse namespace); HF-style files keep them at the top.
    for (const char* section : kConfigSections)
        if (j.contains(section) && j.at(section).is_object()) addObject(j.at(section), std::string(section) + ".", out);
    addObject(j, "", out);
    return out;
}

} // namespace gwb::engine
