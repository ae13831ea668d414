// One transformer block (attention sublayer, then MLP sublayer) for every
// norm scheme and both model variants (docs/design.md §3; the schemes' formulas
// and papers are listed at NormScheme in backbone/config.h). All schemes
// share this one code path: each sublayer is
//   (1) siamese_input_forward  -> z        (norms switched on/off per scheme)
//   (2) F_k(z)                 -> f        (Attention or Mlp)
//   (3) siamese_residual       -> streams  (+ a LayerNorm after the add for Post-Norm)
// where sublayer 0's (3) and sublayer 1's (1) run as one pass over the rows
// (siamese_residual_input_forward) unless a norm after the add or SpanNorm's
// chain sits between them. The block boundary (sublayer 1's residual and the
// next block's sublayer 0 input) is not fused: the next block's input needs
// its own adaLN modulation first, and activation checkpointing recomputes
// each block's forward on its own.
// with streams x (Post-Norm stream) and y (Pre-Norm stream); Pre-Norm uses
// only y, Post-Norm only x. What each scheme switches on is one Route per
// sublayer (see Block::Route). SpanNorm runs two Post-Norm sublayers whose
// chain starts from y (sublayer 0 reads y[0] where the others read x[0]),
// leaves b in x[2], then adds the spanning branch y[2] = y[0] + alpha * b
// through the same residual kernel (u = y[0], f = b, 1/c = alpha).
//
// Saved per sublayer for backward: z (F's input), the norm statistics [3, R],
// F's own activations, f when a gate (DiT) needs it, the pre-norm sum r for
// Post-Norm, the drop-path scales. The stream values at the sublayer
// boundaries are saved by the Backbone (BlockIO slots).
//
// dtypes: the streams, u, r, the statistics, the adaLN output and the
// gradients into the streams are F32; z, f and df (F's input, output and
// output gradient) are in activation_dtype(store), BF16 under precision
// bf16: the input kernel normalises in fp32 and writes z in bf16, the
// residual kernel reads a bf16 f and adds it to the fp32 streams in fp32.
#pragma once
#include <string>
#include <utility>
#include <vector>

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
  Tensor u, f, dz, df, dr, gx_alt;  // [B,T,D]; f, df in the activation dtype
  Tensor dmod;                      // [B,6D] (DiT)
  Tensor d_silu;                    // [B,D]  (DiT)
  // On the parameters' device; f, df and the module scratch in `act`.
  void plan(const BackboneConfig& cfg, int64_t B, int64_t T, Device dev, DType act);
};

class Block {
 public:
  Block(ParamStore& store, const BackboneConfig& cfg, int64_t index);
  void plan(int64_t B, int64_t T);

  // silu_c: SiLU(c) [B,D] for DiT (undefined for DeiT). drop-path masks are
  // drawn from (seed, philox_stream(step, index, sublayer)) when training.
  void forward(const BlockIO& io, const Tensor& silu_c, bool training, uint64_t seed, uint64_t step,
               BlockScratch& s);
  // Where this batch's rows sit in the global batch for the drop-path keys
  // (kernels/drop_path.h): row b is global sample offset + b * stride.
  void set_sample_keys(int64_t offset, int64_t stride) { sample_offset_ = offset, sample_stride_ = stride; }
  // Backbone::set_step_source.
  void set_step_source(const Tensor& step) { step_source_ = step; }
  // On entry gx/gy hold the gradients w.r.t. io.x[2]/io.y[2]; on exit w.r.t.
  // io.x[0]/io.y[0] (gx may be swapped with s.gx_alt). d_silu_acc += the
  // gradient w.r.t. silu_c (DiT).
  void backward(const BlockIO& io, const Tensor& silu_c, Tensor& gx, const Tensor& gy,
                const Tensor& d_silu_acc, BlockScratch& s);

  // Every tensor kept from forward to backward (the block's, its Attention's,
  // Mlp's and Linears'), always the same slots in the same order; undefined
  // where unused. The Backbone counts them, and under activation
  // checkpointing points slot i of every block at one shared tensor.
  std::vector<Tensor*> saved_tensors();
  float depth_constant() const { return c_; }
  // The block's own scheme (Pre or Post for a Mix-LN block, else the config's).
  NormScheme scheme() const { return scheme_; }
  // Whether the block reads or writes the x / y stream.
  bool uses_x() const { return sub_[0].in_x || sub_[0].out_x || sub_[1].in_x || sub_[1].out_x; }
  bool uses_y() const { return span_ || sub_[0].in_y || sub_[0].out_y || sub_[1].in_y || sub_[1].out_y; }
  // Mean |weight| of every affine LayerNorm of the block, by state-dict name
  // (without ".weight"), in registration order: the block norms, then
  // HybridNorm's attn.{q,k,v}_norm. DiT's block norms have no weights.
  std::vector<std::pair<std::string, double>> norm_scales() const;

 private:
  struct Norm {
    bool enabled = false;
    bool affine = false;
    ParamId w = 0, b = 0;
    std::string name;
  };
  struct Sub {
    Norm post, pre, input, after;  // after: Post-Norm's norm_k after the add
    // Which streams the input kernel reads and the residual writes; the x
    // residual's base is u = post(x) (x itself when post is off).
    bool in_x = false, in_y = false, out_x = false, out_y = false;
    Tensor z, mean, rstd, f, r, r_mean, r_rstd, drop;  // z, f in the activation dtype
  };
  Norm add_norm(ParamStore& store, const std::string& name, bool enabled, bool affine);
  SiameseNorm norm_of(const Norm& n) const;
  SiameseNorm norm_grad(const Norm& n, bool bias) const;
  SiameseInputSpec input_spec(int k, const BlockIO& io) const;
  // The x-side input of sublayer k: io.x[k], except y[0] for SpanNorm's first.
  const Tensor& x_in(int k, const BlockIO& io) const { return span_ && k == 0 ? io.y[0] : io.x[k]; }
  // Whether sublayer k's output is gated (DiT; SpanNorm's gate_mlp gates the span instead).
  bool sub_gated(int k) const { return cfg_.conditioned() && !(span_ && k == 1); }
  // SpanNorm's spanning residual y[2] = y[0] + drop(gate_mlp * alpha * x[2]).
  SiameseResidualSpec span_spec(const BlockIO& io) const;
  // input_done: sublayer k's input map already ran (fused into k - 1's
  // residual); fuse_next: run the residual fused with sublayer k + 1's input.
  void sub_forward(int k, const BlockIO& io, bool training, uint64_t seed, uint64_t step, BlockScratch& s,
                   bool input_done, bool fuse_next);
  // Whether sublayer 0's residual and sublayer 1's input map fuse (Siamese,
  // Pre-Norm, HybridNorm: no norm after the add, no span in between).
  bool fuses_residual_input() const;
  void sub_backward(int k, const BlockIO& io, Tensor& gx, const Tensor& gy, BlockScratch& s);
  Tensor mod_chunk(const Tensor& m, int i) const;

  BackboneConfig cfg_;
  NormScheme scheme_;
  ParamStore* store_;
  int64_t index_;
  float c_ = 1.0f;       // the x residual adds o / c_ (SiameseNorm's c_l, DeepNet's alpha)
  float after_eps_;      // eps of the norm after the add (DeepNorm: eps / alpha^2)
  float drop_rate_ = 0.0f;  // SpanNorm: on the spanning branch (mask in sub_[0].drop), else per sublayer
  bool span_ = false;       // SpanNorm
  float span_alpha_ = 1.0f;
  int64_t sample_offset_ = 0, sample_stride_ = 1;  // see set_sample_keys
  Tensor step_source_;  // see Backbone::set_step_source
  // Sublayer k's drop-path mask into `scales`, keyed by the step.
  void draw_drop(int k, uint64_t seed, uint64_t step, const Tensor& scales) const;
  Attention attn_;
  Mlp mlp_;
  Linear ada_;
  Sub sub_[2];
  Tensor mod_;  // adaLN output [B,6D] (DiT)
  int64_t B_ = 0, T_ = 0;
};

}  // namespace vt
