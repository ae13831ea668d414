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

void Linear::forward(const Tensor& x, const Tensor& y) const {
  if (!store_->has_bf16_copy()) {
    linear_forward(x, weight(), bias(), y);
    return;
  }
  if (x.dtype() == DType::BF16) {  // an activation already in bf16: nothing to round or keep
    linear_forward(x, store_->value_bf16(w_), bias(), y);
    return;
  }
  ensure_workspace(xb_, x.shape(), x.device(), DType::BF16);
  convert(x, xb_);
  linear_forward(xb_, store_->value_bf16(w_), bias(), y);
}

void Linear::backward(const Tensor& dy, const Tensor& x, const Tensor& dx) const {
  const Tensor dw = store_->grad(w_), db = has_bias_ ? store_->grad(b_) : Tensor();
  if (!store_->has_bf16_copy()) {
    linear_backward(dy, x, weight(), dx, dw, db);
    return;
  }
  const bool x_bf16 = x.dtype() == DType::BF16;
  if (!x_bf16 && (!xb_.defined() || xb_.shape() != x.shape()))
    throw std::logic_error("Linear::backward: no bf16 forward input saved for x " + x.str());
  const Tensor& xin = x_bf16 ? x : xb_;
  if (dy.dtype() == DType::BF16) {
    linear_backward(dy, xin, store_->value_bf16(w_), dx, dw, db);
    return;
  }
  ensure_workspace(dyb_, dy.shape(), dy.device(), DType::BF16);
  convert(dy, dyb_);
  linear_backward(dyb_, xin, store_->value_bf16(w_), dx, dw, db);
}

}  // namespace vt
