// The two residual functions F_k of a transformer block, with explicit
// forward/backward. Each instance owns the activations its backward needs
// (allocated by plan() for a batch shape and reused while it stays the same);
// gradient temporaries come from a Scratch shared by all blocks.
//
//   Attention (timm vision_transformer.Attention, qkv_bias, no dropout):
//     qkv = z Wqkv^T + b; a = softmax(q k^T / sqrt(Dh)) v; f = a Wproj^T + b
//     saves qkv [B,T,3D], probs [B,H,T,T], a [B,T,D].
//   Mlp (timm layers.Mlp): f = fc2(gelu(fc1(z)))
//     saves fc1 output [B,T,hidden] and the activation [B,T,hidden].
#pragma once
#include <string>

#include "backbone/linear.h"
#include "kernels/activation.h"

namespace vt {

// Gradient temporaries shared by all modules of a backbone (not saved state).
struct ModuleScratch {
  Tensor d_a;    // [B,T,D]
  Tensor d_qkv;  // [B,T,3D]
  Tensor d_h;    // [B,T,hidden]
  void plan(int64_t B, int64_t T, int64_t D, int64_t hidden);
};

class Attention {
 public:
  Attention() = default;
  Attention(ParamStore& store, const std::string& prefix, int64_t dim, int64_t heads, bool qkv_bias,
            ParamInit weight_init);
  void plan(int64_t B, int64_t T);
  void forward(const Tensor& z, const Tensor& f);
  // dz OVERWRITTEN; parameter gradients accumulate.
  void backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s);
  int64_t saved_bytes() const;

 private:
  Linear qkv_, proj_;
  int64_t dim_ = 0, heads_ = 0;
  Tensor qkv_out_, probs_, a_;
};

class Mlp {
 public:
  Mlp() = default;
  Mlp(ParamStore& store, const std::string& prefix, int64_t dim, int64_t hidden, Activation act,
      ParamInit weight_init);
  void plan(int64_t B, int64_t T);
  void forward(const Tensor& z, const Tensor& f);
  void backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s);
  int64_t saved_bytes() const;

 private:
  Linear fc1_, fc2_;
  Activation act_ = Activation::GeluErf;
  int64_t hidden_ = 0;
  Tensor h1_, h2_;
};

}  // namespace vt
