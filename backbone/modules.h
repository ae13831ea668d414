// The two residual functions F_k of a transformer block, with explicit
// forward/backward. Each instance owns the activations its backward needs
// (allocated by plan() for a batch shape and reused while it stays the same);
// gradient temporaries come from a Scratch shared by all blocks.
//
//   Attention (timm vision_transformer.Attention, qkv_bias, no dropout):
//     qkv = z Wqkv^T + b; a = softmax(q k^T / sqrt(Dh)) v; f = a Wproj^T + b
//     saves qkv [B,T,3D], probs [B,H,T,T], a [B,T,D].
//     With qkv_norm (HybridNorm, arXiv 2503.04598; the norms of timm's
//     Attention(qk_norm=True) plus one on v): q, k and v are each LayerNorm'ed
//     over head_dim after the projection (affine attn.{q,k,v}_norm [Dh],
//     eps as the block norms) before softmax(q k^T / sqrt(Dh)) v; then also
//     saves the raw projection [B,T,3D] and the norm statistics [3, B*T*H].
//   Mlp (timm layers.Mlp): f = fc2(gelu(fc1(z)))
//     saves fc1 output [B,T,hidden] and the activation [B,T,hidden].
//
// dtypes: z, f, df and everything saved or passed between the ops inside
// (qkv, the attention output, the MLP's hidden activations and their
// gradients) are in activation_dtype(store) (backbone/workspace.h): BF16
// under precision bf16, so attention runs on bf16 q/k/v (cuDNN's SDPA on a
// GPU) and the saved activations take half the bytes; statistics and the
// logsumexp stay F32. dz (a gradient into the residual streams) is F32.
#pragma once
#include <string>
#include <vector>

#include "backbone/linear.h"
#include "kernels/activation.h"

namespace vt {

// Gradient temporaries shared by all modules of a backbone (not saved state).
struct ModuleScratch {
  Tensor d_a;    // [B,T,D]
  Tensor d_qkv;  // [B,T,3D]
  Tensor d_h;    // [B,T,hidden]
  Tensor qn_x, qn_y;  // [B,T,D] one of q/k/v made contiguous (qkv_norm)
  // On `dev`, the device of the model's parameters, in the activation dtype `act`.
  void plan(int64_t B, int64_t T, int64_t D, int64_t hidden, bool qkv_norm, Device dev, DType act);
};

class Attention {
 public:
  Attention() = default;
  // qkv_init / proj_init: the projections' initialisers.
  Attention(ParamStore& store, const std::string& prefix, int64_t dim, int64_t heads, bool qkv_bias,
            ParamInit qkv_init, ParamInit proj_init, bool qkv_norm = false, float eps = 1e-6f);
  void plan(int64_t B, int64_t T);
  void forward(const Tensor& z, const Tensor& f, ModuleScratch& s);
  // dz OVERWRITTEN; parameter gradients accumulate.
  void backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s);
  // The tensors kept for the backward, in a fixed order (undefined: unused).
  std::vector<Tensor*> saved_tensors();
  // The weights of the q/k/v norms (attn.{q,k,v}_norm.weight), empty without qkv_norm.
  std::vector<ParamId> norm_weights() const {
    return qkv_norm_ ? std::vector<ParamId>{nw_[0], nw_[1], nw_[2]} : std::vector<ParamId>{};
  }

 private:
  Linear qkv_, proj_;
  int64_t dim_ = 0, heads_ = 0;
  bool qkv_norm_ = false;
  float eps_ = 1e-6f;
  ParamId nw_[3] = {0, 0, 0}, nb_[3] = {0, 0, 0};  // q_norm, k_norm, v_norm
  Tensor qkv_raw_, qn_mean_, qn_rstd_;             // qkv_norm only
  Tensor qkv_out_, saved_, a_;  // saved_: attention probs (CPU) or logsumexp (CUDA)
  ParamStore* store_ = nullptr;
};

class Mlp {
 public:
  Mlp() = default;
  Mlp(ParamStore& store, const std::string& prefix, int64_t dim, int64_t hidden, Activation act,
      ParamInit fc1_init, ParamInit fc2_init);
  void plan(int64_t B, int64_t T);
  void forward(const Tensor& z, const Tensor& f);
  void backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s);
  // The tensors kept for the backward, in a fixed order.
  std::vector<Tensor*> saved_tensors();

 private:
  Linear fc1_, fc2_;
  Activation act_ = Activation::GeluErf;
  int64_t hidden_ = 0;
  Tensor h1_, h2_;
  ParamStore* store_ = nullptr;
};

}  // namespace vt
