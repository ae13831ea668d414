// nn.Linear in PyTorch layout (y = x W^T + b, W [out, in]) with explicit
// forward/backward over kernels/matmul.h. Parameters live in a ParamStore
// under "<name>.weight" / "<name>.bias"; weights get weight decay, biases not.
#pragma once
#include <string>

#include "backbone/param_store.h"

namespace vt {

class Linear {
 public:
  Linear() = default;
  Linear(ParamStore& store, const std::string& name, int64_t in, int64_t out, bool bias, ParamInit weight_init,
         ParamInit bias_init = ParamInit::zeros());

  // x [..., in] -> y [..., out]. With the store's bf16 weight copy
  // (precision: bf16, CUDA) the GEMM reads x and W rounded to bf16 and
  // accumulates in fp32; y, the bias and the gradients stay fp32.
  void forward(const Tensor& x, const Tensor& y) const;
  // dx = dy W (OVERWRITE; skipped when dx undefined); dW, db ACCUMULATE.
  void backward(const Tensor& dy, const Tensor& x, const Tensor& dx) const;

  Device device() const { return store_->device(); }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor weight() const { return store_->value(w_); }
  Tensor bias() const { return has_bias_ ? store_->value(b_) : Tensor(); }

 private:
  ParamStore* store_ = nullptr;
  // bf16 GEMMs (the store has a bf16 weight copy): this layer's input and
  // upstream gradient rounded to bf16. Each Linear runs once per forward,
  // so xb_ still holds the forward's input when backward runs.
  mutable Tensor xb_, dyb_;
  ParamId w_ = 0, b_ = 0;
  bool has_bias_ = false;
  int64_t in_ = 0, out_ = 0;
};

}  // namespace vt
