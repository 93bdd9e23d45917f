// cfg.json to and from DictionaryConfig (dictionary_config.h).

#include "features/dictionary_config.h"
#include "formats/json_integer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>

namespace gwb::engine {
namespace {
namespace fs = std::filesystem;

/// The SAELens cfg.json layout written (metadata.sae_lens_version): 6.x, where SAELens's loader
/// reads the file as it is, without its pre-6.0 conversion.
constexpr const char* kSaeLensLayout = "6.0.0";

/// `p` absolute, with symbolic links and "..", "." resolved as far as the path exists.
fs::path physical(const fs::path& p) {
    std::error_code ec;
    fs::path out = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? fs::absolute(p, ec).lexically_normal() : out;
}

bool isFile(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}
} // namespace

std::vector<std::string> corpusPathsForFile(const std::vector<std::string>& paths, const std::string& dir) {
    const fs::path base = physical(dir);
    std::vector<std::string> out;
    for (const std::string& p : paths) {
        const fs::path file = physical(p);
        const fs::path rel = file.lexically_relative(base);
        out.push_back(rel.empty() ? file.string() : rel.generic_string());
    }
    return out;
}

std::vector<std::string> corpusPathsFromFile(const std::vector<std::string>& stored,
                                             const std::vector<std::string>& absolute, const std::string& dir,
                                             bool relativeToDir) {
    const fs::path base = physical(dir);
    std::vector<std::string> out;
    for (size_t i = 0; i < stored.size(); ++i) {
        const fs::path p(stored[i]);
        std::vector<fs::path> candidates;
        if (p.is_absolute()) {
            candidates = {p};
        } else if (relativeToDir) {
            candidates = {base / p};
            if (absolute.size() == stored.size()) candidates.emplace_back(absolute[i]);
        } else { // before gwb.corpus_paths: relative to wherever training ran
            candidates = {physical(p), base.parent_path() / p, base / p};
        }
        fs::path chosen = candidates.front();
        for (const fs::path& c : candidates)
            if (isFile(c)) {
                chosen = c;
                break;
            }
        out.push_back(chosen.lexically_normal().string());
    }
    return out;
}

std::string dictionaryConfigJson(const DictionaryConfig& c, const std::string& dir) {
    // SAELens 6.x's layout (SAEConfig.to_dict): the architecture's fields at the top, where the
    // model and site are in "metadata"; our own record under "gwb" (SAELens ignores other keys).
    // SAELens 6.x has "standard", "topk" and (ReLU) "transcoder" but no TopK transcoder: that one
    // is written as "topk" with d_out, which SAELens opens as a TopK SAE, the same encoder and
    // decoder only while d_out = d_in ("gwb.saelens" says so in the file).
    const bool topk = c.architecture == "topk";
    nlohmann::ordered_json j;
    j["architecture"] = c.transcoder() && !topk ? "transcoder" : topk ? "topk" : "standard";
    j["d_in"] = c.dIn;
    j["d_sae"] = c.dSae;
    if (c.transcoder()) j["d_out"] = c.dOut;
    if (topk) {
        j["k"] = c.k;
        j["rescale_acts_by_decoder_norm"] = false;
    }
    j["dtype"] = "float32";
    j["device"] = "cpu";
    j["apply_b_dec_to_input"] = !c.transcoder() && c.applyBDecToInput;
    j["normalize_activations"] = "none"; // the training scale is folded into the weights
    j["reshape_activations"] = "none";
    nlohmann::ordered_json meta;
    meta["sae_lens_version"] = kSaeLensLayout;
    meta["sae_lens_training_version"] = nullptr;
    meta["model_name"] = c.modelName;
    meta["hook_name"] = c.site;
    meta["hook_head_index"] = nullptr;
    if (c.transcoder()) meta["hook_name_out"] = c.targetSite;
    meta["context_size"] = c.contextSize;
    meta["prepend_bos"] = false;
    // The corpus as stored (kCorpusPathsNote); SAELens's dataset_path, read without this
    // folder at hand, gets the first file's absolute path.
    const std::vector<std::string> corpus = dir.empty() ? c.corpus : corpusPathsForFile(c.corpus, dir);
    std::vector<std::string> corpusAbsolute;
    if (!dir.empty())
        for (const std::string& f : c.corpus)
            corpusAbsolute.push_back(physical(f).string());
    meta["dataset_path"] = corpus.empty() ? "" : dir.empty() ? corpus.front() : corpusAbsolute.front();
    meta["trained_by"] = "gwb";
    j["metadata"] = meta;
    j["gwb"] = {{"format", "gwb-dictionary"},
                {"version", 3},
                {"site", c.site},
                {"architecture", c.architecture},
                {"model_hash", c.modelHash},
                {"l1_coefficient", c.l1},
                {"scaling_folded", c.scaling},
                {"corpus", corpus},
                {"corpus_paths", kCorpusPathsNote},
                {"trained_tokens", c.trainedTokens},
                {"seed", c.seed}};
    if (!corpusAbsolute.empty()) j["gwb"]["corpus_absolute"] = corpusAbsolute;
    if (c.transcoder() && topk)
        j["gwb"]["saelens"] = "SAELens 6.x has no TopK transcoder: it opens this file as a TopK SAE, which encodes "
                              "and decodes as this transcoder only while d_out equals d_in";
    if (c.crosscoder())
        j["gwb"]["crosscoder"] = {{"second_site", c.secondSite},
                                  {"second_model_name", c.secondModelName},
                                  {"second_model_hash", c.secondModelHash},
                                  {"first_width", c.firstWidth},
                                  {"block_scaling", c.blockScaling},
                                  {"layout", "x = [first model's site, second model's site] along d_in"}};
    return j.dump(2) + "\n";
}

DictionaryConfig dictionaryConfigFromJson(const std::string& text, bool* rescaleByDecoderNorm, const std::string& dir) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("not valid JSON (") + e.what() + ")");
    }
    DictionaryConfig c;
    bool rescale = false;
    try {
        // SAELens 6.x keeps the model and site under "metadata"; 5.x's flat layout (gwb's own
        // files before gwb-dictionary version 2) has them at the top: either is read.
        const bool v6 = j.contains("metadata") && j["metadata"].is_object();
        const nlohmann::json& meta = v6 ? j["metadata"] : j;
        auto field = [&](const char* key) -> const nlohmann::json* {
            if (meta.contains(key) && !meta[key].is_null()) return &meta[key];
            if (j.contains(key) && !j[key].is_null()) return &j[key];
            return nullptr;
        };
        c.dIn = jsonInteger(j.at("d_in"), "d_in");
        c.dSae = jsonInteger(j.at("d_sae"), "d_sae");
        const nlohmann::json* hook = field("hook_name");
        if (!hook) hook = field("hook_point"); // SAELens before 1.0
        if (!hook) throw std::runtime_error("no hook_name (the site the dictionary reads)");
        c.site = hook->get<std::string>();
        if (const nlohmann::json* head = field("hook_head_index"))
            throw std::runtime_error("hook_head_index " + head->dump() +
                                     " (one head of a site) is not read by gwb: name the head's own site, head.L.H");
        const std::string arch = j.value("architecture", std::string("standard"));
        std::string fn = j.contains("activation_fn") ? j["activation_fn"].get<std::string>()
                                                     : j.value("activation_fn_str", std::string());
        if (arch == "topk")
            fn = "topk";
        else if (arch == "standard" || arch == "transcoder")
            fn = fn.empty() ? "relu" : fn;
        else
            throw std::runtime_error("architecture '" + arch +
                                     "' is not one gwb reads (standard, topk and transcoder, as SAELens names them)");
        if (fn != "topk" && fn != "relu")
            throw std::runtime_error("activation '" + fn + "' is not one gwb reads (topk, relu)");
        c.architecture = fn;
        if (fn == "topk")
            c.k = j.contains("activation_fn_kwargs") && j["activation_fn_kwargs"].contains("k")
                      ? jsonInteger(j["activation_fn_kwargs"]["k"], "k")
                      : jsonInteger(j.at("k"), "k");
        // SAELens's TopK trainer's default: pre-activations times ||W_dec[f]|| pick the top k, and
        // z / ||W_dec[f]|| is decoded. Folded into the weights below (W_enc, b_enc times the norm,
        // W_dec over it): the same z and x^ in gwb's plain TopK.
        rescale = fn == "topk" && j.value("rescale_acts_by_decoder_norm", false);
        const std::string norm = j.contains("normalize_activations") && j["normalize_activations"].is_string()
                                     ? j["normalize_activations"].get<std::string>()
                                     : (j.value("normalize_activations", false) ? "expected_average_only_in" : "none");
        if (norm != "none")
            throw std::runtime_error("normalize_activations is '" + norm +
                                     "': gwb reads dictionaries in raw units (fold the scaling into the weights, "
                                     "as SAELens's fold_activation_norm_scaling_factor does, and save again)");
        if (j.value("reshape_activations", std::string("none")) != "none")
            throw std::runtime_error("reshape_activations is '" + j["reshape_activations"].get<std::string>() +
                                     "': gwb reads a site's values as they are");
        if (const nlohmann::json* out = field("hook_name_out")) {
            c.targetSite = out->get<std::string>();
            c.dOut = jsonInteger(j.at("d_out"), "d_out");
        } else if (arch == "transcoder") {
            throw std::runtime_error("a transcoder whose metadata names no hook_name_out (the site it rebuilds)");
        }
        c.applyBDecToInput = !c.transcoder() && j.value("apply_b_dec_to_input", true);
        if (const nlohmann::json* name = field("model_name")) c.modelName = name->get<std::string>();
        if (const nlohmann::json* ctx = field("context_size")) c.contextSize = jsonInteger(*ctx, "context_size");
        if (j.contains("gwb")) {
            const auto& g = j["gwb"];
            c.modelHash = g.value("model_hash", "");
            c.l1 = g.value("l1_coefficient", 0.0);
            c.scaling = g.value("scaling_folded", 1.0);
            c.corpus = g.value("corpus", std::vector<std::string>{});
            if (!dir.empty()) // paths this process opens (version 3 on: relative to the folder)
                c.corpus = corpusPathsFromFile(c.corpus, g.value("corpus_absolute", std::vector<std::string>{}), dir,
                                               g.contains("corpus_paths"));
            c.trainedTokens = g.contains("trained_tokens") ? jsonInteger(g["trained_tokens"], "trained_tokens") : 0;
            c.seed = g.contains("seed") ? jsonSeed(g["seed"], "seed") : 0;
            if (g.contains("crosscoder")) {
                const auto& x = g["crosscoder"];
                c.secondSite = x.at("second_site").get<std::string>();
                c.secondModelName = x.value("second_model_name", "");
                c.secondModelHash = x.value("second_model_hash", "");
                c.firstWidth = jsonInteger(x.at("first_width"), "first_width");
                c.blockScaling = x.value("block_scaling", std::vector<double>{});
                if (c.secondSite.empty() || c.firstWidth < 1 || c.firstWidth >= c.dIn)
                    throw std::runtime_error("the crosscoder's second site or first width (" +
                                             std::to_string(c.firstWidth) + " of d_in " + std::to_string(c.dIn) +
                                             ") is not valid");
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(e.what());
    }
    if (c.dIn < 1 || c.dSae < 1) throw std::runtime_error("d_in and d_sae must be positive");
    bool finite = std::isfinite(c.l1) && std::isfinite(c.scaling);
    for (double s : c.blockScaling)
        finite = finite && std::isfinite(s);
    if (!finite) throw std::runtime_error("l1_coefficient, scaling_folded and block_scaling must be finite numbers");
    if (c.transcoder() && c.dOut < 1) throw std::runtime_error("d_out must be positive");
    if (c.architecture == "topk" && (c.k < 1 || c.k > c.dSae))
        throw std::runtime_error("k = " + std::to_string(c.k) + " is outside 1.." + std::to_string(c.dSae));
    if (rescaleByDecoderNorm) *rescaleByDecoderNorm = rescale;
    return c;
}

} // namespace gwb::engine
