#include "kernels/linear_cross_entropy.h"

#include "kernels/row_scan.h"

#include <algorithm>

namespace gwb::engine::detail {

int64_t linearCrossEntropyChunkRows(int64_t V) {
    constexpr int64_t kBytes = int64_t{16} << 20;
    return std::max<int64_t>(1, kBytes / (4 * std::max<int64_t>(V, 1)));
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Sum over a chunk's rows of lse - logit[target] (double), with the chunk's logits `l` (n x V)
/// replaced by softmax(l) - onehot(targets) when `gradient` is set (left as they are otherwise).
torch::Tensor chunkLoss(torch::Tensor& l, const torch::Tensor& targets, bool gradient) {
    const int64_t n = l.size(0), V = l.size(1);
    if (l.is_cpu() && l.scalar_type() == torch::kFloat && l.is_contiguous()) {
        torch::Tensor lse = torch::empty({n}, l.options()), picked = torch::empty({n}, l.options());
        if (gradient) {
            softmaxMinusOneHotRows(l.data_ptr<float>(), n, V, targets.data_ptr<int64_t>(), lse.data_ptr<float>(),
                                   picked.data_ptr<float>());
        } else {
            const RowScan scan = scanRows(l.data_ptr<float>(), n, V, 0, targets.data_ptr<int64_t>(), n);
            std::copy(scan.lse.begin(), scan.lse.end(), lse.data_ptr<float>());
            std::copy(scan.target.begin(), scan.target.end(), picked.data_ptr<float>());
        }
        return (lse.to(torch::kDouble) - picked.to(torch::kDouble)).sum();
    }
    // Other devices and dtypes: torch's operations.
    const torch::Tensor lse = torch::logsumexp(l, 1, /*keepdim=*/true);
    const torch::Tensor picked = l.gather(1, targets.view({n, 1}));
    const torch::Tensor sum = (lse - picked).sum().to(torch::kDouble);
    if (gradient) {
        l.sub_(lse).exp_();
        l.scatter_add_(1, targets.view({n, 1}), torch::full({n, 1}, -1.0, l.options()));
    }
    return sum;
}

/// The mean loss over x's rows, chunk by chunk. With gx and gw (gx N x d uninitialised, gw V x d
/// zero) it also writes sum_i d(lse_i - logit_i[t_i]) / dx and / dE there, unscaled by 1 / N.
torch::Tensor chunkedLoss(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                          int64_t chunkRows, torch::Tensor* gx, torch::Tensor* gw) {
    const int64_t N = x.size(0), V = weight.size(0);
    const int64_t rows = std::min(chunkRows > 0 ? chunkRows : linearCrossEntropyChunkRows(V), std::max<int64_t>(N, 1));
    torch::Tensor logits = torch::empty({rows, V}, x.options());
    torch::Tensor sum = torch::zeros({}, x.options().dtype(torch::kDouble));
    const torch::Tensor wt = weight.t();
    for (int64_t s = 0; s < N; s += rows) {
        const int64_t n = std::min(rows, N - s);
        torch::Tensor l = logits.narrow(0, 0, n);
        const torch::Tensor xs = x.narrow(0, s, n);
        torch::mm_out(l, xs, wt);
        sum += chunkLoss(l, targets.narrow(0, s, n), /*gradient=*/gx != nullptr);
        if (!gx) continue;
        torch::Tensor gxs = gx->narrow(0, s, n);
        torch::mm_out(gxs, l, weight);
        gw->addmm_(l.t(), xs);
    }
    return (sum / static_cast<double>(std::max<int64_t>(N, 1))).to(x.scalar_type());
}

/// The loss and its gradients in one pass: the gradient of a chunk's logits (softmax - onehot) is
/// known as soon as the chunk's log-sum-exp is, so forward turns it into the gradients of x and
/// E right away (d loss / d x = G E / N, d loss / d E = G^T x / N) and backward only scales them by
/// the upstream gradient. Three products of the head's size, as for unchunked logits, and no
/// recomputation of the logits in backward.
class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& targets, int64_t chunkRows) {
        torch::Tensor gx = torch::empty_like(x), gw = torch::zeros_like(weight);
        const torch::Tensor loss = chunkedLoss(x, weight, targets, chunkRows, &gx, &gw);
        ctx->save_for_backward({gx, gw});
        ctx->saved_data["n"] = x.size(0);
        return loss;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const int64_t N = ctx->saved_data["n"].toInt();
        const torch::Tensor scale = grads[0] / static_cast<double>(std::max<int64_t>(N, 1));
        return {saved[0] * scale, saved[1] * scale, torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

torch::Tensor linearCrossEntropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                                 int64_t chunkRows) {
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1),
                "linearCrossEntropy: x must be N x d and the weight V x d");
    TORCH_CHECK(targets.dim() == 1 && targets.size(0) == x.size(0), "linearCrossEntropy: one target per row");
    const torch::Tensor t = targets.to(torch::kLong).contiguous();
    if (t.numel() > 0) {
        const int64_t lo = t.min().item<int64_t>(), hi = t.max().item<int64_t>();
        TORCH_CHECK(lo >= 0 && hi < weight.size(0), "linearCrossEntropy: target ", lo < 0 ? lo : hi,
                    " is outside the vocabulary of ", weight.size(0));
    }
    if (torch::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad()))
        return LinearCrossEntropy::apply(x.contiguous(), weight, t, chunkRows);
    torch::NoGradGuard noGrad; // the loss alone: the chunks' log-sum-exp scan, no gradients
    return chunkedLoss(x.contiguous(), weight, t, chunkRows, nullptr, nullptr);
}

} // namespace gwb::engine::detail
