#include "kernels/causal_softmax.h"

#include "kernels/row_scan.h"

#include <limits>

namespace gwb::engine::detail {
namespace {

class CausalSoftmax : public torch::autograd::Function<CausalSoftmax> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores, double scale,
                                 int64_t offset) {
        const torch::Tensor p = run(scores, scale, offset);
        ctx->save_for_backward({p});
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["offset"] = offset;
        return p;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::Tensor p = ctx->get_saved_variables()[0];
        const torch::Tensor g = grads[0].contiguous();
        torch::Tensor out = torch::empty_like(p);
        const int64_t n = p.size(-2), keys = p.size(-1);
        causalSoftmaxBackwardRows(p.data_ptr<float>(), g.data_ptr<float>(), out.data_ptr<float>(), p.numel() / keys, n,
                                  keys, ctx->saved_data["offset"].toInt(),
                                  static_cast<float>(ctx->saved_data["scale"].toDouble()));
        return {out, torch::Tensor(), torch::Tensor()};
    }

    static torch::Tensor run(const torch::Tensor& scores, double scale, int64_t offset) {
        const torch::Tensor in = scores.contiguous();
        torch::Tensor p = torch::empty_like(in);
        const int64_t n = in.size(-2), keys = in.size(-1);
        causalSoftmaxRows(in.data_ptr<float>(), p.data_ptr<float>(), in.numel() / keys, n, keys, offset,
                          static_cast<float>(scale));
        return p;
    }
};

} // namespace

torch::Tensor causalSoftmax(const torch::Tensor& scores, double scale, int64_t offset) {
    TORCH_CHECK(scores.dim() >= 2, "causalSoftmax: scores need query and key dimensions");
    const int64_t n = scores.size(-2), keys = scores.size(-1);
    if (scores.is_cpu() && scores.scalar_type() == torch::kFloat && n > 0 && keys > 0) {
        if (torch::GradMode::is_enabled() && scores.requires_grad()) return CausalSoftmax::apply(scores, scale, offset);
        return CausalSoftmax::run(scores, scale, offset);
    }
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(scores.device());
    const torch::Tensor future =
        torch::arange(0, keys, longs).view({1, keys}) > torch::arange(offset, offset + n, longs).view({n, 1});
    torch::Tensor s = scores * scale;
    s.masked_fill_(future, -std::numeric_limits<float>::infinity());
    return torch::softmax(s, -1);
}

} // namespace gwb::engine::detail
