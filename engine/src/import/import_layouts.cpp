#include "import/import_layouts.h"

#include <stdexcept>

namespace gwb::engine {
namespace {

/// Block-relative (ours, theirs) pairs for one layer, before the "blocks.{i}." prefixes.
using Pairs = std::vector<std::pair<std::string, std::string>>;

/// weight + bias of a Linear or LayerNorm called `ours` here and `theirs` in the family.
void both(Pairs& p, const std::string& ours, const std::string& theirs) {
    p.emplace_back(ours + ".weight", theirs + ".weight");
    p.emplace_back(ours + ".bias", theirs + ".bias");
}

Pairs blockPairs(ImportLayout layout, ModelKind kind) {
    Pairs p;
    const bool grassmann = kind == ModelKind::Grassmann;
    switch (layout) {
    case ImportLayout::GrassLM:
        both(p, "ln1", "ln1");
        if (grassmann) {
            both(p, "w_red", "mixing.plucker_encoder.W_red");
            both(p, "w_plu", "mixing.plucker_encoder.W_plu");
            both(p, "w_gate", "mixing.W_gate");
        } else {
            both(p, "qkv", "attn.qkv");
            both(p, "out_proj", "attn.out_proj");
        }
        both(p, "ln2", "ln2");
        both(p, "ffn_in", "ffn.0"); // Sequential(Linear, GELU, Linear)
        both(p, "ffn_out", "ffn.2");
        break;
    case ImportLayout::AlphaXiv:
        both(p, "ln1", "ln1");
        if (grassmann) {
            both(p, "w_red", "grassmann.W_red");
            both(p, "w_plu", "grassmann.W_plu");
            both(p, "w_gate", "grassmann.W_gate");
            both(p, "ln_mix", "grassmann.layer_norm");
        } else {
            both(p, "qkv", "qkv_proj");
            both(p, "out_proj", "out_proj");
        }
        both(p, "ln2", "ln2");
        both(p, "ffn_in", "ffn.0"); // Sequential(Linear, GELU, Dropout, Linear)
        both(p, "ffn_out", "ffn.3");
        break;
    case ImportLayout::KaneNorman:
        both(p, "ln1", "attention_norm");
        if (grassmann) {
            both(p, "w_red", "attention.reduce");
            both(p, "w_plu", "attention.expand");
            both(p, "w_gate", "attention.gate_proj");
        } else { // fused projection split as (qkv, head, d_head): rows q | k | v, heads inside
            both(p, "qkv", "attention.qkv_projection");
            both(p, "out_proj", "attention.out_projection");
        }
        both(p, "ln2", "ffn_norm");
        both(p, "ffn_in", "ffn.layers.0");
        both(p, "ffn_out", "ffn.layers.2");
        break;
    case ImportLayout::Auto:
        throw std::logic_error("layoutMappings: resolve Auto first");
    }
    return p;
}

} // namespace

const LayoutKeys& layoutKeys(ImportLayout layout) {
    static const LayoutKeys grasslm{"tok_embed.weight",
                                    "pos_embed.weight",
                                    "blocks.",
                                    "mixing.plucker_encoder.W_red.weight",
                                    "attn.qkv.weight",
                                    "mixing.plucker_encoder.W_red.weight",
                                    "ffn.0.weight",
                                    "mixing.plucker_encoder.idx_i",
                                    "mixing.plucker_encoder.idx_j",
                                    "lm_head.weight",
                                    ""};
    static const LayoutKeys alphaxiv{"token_embedding.weight", "position_embedding.weight", "blocks.",
                                     "grassmann.W_red.weight", "qkv_proj.weight",           "grassmann.W_red.weight",
                                     "ffn.0.weight",           "grassmann.plucker.idx_i",   "grassmann.plucker.idx_j",
                                     "lm_head.weight",         ""};
    static const LayoutKeys kanenorman{"token_embedding.weight",
                                       "position_embedding.weight",
                                       "transformer_blocks.",
                                       "attention.reduce.weight",
                                       "attention.qkv_projection.weight",
                                       "attention.reduce.weight",
                                       "ffn.layers.0.weight",
                                       "attention.idx_i",
                                       "attention.idx_j",
                                       "lm_head.weight",
                                       "attention.causal_mask"};
    switch (layout) {
    case ImportLayout::GrassLM:
        return grasslm;
    case ImportLayout::AlphaXiv:
        return alphaxiv;
    case ImportLayout::KaneNorman:
        return kanenorman;
    case ImportLayout::Auto:
        break;
    }
    throw std::logic_error("layoutKeys: resolve Auto first");
}

void applyLayoutVariant(ImportLayout layout, ModelConfig& c) {
    c.layerNormEps = 1e-5; // every family uses nn.LayerNorm's default
    switch (layout) {
    case ImportLayout::GrassLM:
        // Projects each offset's p^ separately, pads rows t < D with zeros, divides the sum by
        // the number of valid offsets (at least 1): a token with none gets g = 0.
        c.norm = NormPlacement::Post;
        c.gate = GateVariant::Paper;
        c.mixerLayerNorm = false;
        c.empty = EmptyRule::Zero;
        c.pluckerEps = 1e-8;
        return;
    case ImportLayout::AlphaXiv:
        c.norm = NormPlacement::Pre;
        c.gate = GateVariant::Paper;
        c.mixerLayerNorm = c.kind == ModelKind::Grassmann; // its Transformer has no mixer LN
        c.empty = EmptyRule::Zero;
        c.pluckerEps = 1e-6;
        return;
    case ImportLayout::KaneNorman:
        // Averages p^ in Plücker space (count clamped to 1), then projects once: g = b_plu at a
        // token with no valid lag. Post-norm unless trained with pre_norm (--norm pre).
        c.norm = NormPlacement::Post;
        c.gate = GateVariant::GeometryOnly;
        c.mixerLayerNorm = false;
        c.empty = EmptyRule::Bias;
        c.pluckerEps = 1e-6;
        return;
    case ImportLayout::Auto:
        break;
    }
    throw std::logic_error("applyLayoutVariant: resolve Auto first");
}

std::vector<KeyMapping> layoutMappings(ImportLayout layout, ModelKind kind, int64_t nLayers) {
    const LayoutKeys& k = layoutKeys(layout);
    const std::string finalNorm = layout == ImportLayout::GrassLM    ? "ln_final"
                                  : layout == ImportLayout::AlphaXiv ? "ln_f"
                                                                     : "output_norm";
    std::vector<KeyMapping> m{{"tok_embed.weight", k.tokEmbed}, {"pos_embed.weight", k.posEmbed}};
    const Pairs block = blockPairs(layout, kind);
    for (int64_t i = 0; i < nLayers; ++i) {
        const std::string n = std::to_string(i) + ".";
        for (const auto& [ours, theirs] : block)
            m.push_back({"blocks." + n + ours, k.blockPrefix + n + theirs});
    }
    m.push_back({"ln_final.weight", finalNorm + ".weight"});
    m.push_back({"ln_final.bias", finalNorm + ".bias"});
    return m;
}

ImportLayout detectLayout(const std::vector<std::string>& names) {
    bool tokEmbed = false, tokenEmbedding = false, transformerBlocks = false, blocks = false;
    for (const auto& n : names) {
        tokEmbed |= n == "tok_embed.weight";
        tokenEmbedding |= n == "token_embedding.weight";
        transformerBlocks |= n.rfind("transformer_blocks.", 0) == 0;
        blocks |= n.rfind("blocks.", 0) == 0;
    }
    if (tokEmbed && blocks) return ImportLayout::GrassLM;
    if (tokenEmbedding && transformerBlocks) return ImportLayout::KaneNorman;
    if (tokenEmbedding && blocks) return ImportLayout::AlphaXiv;
    throw std::runtime_error("cannot tell which implementation wrote this checkpoint (expected tok_embed.weight + "
                             "blocks.* for GrassLM, token_embedding.weight + blocks.* for alphaXiv, or "
                             "token_embedding.weight + transformer_blocks.* for kanenorman); pass --layout");
}

} // namespace gwb::engine
