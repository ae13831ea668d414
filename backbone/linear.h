// nn.Linear in PyTorch layout (y = x W^T + b, W [out, in]) with explicit
// forward/backward over kernels/matmul.h. Parameters live in a ParamStore
// under "<name>.weight" / "<name>.bias"; weights get weight decay, biases not.
#pragma once
#include <string>

#include "backbone/param_store.h"
#include "kernels/activation.h"

namespace vt {

class Linear {
 public:
  Linear() = default;
  Linear(ParamStore& store, const std::string& name, int64_t in, int64_t out, bool bias, ParamInit weight_init,
         ParamInit bias_init = ParamInit::zeros());

  // x [..., in] -> y [..., out], F32 without the store's bf16 weight copy.
  // With it (precision: bf16, CUDA) the GEMM reads x as BF16 (an F32 x is
  // rounded into a private copy kept for the backward; a BF16 x is used as
  // is) and the bf16 W, accumulates in fp32 and writes y in y's dtype (F32,
  // or BF16 for an activation that feeds another bf16 op); the bias is fp32.
  void forward(const Tensor& x, const Tensor& y) const;
  // y = act(x W^T + b), keeping the pre-activation pre (same shape and
  // dtype as y) for backward_act's partner: timm Mlp's fc1 + activation in
  // one call (kernels/matmul.h linear_act_forward: on CUDA GELU-tanh is a
  // cuBLASLt epilogue of the GEMM). bf16 handling as forward.
  void forward_act(Activation act, const Tensor& x, const Tensor& pre, const Tensor& y) const;
  // dx = dy W (OVERWRITE, in dx's dtype; skipped when dx undefined); dW, db
  // ACCUMULATE in fp32. x is the forward's input. With the bf16 copy an F32
  // dy is rounded to bf16 first, a BF16 dy is used as is.
  void backward(const Tensor& dy, const Tensor& x, const Tensor& dx) const;
  // Backward of this layer when its input was x = act(pre) (Mlp's fc2):
  // dpre = act'(pre) * (dy W) OVERWRITTEN in pre's dtype (on CUDA GELU-tanh's
  // derivative is the GEMM's DGELU epilogue); dW, db accumulate as backward.
  void backward_act(Activation act, const Tensor& dy, const Tensor& x, const Tensor& pre, const Tensor& dpre) const;
  // The tensor kept for the backward beyond the caller's: the bf16 copy of
  // an F32 input (undefined without the bf16 weight copy or for a BF16 input).
  Tensor* saved_tensor() { return &xb_; }

  Device device() const { return store_->device(); }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Tensor weight() const { return store_->value(w_); }
  Tensor bias() const { return has_bias_ ? store_->value(b_) : Tensor(); }

 private:
  // The GEMM's operands: the bf16 weight copy when the store has one; x or
  // dy rounded into xb_ / dyb_ when they are F32 and the weights bf16.
  Tensor gemm_weight() const;
  const Tensor& gemm_input(const Tensor& x) const;
  const Tensor& saved_input(const Tensor& x) const;  // the forward's gemm_input(x), for the backward
  const Tensor& gemm_grad(const Tensor& dy) const;

  ParamStore* store_ = nullptr;
  // bf16 GEMMs (the store has a bf16 weight copy): this layer's F32 input
  // and upstream gradient rounded to bf16. Each Linear runs once per
  // forward, so xb_ still holds the forward's input when backward runs.
  mutable Tensor xb_, dyb_;
  ParamId w_ = 0, b_ = 0;
  bool has_bias_ = false;
  int64_t in_ = 0, out_ = 0;
};

}  // namespace vt
