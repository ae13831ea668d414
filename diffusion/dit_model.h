// DiT (Peebles & Xie, "Scalable Diffusion Models with Transformers", 2023;
// facebookresearch/DiT models.py) on the shared backbone, with explicit
// forward and backward:
//
//   x [B, C, H, W] --patchify p--> [B, N, C p p] --x_embedder.proj--> [B, N, D]
//        + pos_embed (frozen 2D sin-cos, [1, N, D])                    = h
//   t [B] (original timesteps, float) -> 256-d sinusoidal -> t_embedder.mlp.0
//        -> SiLU -> t_embedder.mlp.2                                   = t_emb [B, D]
//   y [B] (class ids, num_classes = the null class) -> y_embedder.embedding_table
//                                                                      = y_emb [B, D]
//   c = t_emb + y_emb;  Backbone(h, c) (adaLN-Zero, any norm scheme)   = o [B, N, D]
//   final_layer: (shift, scale) = final_layer.adaLN_modulation.1(SiLU(c));
//        modulate(LayerNorm(o) without affine, eps 1e-6) -> final_layer.linear
//        -> [B, N, p p C_out] --unpatchify--> out [B, C_out, H, W]
//   C_out = 2C with learned sigma ([eps ; v]), else C.
//
// State-dict names: the DiT repository's (pre-norm) and the released
// SiameseNorm DiT's (siamese: blocks.{l}.postnorm*/prenorm*, top-level
// postnorm/prenorm feeding final_layer), see docs/design.md §3. pos_embed is in
// the state dict (as in DiT, a requires_grad=False Parameter) but never
// receives a gradient and has no weight decay.
//
// Init (DiT initialize_weights): Linear Xavier-uniform with zero bias
// (patch conv on its [D, C p p] view), label table and t-MLP weights
// N(0, 0.02), every adaLN output Linear and final_layer.linear zero.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backbone/backbone.h"
#include "backbone/linear.h"
#include "backbone/param_store.h"

namespace vt {

struct DiTConfig {
  int64_t input_size = 32;   // H = W of the (latent) image
  int64_t in_channels = 4;
  int64_t patch = 2;
  int64_t hidden = 1152;
  int64_t depth = 28;
  int64_t heads = 16;
  double mlp_ratio = 4.0;
  int64_t num_classes = 1000;  // the null class id is num_classes
  double class_dropout = 0.1;  // DiT: the table has a null row when > 0
  bool learn_sigma = true;
  NormScheme scheme = NormScheme::Siamese;
  bool normalized_input = true;
  bool depth_scaling = true;
  double mixln_alpha = 0.25;  // mixln: fraction of leading Post-Norm blocks
  std::optional<double> spannorm_alpha;  // spannorm: span scale (unset: 1/sqrt(depth))

  int64_t out_channels() const { return learn_sigma ? 2 * in_channels : in_channels; }
  int64_t grid() const { return input_size / patch; }
  int64_t tokens() const { return grid() * grid(); }
  // Throws std::invalid_argument naming the field.
  void validate() const;
};

// "DiT-S/2", "DiT-B/4", "DiT-L/4", "DiT-XL/8", ...: depth/hidden/heads of
// DiT's presets (S 12/384/6, B 12/768/12, L 24/1024/16, XL 28/1152/16),
// patch 2, 4 or 8. Other fields of `base` are kept. Throws naming the name.
DiTConfig dit_preset(const std::string& name, DiTConfig base = {});

class DiT {
 public:
  // Registers every parameter in its own ParamStore and finalizes it (CPU),
  // as VisionTransformer does; pos_embed holds the sin-cos table, the other
  // weights are zero until init_weights() or load().
  explicit DiT(const DiTConfig& cfg);
  DiT(const DiT&) = delete;  // modules keep ids into store_
  DiT& operator=(const DiT&) = delete;
  const DiTConfig& config() const { return cfg_; }
  // Moves the parameters to `device` (after init_weights() or load(): both
  // write through host pointers); workspaces are planned there from then on.
  void to(Device device);
  Device device() const { return store_.device(); }
  ParamStore& params() { return store_; }
  const ParamStore& params() const { return store_; }
  // The trunk, for the mechanism measurements (Backbone::stream_rms,
  // norm_scales, set_active_depth).
  Backbone& backbone() { return *backbone_; }
  const Backbone& backbone() const { return *backbone_; }

  // DiT's initialize_weights through the store's initialisers, then the
  // frozen position table.
  void init_weights(uint64_t seed);
  // Loads a state dict strictly (ParamStore::load; std::runtime_error
  // listing every missing, unexpected or mis-shaped tensor), then rewrites
  // the frozen position table.
  void load(const std::map<std::string, Tensor>& state_dict);
  // Rewrites the 2D sin-cos table into pos_embed: only needed after writing
  // params().weights() directly (init_weights and load call it).
  void set_pos_embed();

  // x [B, C, H, W] F32, t [B] F32 (original timesteps), y [B] I32 in
  // [0, num_classes] -> out [B, C_out, H, W]. Saves what backward needs.
  void forward(const Tensor& x, const Tensor& t, const Tensor& y, const Tensor& out);
  // dout [B, C_out, H, W]; parameter gradients ACCUMULATE into the store.
  // Input gradients are not produced (DiT never needs them). Announces the
  // gradient ranges as they become final (ParamStore::grads_final): the
  // final layer's, the backbone's (backbone.h), then the embedders' and the
  // frozen pos_embed's at the end.
  void backward(const Tensor& dout);

  int64_t num_params() const;  // excluding the frozen pos_embed

 private:
  void plan(int64_t B);
  DiTConfig cfg_;
  ParamStore store_;
  std::unique_ptr<Backbone> backbone_;
  ParamId xw_ = 0, xb_ = 0, pos_ = 0, ytab_ = 0;
  // The flat gradient buffer: embedders and pos_embed [0, trunk_begin_),
  // backbone [trunk_begin_, final_begin_), final layer [final_begin_, numel).
  int64_t trunk_begin_ = 0, final_begin_ = 0;
  Linear t0_, t2_, final_ada_, final_lin_;
  int64_t B_ = 0;
  // Saved activations (forward) and gradient scratch (backward).
  Tensor patches_, h_, t_freq_, t_h1_, t_h2_, y_ids_, yemb_, c_, silu_c_, ada_, o_, ln_mean_, ln_rstd_, ln_, mod_, tok_;
  Tensor dtok_, dmod_, do_, dada_, dsilu_, dc_, dc_bb_, dh_, dt_h2_, dt_h1_;
};

// DiT LabelEmbedder.token_drop: each label becomes the null class
// (num_classes) with probability p. The draws of a step are one Philox
// stream (seed, (purpose, step)) over the GLOBAL batch of labels.numel() *
// world rows; row j of this rank's labels is global row j * world + rank
// (the DistributedSampler interleave), so a sample's draw does not depend
// on the world size. rank 0 of world 1 is the one-process batch.
// Throws std::invalid_argument for non-I32/non-contiguous labels or a rank
// outside [0, world).
void drop_labels(Tensor& labels, double p, int64_t num_classes, uint64_t seed, uint64_t step, int rank = 0,
                 int world = 1);

}  // namespace vt
