// One transformer block (attention sublayer, then MLP sublayer) for every
// norm scheme and both model variants (docs/design.md §3). Pre-Norm, Post-Norm
// and SiameseNorm share this one code path: each sublayer is
//   (1) siamese_input_forward  -> z        (norms switched on/off per scheme)
//   (2) F_k(z)                 -> f        (Attention or Mlp)
//   (3) siamese_residual       -> streams  (+ a LayerNorm after the add for Post-Norm)
// with streams x (Post-Norm stream) and y (Pre-Norm stream); Pre-Norm uses
// only y, Post-Norm only x.
//
// Saved per sublayer for backward: z (F's input), the norm statistics [3, R],
// F's own activations, f when a gate (DiT) needs it, the pre-norm sum r for
// Post-Norm, the drop-path scales. The stream values at the sublayer
// boundaries are saved by the Backbone (BlockIO slots).
#pragma once
#include <string>

#include "backbone/config.h"
#include "backbone/modules.h"
#include "kernels/siamese.h"

namespace vt {

// Stream tensors [B,T,D] at the block's three sublayer boundaries (in, mid,
// out); a stream the scheme does not use stays undefined.
struct BlockIO {
  Tensor x[3], y[3];
};

// Temporaries shared by all blocks of a backbone.
struct BlockScratch {
  ModuleScratch mod;
  Tensor u, f, dz, df, dr, gx_alt;  // [B,T,D]
  Tensor dmod;                      // [B,6D] (DiT)
  Tensor d_silu;                    // [B,D]  (DiT)
  void plan(const BackboneConfig& cfg, int64_t B, int64_t T);
};

class Block {
 public:
  Block(ParamStore& store, const BackboneConfig& cfg, int64_t index);
  void plan(int64_t B, int64_t T);

  // silu_c: SiLU(c) [B,D] for DiT (undefined for DeiT). drop-path masks are
  // drawn from (seed, philox_stream(step, index, sublayer)) when training.
  void forward(const BlockIO& io, const Tensor& silu_c, bool training, uint64_t seed, uint64_t step,
               BlockScratch& s);
  // On entry gx/gy hold the gradients w.r.t. io.x[2]/io.y[2]; on exit w.r.t.
  // io.x[0]/io.y[0] (gx may be swapped with s.gx_alt). d_silu_acc += the
  // gradient w.r.t. silu_c (DiT).
  void backward(const BlockIO& io, const Tensor& silu_c, Tensor& gx, const Tensor& gy,
                const Tensor& d_silu_acc, BlockScratch& s);

  int64_t saved_bytes() const;
  float depth_constant() const { return c_; }

 private:
  struct Norm {
    bool enabled = false;
    bool affine = false;
    ParamId w = 0, b = 0;
  };
  struct Sub {
    Norm post, pre, input, after;  // after: Post-Norm's norm_k after the add
    Tensor z, mean, rstd, f, r, r_mean, r_rstd, drop;
  };
  Norm add_norm(ParamStore& store, const std::string& name, bool enabled, bool affine);
  SiameseNorm norm_of(const Norm& n) const;
  SiameseInputSpec input_spec(int k, const BlockIO& io) const;
  void sub_forward(int k, const BlockIO& io, bool training, uint64_t seed, uint64_t step, BlockScratch& s);
  void sub_backward(int k, const BlockIO& io, Tensor& gx, const Tensor& gy, BlockScratch& s);
  Tensor mod_chunk(const Tensor& m, int i) const;

  BackboneConfig cfg_;
  ParamStore* store_;
  int64_t index_;
  float c_ = 1.0f;
  float drop_rate_ = 0.0f;
  Attention attn_;
  Mlp mlp_;
  Linear ada_;
  Sub sub_[2];
  Tensor mod_;  // adaLN output [B,6D] (DiT)
  int64_t B_ = 0, T_ = 0;
};

}  // namespace vt
