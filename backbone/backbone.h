// The shared transformer trunk of DeiT and DiT (docs/design.md §3): L Blocks and
// the scheme's final merge, with explicit forward and backward.
//
//   tokens h [B,T,D] (and DiT conditioning c [B,D]) -> out [B,T,D]
//   DeiT  pre: norm(y)   post: x   siamese: final_norm(pre_norm(x) + post_norm(y))
//   DiT   pre: y         post: x   siamese: postnorm(x) + prenorm(y)
// (DiT's final layer and DeiT's head live in the model code above.)
//
// State-dict names are those of the released PyTorch models (see
// tools/make_backbone_fixtures.py and tests/backbone): "blocks.{l}.*" and the
// top-level norms, registered in the ParamStore given to the constructor.
//
// Activations: plan(B, T) allocates everything the backward needs once per
// batch shape (stream values at every sublayer boundary, per-sublayer saved
// tensors); saved_activation_bytes() reports them, excluding temporaries.
#pragma once
#include <memory>
#include <vector>

#include "backbone/block.h"

namespace vt {

class Backbone {
 public:
  // Registers all parameters in store (call store.finalize() afterwards).
  Backbone(ParamStore& store, const BackboneConfig& cfg);

  const BackboneConfig& config() const { return cfg_; }
  void plan(int64_t B, int64_t T);

  // h [B,T,D] F32; c [B,D] for DiT (must be undefined for DeiT); out [B,T,D].
  // Plans automatically on a new batch shape. training enables drop-path,
  // whose masks are keyed by (seed, step, block, sublayer).
  void forward(const Tensor& h, const Tensor& c, const Tensor& out, bool training = false, uint64_t seed = 0,
               uint64_t step = 0);
  // dout [B,T,D] -> dh [B,T,D] (OVERWRITTEN), dc [B,D] (OVERWRITTEN, DiT);
  // parameter gradients ACCUMULATE into the ParamStore. Uses the activations
  // of the last forward.
  void backward(const Tensor& dout, const Tensor& dh, const Tensor& dc);

  int64_t saved_activation_bytes() const;

 private:
  BackboneConfig cfg_;
  ParamStore* store_;
  std::vector<std::unique_ptr<Block>> blocks_;
  // Final merge norms: (post-slot, pre-slot, input-slot) of the input kernel.
  struct FinalNorm {
    bool enabled = false, affine = false;
    ParamId w = 0, b = 0;
  };
  FinalNorm fx_, fy_, fin_;
  bool final_kernel_ = false;  // merge through siamese_input (else a copy)
  std::vector<Tensor> xs_, ys_;  // stream values at the 2L+1 sublayer boundaries
  Tensor c_, silu_c_, d_silu_, fmean_, frstd_;
  Tensor gx_, gy_;
  BlockScratch scratch_;
  int64_t B_ = 0, T_ = 0;
  bool has_forward_ = false;

  FinalNorm add_final(const std::string& name, bool affine);
  SiameseInputSpec final_spec() const;
  BlockIO io(int64_t l) const;
};

}  // namespace vt
