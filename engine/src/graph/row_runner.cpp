// RowRunner and edgeLoadings (row_runner.h). A target's row is d(target)/d(source) x source for
// every source, from one backward pass of the replacement over a batch of targets: the sources are
// the prompt's plus a zero per batch row that requires a gradient, so each batch row's gradient is
// its own target's.

#include "graph/row_runner.h"

#include <algorithm>
#include <map>

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

std::vector<std::vector<double>> RowRunner::rows(const std::vector<Target>& targets, const Route* route) {
    torch::AutoGradMode grad(true);
    const auto B = static_cast<int64_t>(targets.size());
    const int64_t T = m_R.T, d = m_R.d;
    const int L = m_R.layers;
    int upTo = 0;
    int64_t len = 1; // positions the batch needs: a target at t reads nothing after t
    for (const Target& t : targets) {
        upTo = std::max(upTo, t.logit ? L : t.layer + 1);
        len = std::max(len, t.logit ? T : t.position + 1);
    }
    const torch::TensorOptions o = m_R.options;
    const Sources base = m_R.baseBefore(len);
    Sources s;
    std::vector<torch::Tensor> inputs;
    const torch::Tensor dEmb = torch::zeros({B, len, d}, o).requires_grad_();
    s.emb = base.emb + dEmb;
    inputs.push_back(dEmb);
    std::vector<int> actInput(static_cast<size_t>(L), -1), errInput(static_cast<size_t>(L), -1);
    for (int l = 0; l < L; ++l) {
        const torch::Tensor& a = base.act[static_cast<size_t>(l)];
        const torch::Tensor& e = base.err[static_cast<size_t>(l)];
        if (l >= upTo) { // not run
            s.act.push_back(a);
            s.err.push_back(e);
            continue;
        }
        const torch::Tensor dErr = torch::zeros({B, len, d}, o).requires_grad_();
        errInput[static_cast<size_t>(l)] = static_cast<int>(inputs.size());
        inputs.push_back(dErr);
        s.err.push_back(e + dErr);
        if (a.size(1) > 0) {
            const torch::Tensor dAct = torch::zeros({B, a.size(1)}, o).requires_grad_();
            actInput[static_cast<size_t>(l)] = static_cast<int>(inputs.size());
            inputs.push_back(dAct);
            s.act.push_back(a + dAct);
        } else {
            s.act.push_back(a.expand({B, 0}));
        }
    }
    std::vector<torch::Tensor> ffnIn;
    const torch::Tensor h = m_R.run(s, upTo, &ffnIn, route);

    // Sum of every batch row's target: its gradient row b is target b's alone.
    torch::Tensor total = torch::zeros({}, o);
    std::map<int, std::pair<std::vector<int64_t>, std::vector<int64_t>>> byLayer; // layer -> (batch rows, locals)
    for (int64_t b = 0; b < B; ++b) {
        const Target& t = targets[static_cast<size_t>(b)];
        auto& entry = byLayer[t.logit ? L : t.layer];
        entry.first.push_back(b);
        entry.second.push_back(t.local);
    }
    for (const auto& [layer, entry] : byLayer) {
        const torch::Tensor rowsIdx = torch::tensor(entry.first, torch::kLong).to(o.device());
        const torch::Tensor local = torch::tensor(entry.second, torch::kLong).to(o.device());
        if (layer == L) {
            const torch::Tensor last = h.index_select(0, rowsIdx).select(1, len - 1);
            total = total + (m_R.finalNorm(last) * m_dirs.index_select(0, local)).sum();
        } else {
            const Frozen& F = m_R.frozen(layer);
            const BlockParams& P = m_R.params(layer);
            const torch::Tensor pos = F.actPos.index_select(0, local), feat = F.actFeat.index_select(0, local);
            const torch::Tensor x = ffnIn[static_cast<size_t>(layer)].index({rowsIdx, pos}); // n x d
            total = total + (x * P.wEnc.t().index_select(0, feat)).sum();
        }
    }
    const std::vector<torch::Tensor> grads = torch::autograd::grad({total}, inputs, {}, /*retain_graph=*/false,
                                                                   /*create_graph=*/false, /*allow_unused=*/true);

    torch::Tensor out = torch::zeros({B, m_layout.count()}, o);
    if (grads[0].defined()) out.narrow(1, m_layout.tokenStart(), len).copy_((grads[0] * base.emb).sum(-1));
    for (int l = 0; l < upTo; ++l) {
        const int ei = errInput[static_cast<size_t>(l)], ai = actInput[static_cast<size_t>(l)];
        if (ei >= 0 && grads[static_cast<size_t>(ei)].defined())
            out.narrow(1, m_layout.errorStart() + l * T, len)
                .copy_((grads[static_cast<size_t>(ei)] * base.err[static_cast<size_t>(l)]).sum(-1));
        if (ai >= 0 && grads[static_cast<size_t>(ai)].defined()) {
            const torch::Tensor& a = base.act[static_cast<size_t>(l)];
            out.narrow(1, m_R.featureStart[static_cast<size_t>(l)], a.size(1))
                .copy_(grads[static_cast<size_t>(ai)] * a);
        }
    }
    const torch::Tensor c = out.to(torch::kCPU, torch::kDouble).contiguous();
    std::vector<std::vector<double>> result(static_cast<size_t>(B));
    const int64_t n = m_layout.count();
    for (int64_t b = 0; b < B; ++b)
        result[static_cast<size_t>(b)].assign(c.data_ptr<double>() + b * n, c.data_ptr<double>() + (b + 1) * n);
    return result;
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
    // Block m -> row -> the kept sources whose edge crosses its mixer (source layer < m <= target layer).
    std::map<int, std::map<size_t, std::vector<int64_t>>> crossing;
    for (size_t r = 0; r < graph.rowNodes.size(); ++r)
        for (int64_t j = 0; j < n; ++j) {
            if (!pruning.edgeKept[r * static_cast<size_t>(n) + static_cast<size_t>(j)]) continue;
            for (int m = sourceLayer(j) + 1; m <= targetLayer(graph.rowNodes[r]); ++m)
                crossing[m][r].push_back(j);
        }
    size_t work = 0, done = 0;
    for (const auto& [m, rs] : crossing)
        work += rs.size() * static_cast<size_t>(runner.replacement().units(m));
    Replacement& R = runner.replacement();
    std::vector<EdgeLoading> out;
    for (const auto& [m, rs] : crossing) {
        const int U = R.units(m);
        // The loadings of every kept edge crossing block m, units filled batch by batch; skip is what
        // the units leave of the edge (route 0 needs no pass of its own).
        std::map<std::pair<size_t, int64_t>, EdgeLoading> loads;
        for (const auto& [r, sources] : rs)
            for (int64_t j : sources) {
                EdgeLoading& e = loads[{r, j}];
                e.target = graph.rowNodes[r];
                e.source = j;
                e.layer = m;
                e.skip = graph.rows.data[r * static_cast<size_t>(n) + static_cast<size_t>(j)];
                e.units.assign(static_cast<size_t>(U), 0.0);
            }
        // (row, unit) pairs, units 1..U; each batch row routed through its one unit.
        std::vector<std::pair<size_t, int>> pairs;
        for (const auto& [r, sources] : rs)
            for (int u = 1; u <= U; ++u)
                pairs.emplace_back(r, u);
        const auto B = static_cast<size_t>(std::max<int64_t>(batch, U));
        for (size_t at = 0; at < pairs.size(); at += B) {
            const size_t end = std::min(pairs.size(), at + B);
            std::vector<Target> targets;
            torch::Tensor mask = torch::zeros({static_cast<int64_t>(end - at), U + 1}, R.options);
            for (size_t i = at; i < end; ++i) {
                const int64_t node = graph.rowNodes[pairs[i].first];
                const GraphNode& t = graph.nodes[static_cast<size_t>(node)];
                const int64_t fullNode = rowFull[pairs[i].first];
                const int64_t local = t.kind == GraphNodeKind::Logit
                                          ? fullNode - runner.layout().logitStart()
                                          : fullNode - R.featureStart[static_cast<size_t>(t.layer)];
                targets.push_back(Target{t.kind == GraphNodeKind::Logit ? L : t.layer, local,
                                         t.kind == GraphNodeKind::Logit, fullNode, t.position});
                mask[static_cast<int64_t>(i - at)][pairs[i].second] = 1.0;
            }
            const Route route{m, mask};
            const std::vector<std::vector<double>> rows = runner.rows(targets, &route);
            for (size_t i = at; i < end; ++i) {
                const auto [r, u] = pairs[i];
                for (int64_t j : rs.at(r)) {
                    EdgeLoading& e = loads.at({r, j});
                    const double part = rows[i - at][static_cast<size_t>(toFull[static_cast<size_t>(j)])];
                    e.units[static_cast<size_t>(u - 1)] = part;
                    e.skip -= part;
                }
            }
            done += (end - at);
            if (progress) progress(static_cast<double>(done) / static_cast<double>(std::max<size_t>(work, 1)));
        }
        for (auto& [key, e] : loads)
            out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const EdgeLoading& a, const EdgeLoading& b) {
        return std::tie(a.target, a.source, a.layer) < std::tie(b.target, b.source, b.layer);
    });
    return out;
}

} // namespace gwb::engine::graph
