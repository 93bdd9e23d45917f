// RowRunner and edgeLoadings (row_runner.h). A target's row is d(target)/d(source) x source for
// every source, from one backward pass of the replacement over a batch of targets: the sources are
// the prompt's plus a zero per batch row that requires a gradient, so each batch row's gradient is
// its own target's.

#include "graph/row_runner.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gwb::engine::graph {

namespace {

std::vector<double> toVector(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

} // namespace

RowRunner::RowRunner(Replacement& replacement, const std::vector<int64_t>& logitTokens, const Layout& layout)
    : m_R(replacement), m_layout(layout), m_logitTokens(logitTokens) {
    const torch::Tensor idx = torch::tensor(logitTokens, torch::kLong).to(m_R.unembed.device());
    m_dirs = m_R.unembed.index_select(0, idx) - m_R.unembed.mean(0, /*keepdim=*/true);
}

RowRunner::RowRunner(Replacement& replacement, const torch::Tensor& directions, const Layout& layout)
    : m_R(replacement), m_layout(layout), m_dirs(directions.to(replacement.options)) {}

Sources RowRunner::zeroSources() const {
    Sources s;
    s.emb = torch::zeros_like(m_R.base.emb);
    for (int l = 0; l < m_R.layers; ++l) {
        s.act.push_back(torch::zeros_like(m_R.base.act[static_cast<size_t>(l)]));
        s.err.push_back(torch::zeros_like(m_R.base.err[static_cast<size_t>(l)]));
    }
    return s;
}

std::vector<double> RowRunner::recordedValues() const {
    std::vector<double> v(static_cast<size_t>(m_layout.count()), 0.0);
    for (int l = 0; l < m_R.layers; ++l) {
        const std::vector<double> a = toVector(m_R.frozen(l).actValue);
        std::copy(a.begin(), a.end(), v.begin() + m_R.featureStart[static_cast<size_t>(l)]);
    }
    if (m_logitTokens.empty()) { // given directions: the recorded last position read along each
        const std::vector<double> read = toVector((m_R.lastNormed * m_dirs).sum(-1));
        std::copy(read.begin(), read.end(), v.begin() + m_layout.logitStart());
        return v;
    }
    const torch::Tensor logits = m_R.replacementLogits;
    const double mean = logits.mean().item<double>();
    for (size_t k = 0; k < m_logitTokens.size(); ++k)
        v[static_cast<size_t>(m_layout.logitStart()) + k] = logits[m_logitTokens[k]].item<double>() - mean;
    return v;
}

std::vector<double> RowRunner::values(const Sources& sources, const Route* route) {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> ffnIn;
    const torch::Tensor h = m_R.run(sources, m_R.layers, &ffnIn, route);
    std::vector<double> v(static_cast<size_t>(m_layout.count()), 0.0);
    for (int l = 0; l < m_R.layers; ++l) {
        const Frozen& F = m_R.frozen(l);
        if (F.actPos.numel() == 0) continue;
        const BlockParams& P = m_R.params(l);
        const torch::Tensor x = ffnIn[static_cast<size_t>(l)][0].index_select(0, F.actPos);
        const torch::Tensor pre =
            (x * P.wEnc.t().index_select(0, F.actFeat)).sum(-1) + P.bEnc.index_select(0, F.actFeat);
        const std::vector<double> a = toVector(pre);
        std::copy(a.begin(), a.end(), v.begin() + m_R.featureStart[static_cast<size_t>(l)]);
    }
    const std::vector<double> logits =
        toVector((m_R.finalNorm(h[0].select(0, m_R.T - 1).unsqueeze(0)) * m_dirs).sum(-1));
    std::copy(logits.begin(), logits.end(), v.begin() + m_layout.logitStart());
    return v;
}

RowRunner::Probe RowRunner::probe(int64_t B, int64_t len, int blocks) const {
    const int64_t d = m_R.d;
    const int L = m_R.layers;
    const torch::TensorOptions o = m_R.options;
    Probe p;
    p.len = len;
    p.blocks = blocks;
    p.base = m_R.baseBefore(len);
    p.actInput.assign(static_cast<size_t>(L), -1);
    p.errInput.assign(static_cast<size_t>(L), -1);
    const torch::Tensor dEmb = torch::zeros({B, len, d}, o).requires_grad_();
    p.sources.emb = p.base.emb + dEmb;
    p.inputs.push_back(dEmb);
    for (int l = 0; l < L; ++l) {
        const torch::Tensor& a = p.base.act[static_cast<size_t>(l)];
        const torch::Tensor& e = p.base.err[static_cast<size_t>(l)];
        if (l >= blocks) { // not read
            p.sources.act.push_back(a);
            p.sources.err.push_back(e);
            continue;
        }
        const torch::Tensor dErr = torch::zeros({B, len, d}, o).requires_grad_();
        p.errInput[static_cast<size_t>(l)] = static_cast<int>(p.inputs.size());
        p.inputs.push_back(dErr);
        p.sources.err.push_back(e + dErr);
        if (a.size(1) > 0) {
            const torch::Tensor dAct = torch::zeros({B, a.size(1)}, o).requires_grad_();
            p.actInput[static_cast<size_t>(l)] = static_cast<int>(p.inputs.size());
            p.inputs.push_back(dAct);
            p.sources.act.push_back(a + dAct);
        } else {
            p.sources.act.push_back(a.expand({B, 0}));
        }
    }
    return p;
}

std::vector<std::vector<double>> RowRunner::assemble(const Probe& p, int64_t B, const std::vector<torch::Tensor>& grads,
                                                     int64_t keep) const {
    const int64_t T = m_R.T, len = keep < 0 ? p.len : std::min(keep, p.len);
    // The first B batch rows and positions < len: later positions are after every target (0).
    auto part = [&](const torch::Tensor& g) { return g.narrow(0, 0, B); };
    torch::Tensor out = torch::zeros({B, m_layout.count()}, m_R.options);
    if (grads[0].defined())
        out.narrow(1, m_layout.tokenStart(), len)
            .copy_((part(grads[0]).narrow(1, 0, len) * p.base.emb.narrow(1, 0, len)).sum(-1));
    for (int l = 0; l < p.blocks; ++l) {
        const int ei = p.errInput[static_cast<size_t>(l)], ai = p.actInput[static_cast<size_t>(l)];
        if (ei >= 0 && grads[static_cast<size_t>(ei)].defined())
            out.narrow(1, m_layout.errorStart() + l * T, len)
                .copy_((part(grads[static_cast<size_t>(ei)]).narrow(1, 0, len) *
                        p.base.err[static_cast<size_t>(l)].narrow(1, 0, len))
                           .sum(-1));
        if (ai >= 0 && grads[static_cast<size_t>(ai)].defined()) {
            const int64_t n = std::min(p.base.act[static_cast<size_t>(l)].size(1),
                                       m_R.frozen(l).activeBefore[static_cast<size_t>(len)]);
            out.narrow(1, m_R.featureStart[static_cast<size_t>(l)], n)
                .copy_(part(grads[static_cast<size_t>(ai)]).narrow(1, 0, n) *
                       p.base.act[static_cast<size_t>(l)].narrow(1, 0, n));
        }
    }
    const torch::Tensor c = out.to(torch::kCPU, torch::kDouble).contiguous();
    std::vector<std::vector<double>> result(static_cast<size_t>(B));
    const int64_t n = m_layout.count();
    for (int64_t b = 0; b < B; ++b)
        result[static_cast<size_t>(b)].assign(c.data_ptr<double>() + b * n, c.data_ptr<double>() + (b + 1) * n);
    return result;
}

namespace {

/// The blocks a batch of targets runs and the positions it reads (a target at t reads nothing after t).
std::pair<int, int64_t> extent(const std::vector<Target>& targets, int L, int64_t T) {
    int upTo = 0;
    int64_t len = 1;
    for (const Target& t : targets) {
        upTo = std::max(upTo, t.logit ? L : t.layer + 1);
        len = std::max(len, t.logit ? T : t.position + 1);
    }
    return {upTo, len};
}

/// The targets grouped by the block they read (the logits under L): layer -> (batch rows, locals).
std::map<int, std::pair<std::vector<int64_t>, std::vector<int64_t>>> targetsByLayer(const std::vector<Target>& targets,
                                                                                    int L) {
    std::map<int, std::pair<std::vector<int64_t>, std::vector<int64_t>>> byLayer;
    for (size_t b = 0; b < targets.size(); ++b) {
        const Target& t = targets[b];
        auto& entry = byLayer[t.logit ? L : t.layer];
        entry.first.push_back(static_cast<int64_t>(b));
        entry.second.push_back(t.local);
    }
    return byLayer;
}

} // namespace

torch::Tensor RowRunner::targetSum(const std::vector<Target>& targets, const torch::Tensor& h,
                                   const std::vector<torch::Tensor>& ffnIn) const {
    // Sum of every batch row's target: its gradient row b is target b's alone.
    const int L = m_R.layers;
    const torch::TensorOptions o = m_R.options;
    torch::Tensor total = torch::zeros({}, o);
    const auto byLayer = targetsByLayer(targets, L);
    for (const auto& [layer, entry] : byLayer) {
        const torch::Tensor rowsIdx = torch::tensor(entry.first, torch::kLong).to(o.device());
        const torch::Tensor local = torch::tensor(entry.second, torch::kLong).to(o.device());
        if (layer == L) {
            const torch::Tensor last = h.index_select(0, rowsIdx).select(1, h.size(1) - 1);
            total = total + (m_R.finalNorm(last) * m_dirs.index_select(0, local)).sum();
        } else {
            const Frozen& F = m_R.frozen(layer);
            const BlockParams& P = m_R.params(layer);
            const torch::Tensor pos = F.actPos.index_select(0, local), feat = F.actFeat.index_select(0, local);
            const torch::Tensor x = ffnIn[static_cast<size_t>(layer)].index({rowsIdx, pos}); // n x d
            total = total + (x * P.wEnc.t().index_select(0, feat)).sum();
        }
    }
    return total;
}

RowRunner::Pass& RowRunner::pass(int64_t rows, int blocks, int64_t len) {
    // Positions in buckets of a quarter of the prompt (at least 8): a batch's backward pass runs at
    // most a bucket past its targets, and a forward pass serves every batch of its block and bucket.
    const int64_t T = m_R.T, q = std::max<int64_t>(8, (T + 3) / 4);
    const int64_t bucket = std::min(T, (len + q - 1) / q * q);
    if (m_pass && m_pass->rows >= rows && m_pass->probe.blocks == blocks && m_pass->probe.len == bucket) return *m_pass;
    const int64_t before = m_pass ? m_pass->rows : 0;
    m_pass.reset(); // the old graph goes before the new one is made
    Pass p;
    p.rows = std::max(rows, before);
    p.probe = probe(p.rows, bucket, blocks);
    const torch::Tensor h = m_R.run(p.probe.sources, blocks, &p.ffnIn);
    if (blocks == m_R.layers && bucket == T) p.lastNormed = m_R.finalNorm(h.select(1, T - 1)).reshape({p.rows, m_R.d});
    m_pass = std::move(p);
    return *m_pass;
}

std::vector<std::vector<double>> RowRunner::rows(const std::vector<Target>& targets) {
    torch::AutoGradMode grad(true);
    const auto B = static_cast<int64_t>(targets.size());
    const auto [upTo, len] = extent(targets, m_R.layers, m_R.T);
    const Pass& P = pass(B, upTo, len);
    // Each batch row's cotangent is its own target's: the target is linear in the FFN input (the
    // encoder's row) or in the final-normed last position (the logit's direction).
    const int L = m_R.layers;
    const torch::TensorOptions o = m_R.options;
    const auto byLayer = targetsByLayer(targets, L);
    std::vector<torch::Tensor> outputs, cotangents;
    for (const auto& [layer, entry] : byLayer) {
        const torch::Tensor rowsIdx = torch::tensor(entry.first, torch::kLong).to(o.device());
        const torch::Tensor local = torch::tensor(entry.second, torch::kLong).to(o.device());
        if (layer == L) {
            torch::Tensor c = torch::zeros({P.rows, m_R.d}, o);
            c.index_copy_(0, rowsIdx, m_dirs.index_select(0, local));
            outputs.push_back(P.lastNormed);
            cotangents.push_back(c);
        } else {
            const Frozen& F = m_R.frozen(layer);
            const torch::Tensor pos = F.actPos.index_select(0, local), feat = F.actFeat.index_select(0, local);
            torch::Tensor c = torch::zeros({P.rows, P.probe.len, m_R.d}, o);
            c.index_put_({rowsIdx, pos}, m_R.params(layer).wEnc.t().index_select(0, feat));
            outputs.push_back(P.ffnIn[static_cast<size_t>(layer)]);
            cotangents.push_back(c);
        }
    }
    return assemble(P.probe, B,
                    torch::autograd::grad(outputs, P.probe.inputs, cotangents, /*retain_graph=*/true,
                                          /*create_graph=*/false, /*allow_unused=*/true),
                    len);
}

std::vector<torch::Tensor> RowRunner::mixerCotangents(const std::vector<Target>& targets) {
    releasePass();
    torch::AutoGradMode grad(true);
    const auto B = static_cast<int64_t>(targets.size());
    const auto [upTo, len] = extent(targets, m_R.layers, m_R.T);
    // Only the mixer outputs need a gradient here: the sources enter as constants.
    const Sources base = m_R.baseBefore(len);
    Sources s;
    s.emb = base.emb.expand({B, len, m_R.d});
    for (int l = 0; l < m_R.layers; ++l) {
        s.act.push_back(base.act[static_cast<size_t>(l)].expand({B, base.act[static_cast<size_t>(l)].size(1)}));
        s.err.push_back(base.err[static_cast<size_t>(l)].expand({B, len, m_R.d}));
    }
    s.emb = s.emb.clone().requires_grad_(); // a leaf, so that the graph is recorded
    std::vector<torch::Tensor> ffnIn, mix;
    const torch::Tensor h = m_R.run(s, upTo, &ffnIn, nullptr, &mix);
    const torch::Tensor total = targetSum(targets, h, ffnIn);
    std::vector<torch::Tensor> inputs;
    for (int l = 0; l < upTo; ++l)
        inputs.push_back(mix[static_cast<size_t>(l)]);
    std::vector<torch::Tensor> grads = torch::autograd::grad({total}, inputs, {}, /*retain_graph=*/false,
                                                             /*create_graph=*/false, /*allow_unused=*/true);
    std::vector<torch::Tensor> out(static_cast<size_t>(m_R.layers));
    for (int l = 0; l < upTo; ++l)
        out[static_cast<size_t>(l)] = grads[static_cast<size_t>(l)].defined()
                                          ? grads[static_cast<size_t>(l)].detach()
                                          : torch::zeros({B, len, m_R.d}, m_R.options);
    return out;
}

std::vector<std::vector<double>> RowRunner::routedRows(int m, const torch::Tensor& mask,
                                                       const torch::Tensor& cotangent) {
    torch::AutoGradMode grad(true);
    const int64_t B = cotangent.size(0), len = cotangent.size(1);
    const Probe p = probe(B, len, m);
    const Route route{m, mask};
    const torch::Tensor out = m_R.runToMixer(p.sources, m, route);
    const torch::Tensor total = (out * cotangent).sum();
    return assemble(p, B,
                    torch::autograd::grad({total}, p.inputs, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                          /*allow_unused=*/true));
}

std::vector<EdgeLoading> edgeLoadings(RowRunner& runner, const AttributionGraph& graph,
                                      const std::vector<int64_t>& rowFull, const std::vector<int64_t>& colMap,
                                      const GraphPruning& pruning, int64_t batch,
                                      const std::function<void(double)>& progress) {
    const int64_t n = graph.nodeCount();
    const int L = graph.layers;
    std::vector<int64_t> toFull(static_cast<size_t>(n), -1);
    for (size_t j = 0; j < colMap.size(); ++j)
        if (colMap[j] >= 0) toFull[static_cast<size_t>(colMap[j])] = static_cast<int64_t>(j);
    auto sourceLayer = [&](int64_t node) {
        const GraphNode& s = graph.nodes[static_cast<size_t>(node)];
        return s.kind == GraphNodeKind::Token ? -1 : s.layer;
    };
    auto targetLayer = [&](int64_t node) {
        const GraphNode& t = graph.nodes[static_cast<size_t>(node)];
        return t.kind == GraphNodeKind::Logit ? L - 1 : t.layer;
    };
    // Row -> block m -> the kept sources whose edge crosses its mixer (source layer < m <= target layer).
    std::map<size_t, std::map<int, std::vector<int64_t>>> crossing;
    for (size_t r = 0; r < graph.rowNodes.size(); ++r)
        for (int64_t j = 0; j < n; ++j) {
            if (!pruning.edgeKept[r * static_cast<size_t>(n) + static_cast<size_t>(j)]) continue;
            for (int m = sourceLayer(j) + 1; m <= targetLayer(graph.rowNodes[r]); ++m)
                crossing[r][m].push_back(j);
        }
    Replacement& R = runner.replacement();
    auto targetOf = [&](size_t r) {
        const GraphNode& t = graph.nodes[static_cast<size_t>(graph.rowNodes[r])];
        const int64_t fullNode = rowFull[r];
        const bool logit = t.kind == GraphNodeKind::Logit;
        const int64_t local =
            logit ? fullNode - runner.layout().logitStart() : fullNode - R.featureStart[static_cast<size_t>(t.layer)];
        return Target{logit ? L : t.layer, local, logit, fullNode, t.position};
    };
    // Rows in the order of their targets (block, then position), so that a batch reads few positions.
    std::vector<size_t> order;
    size_t work = 0, done = 0;
    for (const auto& [r, blocks] : crossing) {
        order.push_back(r);
        for (const auto& [m, sources] : blocks)
            work += static_cast<size_t>(R.units(m));
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const Target ta = targetOf(a), tb = targetOf(b);
        return std::tie(ta.layer, ta.position) < std::tie(tb.layer, tb.position);
    });
    std::map<std::tuple<size_t, int, int64_t>, EdgeLoading> loads; // (row, block, source)
    const auto rowBatch = static_cast<size_t>(std::max<int64_t>(batch, 1));
    for (size_t at = 0; at < order.size(); at += rowBatch) {
        const std::vector<size_t> batchRows(order.begin() + static_cast<std::ptrdiff_t>(at),
                                            order.begin() +
                                                static_cast<std::ptrdiff_t>(std::min(order.size(), at + rowBatch)));
        std::vector<Target> targets;
        for (size_t r : batchRows)
            targets.push_back(targetOf(r));
        // One unrouted pass gives each row's gradient at every mixer's output; a unit's part of an
        // edge is then the routed mixer output's gradient against it, from blocks [0, m) alone.
        const std::vector<torch::Tensor> cot = runner.mixerCotangents(targets);
        for (int m = 0; m < L; ++m) {
            const int U = R.units(m);
            std::vector<std::pair<size_t, int>> pairs; // (index in the batch, unit 1..U)
            for (size_t k = 0; k < batchRows.size(); ++k)
                if (crossing.at(batchRows[k]).count(m))
                    for (int u = 1; u <= U; ++u)
                        pairs.emplace_back(k, u);
            const auto B = static_cast<size_t>(std::max<int64_t>(batch, U));
            for (size_t p0 = 0; p0 < pairs.size(); p0 += B) {
                const size_t p1 = std::min(pairs.size(), p0 + B);
                torch::Tensor mask = torch::zeros({static_cast<int64_t>(p1 - p0), U + 1}, R.options);
                std::vector<int64_t> rowIndex;
                for (size_t i = p0; i < p1; ++i) {
                    mask[static_cast<int64_t>(i - p0)][pairs[i].second] = 1.0;
                    rowIndex.push_back(static_cast<int64_t>(pairs[i].first));
                }
                const torch::Tensor c = cot[static_cast<size_t>(m)].index_select(
                    0, torch::tensor(rowIndex, torch::kLong).to(R.options.device()));
                const std::vector<std::vector<double>> rows = runner.routedRows(m, mask, c);
                for (size_t i = p0; i < p1; ++i) {
                    const size_t r = batchRows[pairs[i].first];
                    const int u = pairs[i].second;
                    for (int64_t j : crossing.at(r).at(m)) {
                        EdgeLoading& e = loads[{r, m, j}];
                        if (e.units.empty()) {
                            e.target = graph.rowNodes[r];
                            e.source = j;
                            e.layer = m;
                            e.skip = graph.rows.data[r * static_cast<size_t>(n) + static_cast<size_t>(j)];
                            e.units.assign(static_cast<size_t>(U), 0.0);
                        }
                        const double part = rows[i - p0][static_cast<size_t>(toFull[static_cast<size_t>(j)])];
                        e.units[static_cast<size_t>(u - 1)] = part;
                        e.skip -= part;
                    }
                }
                done += p1 - p0;
                if (progress) progress(static_cast<double>(done) / static_cast<double>(std::max<size_t>(work, 1)));
            }
        }
    }
    std::vector<EdgeLoading> out;
    for (auto& [key, e] : loads)
        out.push_back(std::move(e));
    std::sort(out.begin(), out.end(), [](const EdgeLoading& a, const EdgeLoading& b) {
        return std::tie(a.target, a.source, a.layer) < std::tie(b.target, b.source, b.layer);
    });
    return out;
}

} // namespace gwb::engine::graph
