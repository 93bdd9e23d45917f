"""check_upstream.py's family checks: for each family, import its upstream code from the checkout,
build the model as the family's scripts build it, strict-load each parity case's checkpoint and
compare logits, then run the negative controls (check_upstream.py's docstring has the table)."""

import importlib
import json
import os
import sys
import types

import torch

from upstream_common import (as_float32, extract_classes, fill_tied_head, import_file, info, install_einops_standin,
                             install_torch_shims, load_checkpoint, need_file, strict_load)

ALL_OFFSETS = [1, 2, 4, 8, 12, 16]


def check_youdie006(cases, args, rep):
    import yaml
    # Two code generations: configs written by the current code (e8aa8c8 and later) carry
    # model.layerwise_lags; the initial code's (8aa6e5bc) do not. Each case is run by the code
    # that wrote it: --repo and --repo2 are checkouts of both (either order; told apart by
    # whether LMConfig has layerwise_lags).
    generations = {}
    for n, path in enumerate(p for p in (args.repo, args.repo2) if p):
        mod = import_file(f"youdie006_model_{n}", os.path.join(path, "model.py"))
        current = "layerwise_lags" in getattr(mod.LMConfig, "__dataclass_fields__", {})
        generations["current" if current else "initial"] = mod
        info(f"upstream {mod.__file__}: {'current code (layerwise_lags)' if current else 'initial code'}")
    for case in cases:
        print(f"== {case.name}")
        ypath = os.path.join(case.path, ".hydra", "config.yaml")
        with open(ypath) as f:
            y = yaml.safe_load(f)
        m, data = y["model"], y["data"]
        generation = "current" if "layerwise_lags" in m else "initial"
        up = generations.get(generation)
        if up is None:
            rep.skip(f"{case.name}: written by the {generation} code; give a checkout of it (--repo / --repo2)")
            continue
        sd = load_checkpoint(case)

        def build(pre_norm, code=up):
            extra = {"layerwise_lags": bool(m["layerwise_lags"])} if "layerwise_lags" in m else {}
            cfg = code.LMConfig(vocab_size=sd["token_embedding.weight"].shape[0],
                                max_context_len=data["max_context_len"], num_layers=m["num_layers"],
                                tensor_lifting_strategy=m["tensor_lifting_strategy"], lags=list(m["lags"]),
                                d_model=m["d_model"], num_heads=m["num_heads"],
                                expansion_ratio=m["expansion_ratio"], dropout_rate=0.1,
                                weight_tying=m["weight_tying"], d_low=m["d_low"], pre_norm=pre_norm, **extra)
            model = code.Transformer(cfg)
            strict_load(model, sd)
            return model

        info(f".hydra/config.yaml: strategy {m['tensor_lifting_strategy']}, pre_norm {m['pre_norm']}, "
             f"lags {m['lags']}, layerwise_lags {m.get('layerwise_lags', '(absent)')}, heads {m['num_heads']}, "
             f"{generation} code")
        rep.match(f"{case.name} (model.Transformer of the {generation} code, strict load ok)",
                  *case.compare(build(m["pre_norm"])))
        rep.control(f"{case.name} pre_norm={not m['pre_norm']}", *case.compare(build(not m["pre_norm"])))
        other = generations.get("initial" if generation == "current" else "current")
        if other is not None and m["pre_norm"] and m["tensor_lifting_strategy"] == "grassmann" \
                and "layerwise_lags" not in m:
            rep.control(f"{case.name} run by the current code", *case.compare(build(True, other)))


def check_kanenorman(cases, args, rep):
    info(install_einops_standin())
    up = import_file("kanenorman_model", os.path.join(args.repo, "model.py"))
    info(f"upstream {up.__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        sd = as_float32(load_checkpoint(case))
        fill_tied_head(sd, "lm_head.weight", "token_embedding.weight")
        pre = case.variant.get("norm") == "pre"

        def build(pre_norm):
            cfg = up.LMConfig(vocab_size=c["V"], max_context_len=c["Lmax"], num_layers=c["N"],
                              tensor_lifting_strategy="grassmann" if case.kind == "grassmann" else "attention",
                              lags=list(ALL_OFFSETS), d_model=c["d"], num_heads=c["heads"],
                              expansion_ratio=c["d_ff"] // c["d"], dropout_rate=0.1, weight_tying=True,
                              d_low=c["r"], pre_norm=pre_norm)
            model = up.Transformer(cfg)
            strict_load(model, sd)
            return model

        rep.match(f"{case.name} (model.Transformer, pre_norm={pre}, strict load ok)", *case.compare(build(pre)))
        rep.control(f"{case.name} pre_norm={not pre}", *case.compare(build(not pre)))


def check_alphaxiv(cases, args, rep):
    install_torch_shims({"sdpa"})  # gpt2.py calls F.scaled_dot_product_attention(is_causal=True)
    base = os.path.join(args.repo, "attention_is_not_all_you_need", "src", "attn_is_not_all_you_need", "models")
    grassmann = import_file("alphaxiv_grassmann", os.path.join(base, "grassmann.py"))
    gpt2 = import_file("alphaxiv_gpt2", os.path.join(base, "gpt2.py"))
    info(f"upstream {grassmann.__file__}, {gpt2.__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        ckpt = load_checkpoint(case)
        sd = ckpt["model_state_dict"] if isinstance(ckpt, dict) and "model_state_dict" in ckpt else ckpt
        n_pref = sum(k.startswith("_orig_mod.") for k in sd)
        dtypes = sorted({str(v.dtype) for v in sd.values()})
        sd = as_float32({k.replace("_orig_mod.", "", 1): v for k, v in sd.items()})
        info(f"stored dtypes {dtypes}; '_orig_mod.' stripped from {n_pref}/{len(sd)} keys")

        def build(window_sizes=ALL_OFFSETS, heads=None):
            if case.kind == "grassmann":
                model = grassmann.GrassmannGPT(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                               num_layers=c["N"], reduced_dim=c["r"], ff_dim=c["d_ff"],
                                               window_sizes=list(window_sizes), dropout=0.1)
            else:
                model = gpt2.BaseTransformer(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                             num_layers=c["N"], num_heads=heads or c["heads"], ff_dim=c["d_ff"],
                                             dropout=0.1)
            strict_load(model, sd)
            return model

        if case.kind == "grassmann":
            rep.match(f"{case.name} (grassmann.GrassmannGPT, windows {ALL_OFFSETS})", *case.compare(build()))
            for ws in ([1, 2, 4, 8, 12], [1, 2, 4, 8, 12, 15]):
                rep.control(f"{case.name} window_sizes={ws}", *case.compare(build(window_sizes=ws)))
            model = build()
            for b in model.blocks:
                b.grassmann.plucker.eps = 1e-6
            rep.control(f"{case.name} PluckerEncoder eps=1e-6", *case.compare(model))
        else:
            rep.match(f"{case.name} (gpt2.BaseTransformer, {c['heads']} heads)", *case.compare(build()))
            rep.control(f"{case.name} num_heads=8", *case.compare(build(heads=8)))


def check_grasslm(cases, args, rep):
    sys.path.insert(0, os.path.join(args.repo, "python"))
    need_file(os.path.join(args.repo, "python", "grasslm", "model.py"))
    from grasslm.model import GrassLM
    info(f"upstream {sys.modules['grasslm.model'].__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        n = c["N"]
        ckpt = load_checkpoint(case)
        if case.checkpoint.endswith(".safetensors"):
            sd = fill_tied_head(dict(ckpt), "lm_head.weight", "tok_embed.weight")
        else:
            sd = ckpt["model_state_dict"]
            info(f"checkpoint keys {sorted(ckpt)}")
        sd = as_float32({k.replace("_orig_mod.", "", 1) if k.startswith("_orig_mod.") else k: v
                         for k, v in sd.items()})

        def build(schedule):
            model = GrassLM(vocab_size=c["V"], d_model=c["d"], n_layers=n, d_reduce=c["r"], d_ff=c["d_ff"],
                            max_seq_len=c["Lmax"], dropout=0.1, window_schedule=schedule)
            strict_load(model, sd)
            return model

        model = build(None)  # as train.py / evaluate.py / generate.py build it
        used = [list(b.mixing.window_offsets) for b in model.blocks]
        builtin = [o for offs in used for o in offs] if all(len(o) == 1 for o in used) else None
        rep.match(f"{case.name} (grasslm.model.GrassLM, window_schedule=None -> per-block offsets {used})",
                  *case.compare(model))

        cfg_path = os.path.join(case.path, "config.json")
        sched = None
        if os.path.isfile(cfg_path):
            with open(cfg_path) as f:
                sched = json.load(f).get("architecture", {}).get("window_schedule")
            note = "agrees with" if sched == builtin else "differs from"
            info(f"config.json window_schedule {sched} {note} the built-in schedule {builtin} "
                 f"(train.py writes {ALL_OFFSETS[:n]}; the scripts never pass it to GrassLM)")
        controls = []
        if builtin is not None:
            controls.append(("built-in schedule reversed", builtin[::-1]))
        if sched is not None:
            controls.append(("config.json's window_schedule", sched))
        for label, s in controls:
            if s == builtin:
                rep.skip(f"control {case.name} {label} {s}: equals the built-in schedule, nothing to show")
            elif len(s) != n:
                rep.skip(f"control {case.name} {label} {s}: {len(s)} entries for {n} layers")
            else:
                rep.control(f"{case.name} {label} {s} applied", *case.compare(build(s)))


def check_arledge(cases, args, rep):
    install_torch_shims({"mha_is_causal", "mask_dtype"})  # SmallTransformer's calls
    sys.modules["grassmann_cuda"] = None  # its `import grassmann_cuda` raises -> PyTorch path
    fused = import_file("grassmann_fused", os.path.join(args.repo, "src", "cuda", "grassmann_fused.py"))
    if fused.CUDA_AVAILABLE:
        sys.exit("error: grassmann_fused reports CUDA_AVAILABLE; the PyTorch path is not the one checked")
    small = extract_classes(os.path.join(args.repo, "train_wikitext2.py"),
                            ["SmallTransformerBlock", "SmallTransformer"], "arledge_train_wikitext2_classes")
    info(f"upstream {fused.__file__} (CUDA_AVAILABLE False), {small.__file__} (2 classes via ast)")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        sd = as_float32(load_checkpoint(case))
        if case.kind == "grassmann":
            windows = sd["blocks.0.grassmann.window_sizes_tensor"].tolist()
            same = all(sd[f"blocks.{i}.grassmann.window_sizes_tensor"].tolist() == windows for i in range(c["N"]))
            info(f"windows from window_sizes_tensor {windows} (same in every layer: {same})")
            model = fused.GrassmannGPTFused(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                            num_layers=c["N"], reduced_dim=c["r"], ff_dim=c["d_ff"],
                                            window_sizes=windows, dropout=0.1, tie_weights=True)
            strict_load(model, sd)
            rep.match(f"{case.name} (grassmann_fused.GrassmannGPTFused, PyTorch path)", *case.compare(model))
            for b in model.blocks:
                b.grassmann.eps = 1e-6
            rep.control(f"{case.name} eps=1e-6", *case.compare(model))
        else:
            def build(heads):
                model = small.SmallTransformer(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                               num_layers=c["N"], num_heads=heads, ff_dim=c["d_ff"],
                                               dropout=0.1, tie_weights=True)
                strict_load(model, sd)
                return model
            rep.match(f"{case.name} (train_wikitext2.SmallTransformer, {c['heads']} heads)",
                      *case.compare(build(c["heads"])))
            rep.control(f"{case.name} num_heads=4", *case.compare(build(4)))


def check_arledge_v3(cases, args, rep):
    v3 = import_file("arledge_grassmann_v3", os.path.join(args.repo, "src", "models", "grassmann_v3.py"))
    info(f"upstream {v3.__file__}")
    for case in cases:
        print(f"== {case.name}")
        with open(os.path.join(case.path, "config.json")) as f:
            tc = json.load(f)  # asdict(TrainingConfig), as train.py writes it beside best_model.pt
        ckpt = torch.load(case.checkpoint, map_location="cpu")
        sd = as_float32(ckpt["model_state_dict"])

        def build(window_sizes):
            model = v3.GrassmannGPTv3(vocab_size=tc["vocab_size"], max_seq_len=tc["max_seq_len"],
                                      model_dim=tc["model_dim"], num_layers=tc["num_layers"],
                                      reduced_dim=tc["reduced_dim"], ff_dim=tc["ff_dim"], window_sizes=window_sizes,
                                      dropout=tc["dropout"])
            strict_load(model, sd)
            return model
        info(f"train.py create_model: reduced_dim {tc['reduced_dim']}, window_sizes {tc['window_sizes']}")
        rep.match(f"{case.name} (grassmann_v3.GrassmannGPTv3, strict load)", *case.compare(build(tc["window_sizes"])))
        rep.control(f"{case.name} window_sizes None (the model's default)", *case.compare(build(None)))


def check_causal_mixer(cases, args, rep):
    need_file(os.path.join(args.repo, "training", "grassman.py"))
    need_file(os.path.join(args.repo, "training", "checkpoints.py"))
    sys.path.insert(0, args.repo)
    checkpoints = importlib.import_module("training.checkpoints")
    info(f"upstream {checkpoints.__file__}")
    for case in cases:
        print(f"== {case.name}")
        ckpt = torch.load(case.checkpoint, map_location="cpu")
        info(f"checkpoint keys {sorted(ckpt)}; model_type {ckpt.get('model_type')}; config {ckpt['config']}")

        def build(**over):
            c = dict(ckpt, config=dict(ckpt["config"], **over), model=as_float32(ckpt["model"]))
            model, _ = checkpoints.load_model_from_checkpoint(c)
            model.eval()
            return lambda ids: model(ids)["logits"]
        rep.match(f"{case.name} (training.checkpoints.load_model_from_checkpoint, strict)", *case.compare(build()))
        if case.kind == "grassmann":
            rep.control(f"{case.name} eps 1e-8", *case.compare(build(eps=1e-8)))
            rep.control(f"{case.name} offsets (1, 2, 4)", *case.compare(build(offsets=(1, 2, 4))))
        else:
            rep.control(f"{case.name} 8 heads", *case.compare(build(n_heads=8)))


def setup_adipks_packages(args):
    """`models` and `utils` as packages spanning --repo then --repo2 (their __init__.py, which only
    re-export, are not executed)."""
    for pkg in ("models", "utils"):
        dirs = [os.path.join(r, pkg) for r in (args.repo, args.repo2) if r and os.path.isdir(os.path.join(r, pkg))]
        mod = types.ModuleType(pkg)
        mod.__path__ = dirs
        mod.__package__ = pkg
        sys.modules[pkg] = mod
    for rel in ("models/grassmann_sparse.py", "models/transformer_baseline.py"):
        need_file(os.path.join(args.repo, rel))
    for rel in ("models/blocks.py", "utils/sparsity.py"):
        if not any(r and os.path.isfile(os.path.join(r, rel)) for r in (args.repo, args.repo2)):
            sys.exit(f"error: {rel} is in neither --repo nor --repo2 (6aa4170f has it)")


def check_adipks(cases, args, rep):
    setup_adipks_packages(args)
    blocks = importlib.import_module("models.blocks")
    gs = importlib.import_module("models.grassmann_sparse")
    tb = importlib.import_module("models.transformer_baseline")
    sp = importlib.import_module("utils.sparsity")
    for m in (gs, tb, blocks, sp):
        info(f"upstream {m.__name__}: {m.__file__}")

    def masked(model):
        return [m for m in model.modules() if isinstance(m, blocks.MaskedLinear)]

    def rederive_masks(model):  # as prompt.py / eval/bench_inference.py after loading
        for m in masked(model):
            m.weight_mask.copy_((m.weight != 0).to(m.weight_mask.dtype))

    for case in cases:
        print(f"== {case.name}")
        ckpt = load_checkpoint(case)
        cfg, sd = ckpt["config"], as_float32(ckpt["state_dict"])
        info(f"ckpt config {cfg}; other keys {sorted(k for k in ckpt if k not in ('state_dict', 'config'))}")
        if case.kind == "grassmann":
            def build(seed, **over):
                torch.manual_seed(seed)  # apply_2to4_masks draws random masks at construction
                kw = dict(vocab_size=cfg["vocab_size"], d_model=cfg["d_model"], n_layers=cfg["n_layers"],
                          d_ff=cfg["d_ff"], reduced_dim=cfg["reduced_dim"], max_seq_len=cfg["max_seq_len"],
                          apply_sparse=cfg.get("apply_sparse", True))
                kw.update(over)
                model = gs.GrassmannLM(gs.GrassmannConfig(**kw))
                strict_load(model, sd)
                return model

            model = build(0)
            rederive_masks(model)
            info(f"windows (GrassmannConfig default) {model.config.window_sizes}; "
                 f"{len(masked(model))} MaskedLinear layers, masks re-derived from weight != 0")
            rep.match(f"{case.name} (grassmann_sparse.GrassmannLM)", *case.compare(model))
            for m in masked(model):
                m.weight_mask.data.fill_(1.0)
            rep.match(f"{case.name} variant: masks all ones (saved weights are the effective ones)",
                      *case.compare(model))
            rep.control(f"{case.name} fresh random 2:4 masks, not re-derived", *case.compare(build(1)))
            old = build(0, window_sizes=list(ALL_OFFSETS))
            rederive_masks(old)
            rep.control(f"{case.name} window_sizes={ALL_OFFSETS} (6aa4170f's)", *case.compare(old))
            model = build(0)
            rederive_masks(model)
            for b in model.blocks:
                b.grassmann.plucker.eps = 1e-6
            rep.control(f"{case.name} Plucker eps=1e-6", *case.compare(model))
        else:
            def build(heads):
                model = tb.TransformerLM(tb.TransformerConfig(
                    vocab_size=cfg["vocab_size"], d_model=cfg["d_model"], n_layers=cfg["n_layers"],
                    n_heads=heads, d_ff=cfg["d_ff"], max_seq_len=cfg["max_seq_len"]))
                strict_load(model, sd)
                return model
            heads = cfg.get("n_heads", 8)  # as prompt.py; bench_inference.py hard-codes 8
            rep.match(f"{case.name} (transformer_baseline.TransformerLM, {heads} heads)", *case.compare(build(heads)))
            rep.control(f"{case.name} n_heads=4", *case.compare(build(4)))


WAKE2VEC_FILE = os.path.join("Grassmanntesting", "Grassmann_v_attention_for_Wake.py")
WAKE2VEC_CLASSES = ["Config", "FFN", "CausalSelfAttention", "TransformerBlock", "TransformerLM",
                    "GrassmannMixingBlock", "GrassmannTransformerBlock", "GrassmannLM"]


def check_wake2vec(cases, args, rep):
    versions = {"current": extract_classes(os.path.join(args.repo, WAKE2VEC_FILE), WAKE2VEC_CLASSES,
                                           "wake2vec_current")}
    if args.repo2:
        versions["ln1"] = extract_classes(os.path.join(args.repo2, WAKE2VEC_FILE), WAKE2VEC_CLASSES, "wake2vec_ln1")
    for k, m in versions.items():
        info(f"upstream ({k}) {m.__file__}: {len(WAKE2VEC_CLASSES)} classes via ast")

    def build(mod, cls, c, sd=None, windows=ALL_OFFSETS):
        cfg = mod.Config()
        cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads = c["V"], c["d"], c["N"], c["heads"]
        cfg.d_ff, cfg.max_seq_len, cfg.grassmann_r = c["d_ff"], c["Lmax"], c["r"]
        cfg.grassmann_windows = list(windows)
        cfg.dropout = 0.1
        model = getattr(mod, cls)(cfg)
        if sd is not None:
            strict_load(model, sd)
        return model

    for case in cases:
        print(f"== {case.name}")
        sd = load_checkpoint(case)
        if case.kind == "transformer":
            runs = [(v, "TransformerLM") for v in ("current", "ln1")]
        else:
            runs = [("ln1" if case.family == "wake2vec-ln1" else "current", "GrassmannLM")]
        for version, cls in runs:
            if version not in versions:
                rep.skip(f"{case.name} with the {version} version's {cls}: no --repo2 (earlier file with ln1)")
                continue
            model = build(versions[version], cls, case.config, sd)
            tied = model.lm_head.weight.data_ptr() == model.tok_emb.weight.data_ptr()
            rep.match(f"{case.name} ({version} {cls}, strict load ok, tied head {tied})", *case.compare(model))
        if case.family == "wake2vec" and case.kind == "grassmann":
            cur = versions["current"]
            if "ln1" in versions:
                try:
                    build(versions["ln1"], "GrassmannLM", case.config, sd)
                    rep.fail(f"control {case.name} into the ln1 GrassmannLM: strict load succeeded")
                except RuntimeError as e:
                    first = [s.strip() for s in str(e).splitlines() if s.strip()][1:2]
                    rep.line("PASS", f"control {case.name} into the ln1 GrassmannLM: strict load fails "
                                     f"as it must ({first[0][:90] if first else e})")
            else:
                rep.skip(f"control {case.name} into the ln1 GrassmannLM: no --repo2")
            model = build(cur, "GrassmannLM", case.config, sd)
            for b in model.blocks:
                b.grass.windows = [1, 2, 4, 8, 16]
            rep.control(f"{case.name} windows [1, 2, 4, 8, 16]", *case.compare(model))
            model = build(cur, "GrassmannLM", case.config, sd)
            orig = torch.clamp

            def clamp_floor_1e6(x, min=None, max=None):  # only the 1e-8 norm floor is changed
                return orig(x, min=1e-6 if min == 1e-8 else min, max=max)
            torch.clamp = clamp_floor_1e6
            try:
                result = case.compare(model)
            finally:
                torch.clamp = orig
            rep.control(f"{case.name} clamp floor 1e-6 instead of 1e-8", *result)


CHECKS = {"youdie006": check_youdie006, "kanenorman": check_kanenorman, "alphaxiv": check_alphaxiv,
          "grasslm": check_grasslm, "arledge": check_arledge, "arledge-v3": check_arledge_v3, "adipks": check_adipks,
          "causal-mixer": check_causal_mixer,
          "wake2vec": check_wake2vec}
