"""circuit-tracer 0.5.0, its own code, as the judge of gwb's attribution graphs (issue 70).

Runs in the venv of SAELens and circuit-tracer that scripts/pip-torch-env makes
(build/pip-torch-env/saelens: circuit-tracer pins transformers <= 4.57.3 and TransformerLens 3.x;
the torch is the pip-torch venv's), as ctest's PythonPackage.saelens_circuit_tracer.

A transformers GPT-2 with random weights (2 layers, d 64, save_pretrained, a byte-level BPE trained
here on Emma) opens in gwb as a baseline; gwb trains a ReLU transcoder set on it (ffn_in.L -> ffn.L).
The set is written in circuit-tracer's layout (SingleLayerTranscoder.to_safetensors: layer_L.safetensors
with W_enc d_sae x d_model, and a config.yaml naming the hooks) and read back by circuit-tracer's
loader; its ReplacementModel is a TransformerLens HookedTransformer on the GPT-2's converted
weights, with no weight processing. gwb's ffn_in.L is the MLP's input after ln2's affine part, which
in TransformerLens is the input of circuit-tracer's ReplacementMLP, `mlp.hook_in` (not
`ln2.hook_normalized`, which TransformerLens takes before the affine part), and ffn.L its output,
`mlp.hook_out`. docs/attribution-graphs.md says where the two designs differ and how circuit-tracer
is set to gwb's: features at position 0 kept, and the token node E[x] + P[t].

Both compute in float64 here (circuit-tracer through the HookedTransformer's dtype); the
comparisons are circuit-tracer's Graph against gwb.graph's on the same prompt: active features and
activations, logit nodes and probabilities, every row of the adjacency, prune_graph's node and edge
masks and compute_graph_scores, and the graph JSON (circuit-tracer's pydantic Model and
create_graph_files)."""

import json
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml
from conftest import PROMPT, austen_split
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

import gwb
from circuit_tracer import ReplacementModel, attribute
from circuit_tracer.frontend.graph_models import Model
from circuit_tracer.graph import compute_graph_scores, prune_graph
from circuit_tracer.transcoder.single_layer_transcoder import SingleLayerTranscoder, TranscoderSet
from circuit_tracer.utils.create_graph_files import create_graph_files
from circuit_tracer.utils.hf_utils import load_transcoders
from safetensors.torch import load_file
from transformer_lens import HookedTransformerConfig
from transformer_lens.pretrained.weight_conversions.gpt2 import convert_gpt2_weights

SHAPE = dict(n_layer=2, n_embd=64, n_head=4, n_positions=128)
IN_HOOK, OUT_HOOK = "mlp.hook_in", "mlp.hook_out"  # gwb's ffn_in.L and ffn.L in TransformerLens
DTYPE = torch.float64


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return austen_split(tmp_path_factory, "circuit_tracer", 40_000, 36_000)


@pytest.fixture(scope="module")
def gpt2(corpus, tmp_path_factory):
    """(folder, gwb model, gwb transcoder folder, prompt ids): a random GPT-2, as the transformers
    GPT-2 test makes one, and a ReLU transcoder set gwb trains on it."""
    d = tmp_path_factory.mktemp("ct") / "gpt2-2x64"
    d.mkdir()
    with open(corpus[0], encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(lines, vocab_size=1000, min_frequency=2, special_tokens=["<|endoftext|>"],
                            show_progress=False)
    tok.save_model(str(d))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok._tokenizer, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>")
    fast.save_pretrained(str(d))
    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), bos_token_id=0, eos_token_id=0, **SHAPE)).eval()
    with torch.no_grad():  # random LayerNorm and bias parameters: a zero bias would hide a mismapped one
        for p in hf.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    hf.save_pretrained(str(d))
    model = gwb.load(d)
    tc_dir = d.parent / "gwb-transcoders"
    gwb.features.train_transcoders(model, [corpus[0]], tc_dir, architecture="relu", d_sae=256, l1=1.0, tokens=8192,
                                   batch=256, context=64, device="cpu", progress=False)
    # circuit-tracer prepends a special token to a prompt that lacks one: the ids start with it here.
    ids = [fast.eos_token_id] + list(model.encode(PROMPT))[:15]
    return d, model, tc_dir, ids


def write_circuit_tracer_set(tc_dir, out, n_layers):
    """gwb's set in circuit-tracer's layout, written by circuit-tracer's own code: each layer a
    SingleLayerTranscoder (W_enc d_sae x d_model, ReLU) saved by TranscoderSet.to_safetensors, and
    the config.yaml its loader reads (model_kind, hooks, the layer files)."""
    layers = {}
    for layer in range(n_layers):
        w = load_file(os.path.join(tc_dir, f"ffn.{layer}", "sae_weights.safetensors"))
        t = SingleLayerTranscoder(w["W_enc"].shape[0], w["W_enc"].shape[1], F.relu, layer,
                                  device=torch.device("cpu"), dtype=torch.float32)
        with torch.no_grad():
            t.W_enc.copy_(w["W_enc"].T)
            t.W_dec.copy_(w["W_dec"])
            t.b_enc.copy_(w["b_enc"])
            t.b_dec.copy_(w["b_dec"])
        layers[layer] = t
    TranscoderSet(layers, feature_input_hook=IN_HOOK, feature_output_hook=OUT_HOOK).to_safetensors(str(out))
    config = {"model_kind": "transcoder_set", "feature_input_hook": IN_HOOK, "feature_output_hook": OUT_HOOK,
              "transcoders": [os.path.join(str(out), f"layer_{layer}.safetensors") for layer in range(n_layers)]}
    (out / "config.yaml").write_text(yaml.safe_dump(config))
    return out


def replacement_model(folder, transcoders):
    """circuit-tracer's ReplacementModel (TransformerLens backend) on the GPT-2's own weights: a
    HookedTransformer from its config, the weights converted by TransformerLens's convert_gpt2_weights
    and loaded as they are (no folding, centring or value-bias folding), set to gwb's design where the
    two differ (docs/attribution-graphs.md)."""
    hf = GPT2LMHeadModel.from_pretrained(folder).eval()
    c = hf.config
    cfg = HookedTransformerConfig(n_layers=c.n_layer, d_model=c.n_embd, n_heads=c.n_head, d_head=c.n_embd // c.n_head,
                                  d_mlp=4 * c.n_embd, d_vocab=c.vocab_size, n_ctx=c.n_positions, act_fn="gelu_new",
                                  normalization_type="LN", eps=c.layer_norm_epsilon, positional_embedding_type="standard",
                                  dtype=DTYPE, device="cpu", model_name=folder.name, tokenizer_name=str(folder))
    rm = ReplacementModel.from_config(cfg, transcoders, backend="transformerlens",
                                      tokenizer=PreTrainedTokenizerFast.from_pretrained(folder))
    # The replacement wraps each MLP (old_mlp) and the unembedding (old_unembed).
    weights = {k.replace(".mlp.", ".mlp.old_mlp.").replace("unembed.", "unembed.old_unembed."): v.to(DTYPE)
               for k, v in convert_gpt2_weights(hf, cfg).items()}
    missing, unexpected = rm.load_state_dict(weights, strict=False)
    assert not unexpected
    # Left out: the transcoders (loaded already), attention masks, and GPT-2's unembedding bias, which
    # it has not (convert_gpt2_weights gives none; from_config's zeros stay).
    assert all(k.startswith("transcoders.") or k.endswith(("mask", "IGNORE")) or k == "unembed.old_unembed.b_U"
               for k in missing), missing
    # gwb keeps the features and errors of position 0 (circuit-tracer zeroes them: its prompts
    # start with a BOS whose activations are outliers); circuit-tracer's own attribute to set it.
    rm.zero_positions = slice(0, 0)
    # gwb's token node is the whole embedding E[x] + P[t]; circuit-tracer's is E[x] (its models have
    # rotary positions, so a learned P[t] would be in no node): its context gets gwb's vectors.
    setup = rm.setup_attribution

    def setup_with_positions(inputs):
        ctx = setup(inputs)
        ctx.token_vectors = ctx.token_vectors + rm.W_pos[:ctx.token_vectors.shape[0]]
        return ctx

    rm.setup_attribution = setup_with_positions
    return rm


@pytest.fixture(scope="module")
def judged(gpt2, tmp_path_factory):
    """circuit-tracer's set (its files, read by its loader), its ReplacementModel, and both graphs
    at the default budget."""
    d, model, tc_dir, ids = gpt2
    out = write_circuit_tracer_set(tc_dir, tmp_path_factory.mktemp("ct-set"), model.config["n_layers"])
    config = yaml.safe_load((out / "config.yaml").read_text())
    config["scan"] = "gwb-test"
    ts = load_transcoders(config, device=torch.device("cpu"), dtype=DTYPE, lazy_decoder=False)
    rm = replacement_model(d, ts)
    theirs = attribute(torch.tensor(ids), rm, max_n_logits=10, desired_logit_prob=0.95, batch_size=32,
                       max_feature_nodes=4096)
    ours = gwb.graph(model, ids, gwb.features.load_transcoders(tc_dir, model), progress=False)
    return out, rm, theirs, ours


def compare(theirs, ours):
    """The worst differences of two graphs in circuit-tracer's node order; asserts what must be equal."""
    features = np.nonzero(ours.node_kind == 0)[0]
    selected = theirs.selected_features.numpy()
    active = theirs.active_features.numpy()[selected]
    assert len(features) == len(selected) > 0
    assert np.array_equal(active, np.stack([ours.node_layer[features], ours.node_position[features],
                                            ours.node_index[features]], 1))
    values = theirs.activation_values.numpy()[selected]
    worst = {"activation": float(np.max(np.abs(ours.node_value[features] - values) / np.abs(values)))}
    logits = np.nonzero(ours.node_kind == 3)[0]
    assert [t.vocab_idx for t in theirs.logit_targets] == ours.node_index[logits].tolist()
    worst["probability"] = float(np.max(np.abs(theirs.logit_probabilities.numpy() - ours.node_probability[logits])))
    a, b = theirs.adjacency_matrix.double().numpy(), ours.adjacency().astype(np.float64)
    assert a.shape == b.shape == (len(ours.node_ids),) * 2
    rows = np.nonzero(np.abs(a).sum(1) + np.abs(b).sum(1))[0]
    assert np.array_equal(rows, np.sort(ours.row_nodes))  # every row that either computes
    worst["adjacency"] = float(np.max(np.abs(a - b)[rows].max(1) / np.abs(a[rows]).max(1)))
    assert worst["activation"] < 1e-5 and worst["probability"] < 1e-6 and worst["adjacency"] < 1e-4, worst
    pruned = prune_graph(theirs, 0.8, 0.98)
    kept_edges = np.zeros(b.shape, dtype=bool)
    kept_edges[ours.row_nodes] = ours.edge_kept
    assert np.array_equal(pruned.node_mask.numpy(), ours.node_kept.astype(bool))
    assert np.array_equal(pruned.edge_mask.numpy(), kept_edges)
    replacement, completeness = compute_graph_scores(theirs)
    worst["scores"] = max(abs(replacement - ours.scores["replacement"]), abs(completeness - ours.scores["completeness"]))
    print(f"{len(features)} features, {len(rows)} rows, {int(kept_edges.sum())} kept edges: worst activation "
          f"{worst['activation']:.1e} (relative), probability {worst['probability']:.1e}, adjacency "
          f"{worst['adjacency']:.1e} (of the row's largest), scores {worst['scores']:.1e}")
    assert worst["scores"] < 1e-5
    return worst


def test_the_graph_equals_circuit_tracers(judged):
    _, _, theirs, ours = judged
    assert ours.counts["features"] == ours.json["metadata"]["gwb"]["active_features"]  # every feature has a row
    compare(theirs, ours)


def test_with_a_feature_budget_the_same_features_are_chosen(gpt2, judged):
    """100 of ~1000 features: both choose them by influence on the logits as the graph grows, in
    rounds of 4 batches of 32 (circuit-tracer's update_interval and batch_size set to gwb's)."""
    d, model, tc_dir, ids = gpt2
    _, rm, _, _ = judged
    theirs = attribute(torch.tensor(ids), rm, max_n_logits=10, desired_logit_prob=0.95, batch_size=32,
                       max_feature_nodes=100, update_interval=4)
    ours = gwb.graph(model, ids, gwb.features.load_transcoders(tc_dir, model), max_features=100, progress=False)
    assert ours.counts["features"] == 100 < ours.json["metadata"]["gwb"]["active_features"]
    compare(theirs, ours)


def test_the_json_is_circuit_tracers(gpt2, judged, tmp_path):
    """gwb's graph.json validates against circuit-tracer's front-end Model, and matches the file
    circuit-tracer's create_graph_files writes for the same graph: node ids (an error node is
    gwb's L_-1_P where circuit-tracer writes 0_L_P, see docs/attribution-graphs.md), feature
    numbers (its Cantor pairing), metadata keys, link weights."""
    _, _, theirs, ours = judged
    ours.save(tmp_path / "gwb.json", pinned=[ours.node_ids[int(np.nonzero(ours.node_kept)[0][0])]],
              supernodes={"first two": list(np.nonzero(ours.node_kept)[0][:2])})
    doc = json.loads((tmp_path / "gwb.json").read_text())
    Model.model_validate(doc)
    create_graph_files(theirs, "ct", str(tmp_path / "ct"), scan="gwb-test", node_threshold=0.8, edge_threshold=0.98)
    ct = json.loads((tmp_path / "ct" / "ct.json").read_text())
    assert set(ct["metadata"]) <= set(doc["metadata"])
    assert doc["metadata"]["prompt_tokens"] == ct["metadata"]["prompt_tokens"]

    def gwb_id(node):
        if node["feature_type"] == "mlp reconstruction error":
            _, layer, pos = node["node_id"].split("_")
            return f"{layer}_-1_{pos}"
        return node["node_id"]

    ct_nodes = {gwb_id(n): n for n in ct["nodes"]}
    ours_nodes = {n["node_id"]: n for n in doc["nodes"]}
    assert set(ct_nodes) == set(ours_nodes)
    for node_id, n in ours_nodes.items():
        for key in ("feature", "layer", "ctx_idx", "feature_type", "is_target_logit"):
            assert n[key] == ct_nodes[node_id][key], (node_id, key)
        for key in ("activation", "token_prob"):
            if ct_nodes[node_id].get(key) is not None:
                assert abs(n[key] - ct_nodes[node_id][key]) <= 1e-5 * max(1.0, abs(ct_nodes[node_id][key])), (node_id, key)
    # "influence" is the cumulative share at the node's rank; circuit-tracer ranks in float32, where
    # nodes of nearly equal influence tie and torch.sort orders them as it likes: a tie swapped moves
    # both nodes' shares, not the sorted shares.
    # (circuit-tracer writes none for a logit node; gwb writes its share too, 0.)
    ranked = [node_id for node_id, n in ct_nodes.items() if n["influence"] is not None]
    shares = np.sort([ours_nodes[i]["influence"] for i in ranked]), np.sort([ct_nodes[i]["influence"] for i in ranked])
    assert np.abs(shares[0] - shares[1]).max() < 1e-5
    to_gwb = {n["node_id"]: gwb_id(n) for n in ct["nodes"]}
    assert len(to_gwb) == len(ct["nodes"])  # no error id of circuit-tracer's equals a feature's here
    ct_links = {(to_gwb[link["source"]], to_gwb[link["target"]]): link["weight"] for link in ct["links"]}
    ours_links = {(link["source"], link["target"]): link["weight"] for link in doc["links"]}
    assert set(ct_links) == set(ours_links)
    scale = max(abs(w) for w in ct_links.values())
    assert max(abs(ours_links[k] - w) for k, w in ct_links.items()) < 1e-4 * scale



def test_circuit_tracers_files_open_in_gwb_as_a_set(gpt2, judged, tmp_path):
    """The set as circuit-tracer's TranscoderSet.to_safetensors wrote it (layer_L.safetensors and
    the config.yaml of its loader) opens in gwb: the same weights, so the same graph as from gwb's
    own copy; a config whose hooks are not ffn_in.L / ffn.L is refused by name."""
    d, model, tc_dir, ids = gpt2
    ct_dir, _, _, ours = judged
    theirs = gwb.features.load_transcoders(ct_dir, model)
    own = gwb.features.load_transcoders(tc_dir, model)
    for a, b in zip(theirs, own):
        assert a.site == b.site and np.array_equal(a.W_enc, b.W_enc) and np.array_equal(a.W_dec, b.W_dec)
    g = gwb.graph(model, ids, theirs, progress=False)
    assert g.node_ids == ours.node_ids
    assert np.array_equal(g.adjacency(), ours.adjacency())
    bad = tmp_path / "resid-mid"
    bad.mkdir()
    for f in os.listdir(ct_dir):
        (bad / f).write_bytes((ct_dir / f).read_bytes())
    config = yaml.safe_load((bad / "config.yaml").read_text())
    config["feature_input_hook"] = "hook_resid_mid"
    (bad / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match="hook_resid_mid"):
        gwb.features.load_transcoders(bad, model)


def random_saelens_transcoders(model, out, d_sae=64):
    """A ReLU transcoder set in SAELens's layout (cfg.json + sae_weights.safetensors a layer) with
    random weights: the file, not the features, is under test, and training one for each of the
    bundled models' six blocks would cost half a minute."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    d = model.config["d_model"]
    for layer in range(model.config["n_layers"]):
        folder = out / f"ffn.{layer}"
        folder.mkdir(parents=True)
        save_file({"W_enc": (rng.standard_normal((d, d_sae)) / np.sqrt(d)).astype(np.float32),
                   "b_enc": np.full(d_sae, -1.5, np.float32),
                   "W_dec": (0.1 * rng.standard_normal((d_sae, d))).astype(np.float32),
                   "b_dec": np.zeros(d, np.float32)}, str(folder / "sae_weights.safetensors"))
        (folder / "cfg.json").write_text(json.dumps({
            "architecture": "transcoder", "d_in": d, "d_sae": d_sae, "d_out": d, "dtype": "float32",
            "apply_b_dec_to_input": False, "normalize_activations": "none",
            "metadata": {"hook_name": f"ffn_in.{layer}", "hook_name_out": f"ffn.{layer}",
                         "model_name": model.config["name"]}}))
    return out


@pytest.mark.parametrize("kind", ["grassmann", "transformer"])
def test_the_bundled_models_json_validates(kind, tmp_path):
    """A Grassmann graph has no counterpart in circuit-tracer, but its file is circuit-tracer's: the
    pruned graph, with pins, supernodes and a clicked node in the qParams and gwb's loadings on the
    links, validates against the front end's pydantic Model."""
    model = gwb.bundled(kind, device="cpu")
    tc = gwb.features.load_transcoders(random_saelens_transcoders(model, tmp_path / "tc"), model)
    g = gwb.graph(model, model.encode(PROMPT)[:10], tc, max_features=96, progress=False)
    kept = [int(i) for i in np.nonzero(g.node_kept)[0]]
    g.save(tmp_path / "g.json", pinned=kept[:3], supernodes={"first": kept[:2], "last": kept[-2:]}, clicked=kept[0])
    doc = json.loads((tmp_path / "g.json").read_text())
    parsed = Model.model_validate(doc)
    assert len(parsed.nodes) == len(kept) and len(parsed.links) == int(g.edge_kept.sum())
    assert parsed.qParams.supernodes == [["first"] + [g.node_ids[i] for i in kept[:2]],
                                         ["last"] + [g.node_ids[i] for i in kept[-2:]]]
    assert any("loadings" in link for link in doc["links"])  # gwb's own, kept beside circuit-tracer's keys
