#!/usr/bin/env python3
"""A .grasslm file against GrassLM's OWN engines (issue 39): its C++ engine and its PyTorch model.

No GrassLM code is contained here; the repository is read from PATH (adriansimonn/GrassLM, a
checkout of aee352c or later). Usage (Debian's python3 with torch and numpy, g++, Eigen, libblas-dev):

    PYTHONPATH=build/ci/python /usr/bin/python3 tests/python/check_grasslm_file.py --repo PATH

It builds GrassLM's cpp/ engine (tensor, layers, model, weight_loader, tokenizer, generator) with a
one-line stand-in for <Accelerate/Accelerate.h> (#include <cblas.h>, reference BLAS), makes a random
12-layer GrassLM with GrassLM's own python/grasslm (the built-in schedule 1,1,2,2,4,4,8,8,12,12,16,16;
LayerNorms moved off 1/0), writes it with GrassLM's own export_model, and compares the logits of one
40-token prompt: gwb.load of the file, GrassLM's C++ engine on the same file, GrassLM's PyTorch model.
PASS when gwb is within 1e-5 of the largest |logit| of both. Control: the same file with its
window_offsets changed (every offset 1) must move gwb's logits by more than 1e-3 of that scale."""

import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def build_cpp(repo, work):
    shim = os.path.join(work, "shim", "Accelerate")
    os.makedirs(shim)
    with open(os.path.join(shim, "Accelerate.h"), "w") as f:
        f.write("#include <cblas.h>\n")
    driver = os.path.join(work, "driver.cpp")
    with open(driver, "w") as f:
        f.write(r'''#include <grasslm/model.h>
#include <grasslm/weight_loader.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
    grasslm::WeightLoader loader;
    if (!loader.load(argv[1])) return 1;
    grasslm::GrassLMModel model;
    if (!model.load(loader)) return 2;
    std::vector<int> ids;
    for (int i = 3; i < argc; ++i) ids.push_back(std::atoi(argv[i]));
    const grasslm::Tensor logits = model.forward(ids);
    FILE* f = std::fopen(argv[2], "wb");
    std::fwrite(logits.data(), sizeof(float), logits.numel(), f);
    std::fclose(f);
    return 0;
}
''')
    src = os.path.join(repo, "cpp", "src")
    exe = os.path.join(work, "grasslm_driver")
    subprocess.run(["g++", "-O2", "-std=c++17", "-I", os.path.join(repo, "cpp", "include"), "-I",
                    os.path.join(work, "shim"), "-isystem", "/usr/include/eigen3"] +
                   [os.path.join(src, n + ".cpp") for n in
                    ("tensor", "layers", "model", "weight_loader", "tokenizer", "generator")] +
                   [driver, "-lblas", "-o", exe], check=True)
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="a checkout of adriansimonn/GrassLM")
    a = ap.parse_args()
    import torch
    import gwb
    sys.path.insert(0, os.path.join(a.repo, "python"))
    from grasslm.export import export_model
    from grasslm.model import GrassLM

    work = tempfile.mkdtemp(prefix="gwb-grasslm-")
    exe = build_cpp(a.repo, work)
    torch.manual_seed(7)
    model = GrassLM(vocab_size=1000, d_model=64, n_layers=12, d_reduce=16, d_ff=256, max_seq_len=64,
                    dropout=0.0).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    path = os.path.join(work, "model.grasslm")
    export_model(model, path)
    ids = [int(x) for x in np.random.default_rng(3).integers(0, 1000, 40)]
    with torch.no_grad():
        out = model(torch.tensor([ids]))
    theirs_torch = (out[0] if isinstance(out, (tuple, list)) else out).reshape(len(ids), -1).numpy()
    subprocess.run([exe, path, os.path.join(work, "cpp.bin"), *map(str, ids)], check=True)
    theirs_cpp = np.fromfile(os.path.join(work, "cpp.bin"), dtype=np.float32).reshape(len(ids), -1)
    ours = gwb.load(path, device="cpu").run(ids)
    scale = float(np.abs(theirs_torch).max())
    d_cpp = float(np.abs(ours - theirs_cpp).max())
    d_torch = float(np.abs(ours - theirs_torch).max())
    print(f"logit scale {scale:.4g}; gwb vs GrassLM C++ {d_cpp:.3g}; gwb vs GrassLM PyTorch {d_torch:.3g}; "
          f"their C++ vs their PyTorch {float(np.abs(theirs_cpp - theirs_torch).max()):.3g}")
    ok = d_cpp <= 1e-5 * scale and d_torch <= 1e-5 * scale
    # Control: the file's own schedule is what gwb runs; every offset 1 instead must show.
    with open(path, "rb") as f:
        data = bytearray(f.read())
    marker = b"window_offsets"
    at = data.rfind(marker) + len(marker)
    (rank,) = struct.unpack_from("<I", data, at)
    values = at + 4 + 4 * rank
    for i in range(12):
        struct.pack_into("<f", data, values + 4 * i, 1.0)
    control = os.path.join(work, "control.grasslm")
    with open(control, "wb") as f:
        f.write(bytes(data))
    moved = float(np.abs(gwb.load(control, device="cpu").run(ids) - ours).max())
    print(f"control (window_offsets all 1): logits move by {moved:.3g}")
    ok = ok and moved > 1e-3 * scale
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
