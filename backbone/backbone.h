// The shared transformer trunk of DeiT and DiT (docs/design.md §3): L Blocks and
// the scheme's final merge, with explicit forward and backward.
//
//   tokens h [B,T,D] (and DiT conditioning c [B,D]) -> out [B,T,D]
//   DeiT  pre, mixln, spannorm: norm(y)   hybrid: norm(x)   post, deepnorm: x
//         siamese: final_norm(pre_norm(x) + post_norm(y))   residual: x + dual_norm(y)
//   DiT   pre, mixln, hybrid: the stream   post, deepnorm: x   spannorm: y
//         siamese: postnorm(x) + prenorm(y)   residual: x + LN(y) (non-affine)
// Mix-LN's Post and Pre blocks share one stream (x and y alias).
// (DiT's final layer and DeiT's head live in the model code above.)
//
// State-dict names are those of the released PyTorch models (see
// tools/make_backbone_fixtures.py and tests/backbone): "blocks.{l}.*" and the
// top-level norms, registered in the ParamStore given to the constructor.
//
// Activations: plan(B, T) allocates everything the backward needs once per
// batch shape (stream values at every sublayer boundary, per-sublayer saved
// tensors); saved_activation_bytes() reports them, excluding temporaries.
// Activation checkpointing (`blocks`, as torch.utils.checkpoint around each
// block in the released SiameseNorm DiT) keeps only each block's input
// streams; the blocks' saved tensors and the mid-block stream slots are one
// set shared by all blocks, refilled by recomputing block l's forward (same
// seed and step, hence the same drop-path masks) just before its backward.
// Gradients are bitwise those without it (the same ops on the same inputs).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backbone/block.h"

namespace vt {

// train.activation_checkpointing: none | blocks.
enum class ActivationCheckpointing { None, Blocks };
const char* activation_checkpointing_name(ActivationCheckpointing m);
// "none" | "blocks"; anything else throws std::invalid_argument naming it.
ActivationCheckpointing activation_checkpointing_from_name(const std::string& name);

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
  // Data parallel: this process's row b is global sample offset + b * stride
  // of the step (rank r of W: offset r, stride W), so drop-path masks are
  // those of the one-process batch (kernels/drop_path.h). Default 0, 1.
  // Throws std::invalid_argument for offset < 0 or stride < 1.
  void set_sample_keys(int64_t offset, int64_t stride);
  // Where the drop-path keys take the step from: undefined (default) the
  // `step` argument of forward; else step[0] of this I64 [1] tensor on the
  // parameters' device, read where the masks are drawn, so a captured CUDA
  // Graph step draws each replay's own masks (train/step_graph.h). The same
  // masks either way.
  void set_step_source(const Tensor& step);
  // dout [B,T,D] -> dh [B,T,D] (OVERWRITTEN), dc [B,D] (OVERWRITTEN, DiT);
  // parameter gradients ACCUMULATE into the ParamStore. Uses the activations
  // of the last forward. Announces its gradient ranges as they become final
  // (ParamStore::grads_final): the final norms with the inactive blocks
  // first, then block l after its backward, from the last block down; they
  // tile the backbone's part of the flat buffer.
  void backward(const Tensor& dout, const Tensor& dh, const Tensor& dc);

  // Bytes of the distinct tensors kept from forward to backward (a tensor
  // shared by several blocks or streams counts once). With checkpointing,
  // per stream the L + 1 block boundaries and one mid-block slot, plus one
  // block's saved tensors, instead of 2L + 1 slots and L blocks' tensors.
  int64_t saved_activation_bytes() const;

  // Takes effect at the next forward (which replans the workspaces); a
  // backward must follow a forward made in the same mode.
  void set_activation_checkpointing(ActivationCheckpointing m);
  ActivationCheckpointing activation_checkpointing() const {
    return ckpt_ ? ActivationCheckpointing::Blocks : ActivationCheckpointing::None;
  }

  // Mechanism measurements (arXiv 2602.08064, Fig. 2 and the layer-pruning
  // study), read after a forward:
  //
  // Root mean square over all elements of the x and y streams at each active
  // block's output, from the last forward: x[l], y[l] for block l, NaN where
  // block l does not carry that stream (a Mix-LN block carries x if Post, y if
  // Pre; a SpanNorm block's y is the spanning path, its x the normalised b).
  // Throws std::logic_error before the first forward.
  struct StreamRms {
    std::vector<double> x, y;
  };
  StreamRms stream_rms() const;
  // Mean |weight| of every affine LayerNorm (state-dict name without
  // ".weight"), blocks first in order, then the final norms; the relative
  // size of a block's post/pre norms is the streams' relative contribution.
  std::vector<std::pair<std::string, double>> norm_scales() const;
  // Layer pruning: forward (and backward) run only blocks [0, n), then the
  // final merge and norms on their output, as if the last depth - n blocks
  // were removed (their parameters stay registered and untouched).
  // n in [0, depth], else std::invalid_argument; depth restores the model.
  void set_active_depth(int64_t n);
  int64_t active_depth() const { return active_; }

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
  bool final_x_ = false, final_y_ = false;  // streams the final merge reads
  bool alias_ = false;         // Mix-LN: x and y are one stream
  int64_t active_ = 0;         // blocks run (set_active_depth)
  std::vector<Tensor> xs_, ys_;  // stream values at the 2L+1 sublayer boundaries
  Tensor c_, silu_c_, d_silu_, fmean_, frstd_;
  Tensor gx_, gy_;
  BlockScratch scratch_;
  // The flat gradient buffer's ranges: block l owns [grad_marks_[l],
  // grad_marks_[l + 1]), the final norms [grad_marks_[depth], grad_end_).
  std::vector<int64_t> grad_marks_;
  int64_t grad_end_ = 0;
  int64_t B_ = 0, T_ = 0;
  Device planned_on_;  // the store's device when the workspaces were planned
  DType planned_act_ = DType::F32;  // and its activation dtype (backbone/workspace.h)
  bool has_forward_ = false;
  // Activation checkpointing: the mode, the one set of block saved tensors
  // (slot i of every Block::saved_tensors()), the last forward's arguments.
  bool ckpt_ = false, planned_ckpt_ = false;
  std::vector<Tensor> shared_saved_;
  bool fwd_training_ = false;
  uint64_t fwd_seed_ = 0, fwd_step_ = 0;

  FinalNorm add_final(const std::string& name, bool affine);
  SiameseInputSpec final_spec() const;
  BlockIO io(int64_t l) const;
  // Block l's forward with the last forward's arguments; under
  // checkpointing on the shared saved tensors (adopted before, and any the
  // block allocated itself added to the set after).
  void forward_block(int64_t l);
};

}  // namespace vt
