#include "linear_cross_entropy.h"

#include <algorithm>

namespace gwb::engine::detail {

int64_t linearCrossEntropyChunkRows(int64_t V) {
    constexpr int64_t kBytes = int64_t{16} << 20;
    return std::max<int64_t>(1, kBytes / (4 * std::max<int64_t>(V, 1)));
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& targets, int64_t chunkRows) {
        const int64_t N = x.size(0), V = weight.size(0);
        const int64_t rows =
            std::min(chunkRows > 0 ? chunkRows : linearCrossEntropyChunkRows(V), std::max<int64_t>(N, 1));
        ctx->saved_data["rows"] = rows;
        torch::Tensor logits = torch::empty({rows, V}, x.options());
        torch::Tensor lse = torch::empty({N}, x.options());
        torch::Tensor sum = torch::zeros({}, x.options().dtype(torch::kDouble));
        const torch::Tensor wt = weight.t();
        for (int64_t s = 0; s < N; s += rows) {
            const int64_t n = std::min(rows, N - s);
            torch::Tensor l = logits.narrow(0, 0, n);
            torch::mm_out(l, x.narrow(0, s, n), wt);
            const torch::Tensor chunkLse = torch::logsumexp(l, 1);
            lse.narrow(0, s, n).copy_(chunkLse);
            const torch::Tensor picked = l.gather(1, targets.narrow(0, s, n).view({n, 1})).view({n});
            sum += (chunkLse - picked).sum().to(torch::kDouble);
        }
        ctx->save_for_backward({x, weight, targets, lse});
        return (sum / static_cast<double>(std::max<int64_t>(N, 1))).to(x.scalar_type());
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const torch::Tensor& weight = saved[1];
        const torch::Tensor& targets = saved[2];
        const torch::Tensor& lse = saved[3];
        const int64_t N = x.size(0), V = weight.size(0);
        const int64_t rows = ctx->saved_data["rows"].toInt();
        // d loss / d logits = (softmax - onehot(target)) * grad / N, chunk by chunk.
        const torch::Tensor scale = grads[0] / static_cast<double>(std::max<int64_t>(N, 1));
        torch::Tensor gx = torch::empty_like(x);
        torch::Tensor gw = torch::zeros_like(weight);
        torch::Tensor buffer = torch::empty({rows, V}, x.options());
        const torch::Tensor minusOne = torch::full({rows, 1}, -1.0, x.options());
        const torch::Tensor wt = weight.t();
        for (int64_t s = 0; s < N; s += rows) {
            const int64_t n = std::min(rows, N - s);
            torch::Tensor g = buffer.narrow(0, 0, n);
            const torch::Tensor xs = x.narrow(0, s, n);
            torch::mm_out(g, xs, wt);
            g.sub_(lse.narrow(0, s, n).view({n, 1})).exp_();
            g.scatter_add_(1, targets.narrow(0, s, n).view({n, 1}), minusOne.narrow(0, 0, n));
            g.mul_(scale);
            torch::Tensor gxs = gx.narrow(0, s, n);
            torch::mm_out(gxs, g, weight);
            gw.addmm_(g.t(), xs);
        }
        return {gx, gw, torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

torch::Tensor linearCrossEntropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                                 int64_t chunkRows) {
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1),
                "linearCrossEntropy: x must be N x d and the weight V x d");
    TORCH_CHECK(targets.dim() == 1 && targets.size(0) == x.size(0), "linearCrossEntropy: one target per row");
    return LinearCrossEntropy::apply(x.contiguous(), weight, targets.to(torch::kLong).contiguous(), chunkRows);
}

} // namespace gwb::engine::detail
