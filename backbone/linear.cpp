#include "backbone/linear.h"

#include "kernels/matmul.h"

namespace vt {

Linear::Linear(ParamStore& store, const std::string& name, int64_t in, int64_t out, bool bias,
               ParamInit weight_init, ParamInit bias_init)
    : store_(&store), has_bias_(bias), in_(in), out_(out) {
  w_ = store.add(name + ".weight", {out, in}, weight_init, /*weight_decay=*/true);
  if (bias) b_ = store.add(name + ".bias", {out}, bias_init, /*weight_decay=*/false);
}

void Linear::forward(const Tensor& x, const Tensor& y) const { linear_forward(x, weight(), bias(), y); }

void Linear::backward(const Tensor& dy, const Tensor& x, const Tensor& dx) const {
  linear_backward(dy, x, weight(), dx, store_->grad(w_), has_bias_ ? store_->grad(b_) : Tensor());
}

}  // namespace vt
