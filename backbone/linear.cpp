#include "backbone/linear.h"

#include <stdexcept>

#include "backbone/workspace.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"

namespace vt {

Linear::Linear(ParamStore& store, const std::string& name, int64_t in, int64_t out, bool bias,
               ParamInit weight_init, ParamInit bias_init)
    : store_(&store), has_bias_(bias), in_(in), out_(out) {
  w_ = store.add(name + ".weight", {out, in}, weight_init, /*weight_decay=*/true);
  if (bias) b_ = store.add(name + ".bias", {out}, bias_init, /*weight_decay=*/false);
}

Tensor Linear::gemm_weight() const { return store_->has_bf16_copy() ? store_->value_bf16(w_) : weight(); }

const Tensor& Linear::gemm_input(const Tensor& x) const {
  // Without the bf16 copy, or an activation already in bf16: used as is.
  if (!store_->has_bf16_copy() || x.dtype() == DType::BF16) return x;
  ensure_workspace(xb_, x.shape(), x.device(), DType::BF16);
  convert(x, xb_);
  return xb_;
}

const Tensor& Linear::saved_input(const Tensor& x) const {
  if (!store_->has_bf16_copy() || x.dtype() == DType::BF16) return x;
  if (!xb_.defined() || xb_.shape() != x.shape())
    throw std::logic_error("Linear::backward: no bf16 forward input saved for x " + x.str());
  return xb_;
}

const Tensor& Linear::gemm_grad(const Tensor& dy) const {
  if (!store_->has_bf16_copy() || dy.dtype() == DType::BF16) return dy;
  ensure_workspace(dyb_, dy.shape(), dy.device(), DType::BF16);
  convert(dy, dyb_);
  return dyb_;
}

void Linear::forward(const Tensor& x, const Tensor& y) const {
  linear_forward(gemm_input(x), gemm_weight(), bias(), y);
}

void Linear::forward_act(Activation act, const Tensor& x, const Tensor& pre, const Tensor& y) const {
  linear_act_forward(act, gemm_input(x), gemm_weight(), bias(), pre, y);
}

void Linear::backward(const Tensor& dy, const Tensor& x, const Tensor& dx) const {
  const Tensor dw = store_->grad(w_), db = has_bias_ ? store_->grad(b_) : Tensor();
  const Tensor& xin = saved_input(x);
  linear_backward(gemm_grad(dy), xin, gemm_weight(), dx, dw, db);
}

void Linear::backward_act(Activation act, const Tensor& dy, const Tensor& x, const Tensor& pre,
                          const Tensor& dpre) const {
  const Tensor dw = store_->grad(w_), db = has_bias_ ? store_->grad(b_) : Tensor();
  const Tensor& xin = saved_input(x);
  act_linear_backward(act, gemm_grad(dy), xin, gemm_weight(), pre, dpre, dw, db);
}

}  // namespace vt
