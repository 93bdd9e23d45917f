"""A plain PyTorch SAE training loop, written independently of gwb's engine, for the check in
test_gwb_features.py and the benchmark scripts/bench_features.py: torch.optim.Adam, TopK or
ReLU + L1, the AuxK loss on dead features, the decoder gradient's component along each row removed,
rows renormalised after each step, batches taken in order from the rows (wrapping around)."""


def reference_training(rows, initial, architecture, k, l1, steps, batch, lr, dead_after_steps, aux):
    """Trains from `initial` (a gwb Dictionary: its weights and its scaling) on `rows`; returns the
    weights in file units (the scaling folded in, as gwb saves them)."""
    import torch
    cfg = initial.config
    s = cfg["scaling"]
    x_all = torch.tensor(rows, dtype=torch.float32) * s
    W_enc = torch.tensor(initial.W_enc / s, requires_grad=True)
    b_enc = torch.tensor(initial.b_enc, requires_grad=True)
    W_dec = torch.tensor(initial.W_dec * s, requires_grad=True)
    b_dec = torch.tensor(initial.b_dec * s, requires_grad=True)
    opt = torch.optim.Adam([W_enc, b_enc, W_dec, b_dec], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    since = torch.zeros(W_dec.shape[0])
    n, d_in = x_all.shape
    for step in range(steps):
        x = x_all[(step * batch + torch.arange(batch)) % n]
        pre = (x - b_dec) @ W_enc + b_enc
        act = torch.relu(pre)
        if architecture == "topk":
            vals, idx = act.topk(k, dim=-1)
            z = torch.zeros_like(act).scatter(-1, idx, vals)
        else:
            z = act
        xhat = z @ W_dec + b_dec
        loss = ((xhat - x) ** 2).sum(-1).mean()
        dead = since >= dead_after_steps
        if architecture == "relu":
            loss = loss + l1 * z.sum(-1).mean()
        elif aux > 0 and int(dead.sum()) > 0:
            k_aux = min(max(1, d_in // 2), int(dead.sum()))
            e = (x - xhat).detach()
            masked = torch.where(dead[None, :], act, torch.full_like(act, -1.0))
            v, i = masked.topk(k_aux, dim=-1)
            z_aux = torch.zeros_like(act).scatter(-1, i, torch.relu(v))
            loss = loss + aux * ((z_aux @ W_dec - e) ** 2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        with torch.no_grad():
            g = W_dec.grad
            g -= (g * W_dec).sum(1, keepdim=True) * W_dec
        opt.step()
        with torch.no_grad():
            W_dec /= W_dec.norm(dim=1, keepdim=True)
            fired = (z > 0).any(0)
            since += 1
            since[fired] = 0
    return {"W_enc": W_enc.detach().numpy() * s, "b_enc": b_enc.detach().numpy(),
            "W_dec": W_dec.detach().numpy() / s, "b_dec": b_dec.detach().numpy() / s}
