#include "kernels/linear_kl.h"

#include <algorithm>

namespace gwb::engine::detail {

namespace {

/// Row-wise dot products of a and b (n x V each) as an n x 1 tensor, without an n x V temporary.
torch::Tensor rowDot(const torch::Tensor& a, const torch::Tensor& b) {
    return torch::bmm(a.unsqueeze(1), b.unsqueeze(2)).view({a.size(0), 1});
}

} // namespace

LinearKl linearKl(const torch::Tensor& yF, const std::vector<torch::Tensor>& ys, const torch::Tensor& E,
                  int64_t chunkRows) {
    TORCH_CHECK(yF.dim() == 2 && E.dim() == 2 && yF.size(1) == E.size(1), "linearKl: yF must be N x d and E V x d");
    for (const torch::Tensor& y : ys)
        TORCH_CHECK(y.sizes() == yF.sizes(), "linearKl: every lens output must have yF's shape");
    torch::NoGradGuard noGrad;
    const int64_t N = yF.size(0), V = E.size(0);
    // 4 MiB of logits a chunk: the target's probabilities and one working chunk stay in cache
    // between the passes.
    const int64_t fit = std::max<int64_t>(1, (int64_t{4} << 20) / (4 * std::max<int64_t>(V, 1)));
    const int64_t rows = std::min(chunkRows > 0 ? chunkRows : fit, std::max<int64_t>(N, 1));
    const torch::Tensor target = yF.contiguous(), Et = E.t();
    torch::Tensor pBuf = torch::empty({rows, V}, yF.options()), lBuf = torch::empty({rows, V}, yF.options());
    LinearKl out;
    std::vector<torch::Tensor> sums;
    std::vector<torch::Tensor> inputs;
    for (const torch::Tensor& y : ys) {
        out.grad.push_back(torch::empty_like(target));
        sums.push_back(torch::zeros({}, yF.options().dtype(torch::kDouble)));
        inputs.push_back(y.contiguous());
    }
    for (int64_t r0 = 0; r0 < N; r0 += rows) {
        const int64_t n = std::min(rows, N - r0);
        torch::Tensor p = pBuf.narrow(0, 0, n), l = lBuf.narrow(0, 0, n);
        // p_F and the negative entropy sum_v p_F log p_F of each row.
        torch::mm_out(l, target.narrow(0, r0, n), Et);
        l.sub_(torch::logsumexp(l, 1, /*keepdim=*/true)); // log p_F
        torch::exp_out(p, l);
        const torch::Tensor negEntropy = rowDot(p, l);
        for (size_t s = 0; s < inputs.size(); ++s) {
            torch::mm_out(l, inputs[s].narrow(0, r0, n), Et);
            const torch::Tensor lse = torch::logsumexp(l, 1, /*keepdim=*/true);
            // KL = sum p_F log p_F - sum p_F z + lse(z), as sum p_F = 1.
            sums[s] += (negEntropy - rowDot(p, l) + lse).sum().to(torch::kDouble);
            l.sub_(lse).exp_().sub_(p); // q_s - p_F, the gradient of the row's KL by its logits
            torch::Tensor g = out.grad[s].narrow(0, r0, n);
            torch::mm_out(g, l, E);
        }
    }
    const double scale = 1.0 / static_cast<double>(std::max<int64_t>(N, 1));
    for (size_t s = 0; s < inputs.size(); ++s) {
        out.kl.push_back(sums[s].item<double>() * scale);
        out.grad[s].mul_(scale);
    }
    return out;
}

} // namespace gwb::engine::detail
