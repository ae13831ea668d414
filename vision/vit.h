// DeiT / ViT image classifier (timm 0.3.2 VisionTransformer as used by DeiT,
// and the released SiameseNorm DeiT, Qwen-Applications/SiameseNorm
// deit-model-siamesenorm.py) with explicit forward and backward:
//
//   image [B, C, H, W] -> patchify + Linear (the Conv2d(k = s = p) as a GEMM)
//   -> [B, N, D] -> prepend cls_token -> + pos_embed -> Backbone (any norm
//   scheme, docs/design.md §3) -> class token row [B, D] -> head Linear -> logits [B, K]
//
// State-dict names (docs/design.md §3): patch_embed.proj.weight [D, C, p, p] and
// .bias [D] (timm's Conv2d layout), cls_token [1, 1, D], pos_embed
// [1, N + 1, D], blocks.{l}.* and the scheme's top-level norms (owned by the
// Backbone), head.weight [K, D], head.bias [K]. A Pre-Norm model therefore
// loads into timm's VisionTransformer (strict) and a siamese one into the
// released SiameseNorm DeiT.
//
// Initialisation (timm 0.3.2 VisionTransformer): trunc_normal(0.02) for every
// Linear weight, pos_embed and cls_token; zero Linear biases; LayerNorm 1/0;
// the patch Conv2d keeps PyTorch's default Conv2d init (kaiming_uniform with
// a = sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias, fan_in
// = C p p), because timm's _init_weights only touches Linear and LayerNorm.
//
// Weight decay (DeiT's optimizer factory): off for 1-D parameters (biases,
// norm weights) and for pos_embed and cls_token.
#pragma once
#include <memory>
#include <string>

#include "backbone/backbone.h"
#include "backbone/linear.h"
#include "backbone/param_store.h"

namespace vt {

struct VitConfig {
  int64_t img_size = 224;
  int64_t patch_size = 16;
  int64_t in_chans = 3;
  int64_t num_classes = 1000;
  BackboneConfig backbone;  // variant DeiT; dim/depth/heads/scheme/drop_path here

  int64_t grid() const { return img_size / patch_size; }
  int64_t num_patches() const { return grid() * grid(); }
  int64_t tokens() const { return num_patches() + 1; }
  // Throws std::invalid_argument naming the field (image not a multiple of
  // the patch, non-positive sizes, or an invalid backbone).
  void validate() const;
};

// Presets as timm's deit_{tiny,small,base}_patch16_224: patch 16, MLP ratio
// 4, qkv bias; dim/depth/heads 192/12/3, 384/12/6, 768/12/12. drop_path_rate
// sets the per-block linspace(0, rate, depth). Throws std::invalid_argument
// for another name.
VitConfig vit_preset(const std::string& name, NormScheme scheme = NormScheme::Siamese,
                     float drop_path_rate = 0.1f, int64_t num_classes = 1000);

class VisionTransformer {
 public:
  // Registers every parameter in its own ParamStore and finalizes it (CPU).
  explicit VisionTransformer(const VitConfig& cfg);

  const VitConfig& config() const { return cfg_; }
  // Moves the parameters to `device` (after init() or a load: both write
  // through host pointers) and plans the workspaces there from then on.
  void to(Device device);
  Device device() const { return store_.device(); }
  ParamStore& params() { return store_; }
  const ParamStore& params() const { return store_; }
  // The trunk, for the mechanism measurements (Backbone::stream_rms,
  // norm_scales, set_active_depth).
  Backbone& backbone() { return *backbone_; }
  const Backbone& backbone() const { return *backbone_; }

  // DeiT initialisation (see above), keyed by seed.
  void init(uint64_t seed);

  // images F32 [B, C, H, W] (contiguous, CPU) -> logits F32 [B, K].
  // training enables drop-path with masks keyed by (seed, step).
  void forward(const Tensor& images, const Tensor& logits, bool training = false, uint64_t seed = 0,
               uint64_t step = 0);
  // images as forward -> the pre-logit features F32 [B, D]: the class-token
  // row of the backbone output (after the scheme's final norm), i.e. what the
  // head sees; eval mode (no drop-path). Used as an embedding (veval fid
  // --features). Throws std::invalid_argument for wrong shapes.
  void forward_features(const Tensor& images, const Tensor& features);
  // dlogits [B, K] of the last forward; parameter gradients ACCUMULATE.
  // Announces the gradient ranges as they become final (ParamStore::
  // grads_final): the head's, the backbone's (backbone.h), then the
  // embeddings' (patch_embed, cls_token, pos_embed) at the end.
  void backward(const Tensor& dlogits);

 private:
  void plan(int64_t B);
  void check_images(const Tensor& images, const char* who) const;
  // Patch embedding -> backbone -> cls_out_ [B, D] (images already checked).
  void forward_trunk(const Tensor& images, bool training, uint64_t seed, uint64_t step);
  VitConfig cfg_;
  ParamStore store_;
  std::unique_ptr<Backbone> backbone_;
  Linear head_;
  ParamId patch_w_ = 0, patch_b_ = 0, cls_ = 0, pos_ = 0;
  // The flat gradient buffer: embeddings [0, trunk_begin_), backbone
  // [trunk_begin_, head_begin_), head [head_begin_, numel).
  int64_t trunk_begin_ = 0, head_begin_ = 0;
  // Workspace, reallocated only when the batch size changes.
  int64_t B_ = 0;
  Tensor patches_, tok_, h_, out_, cls_out_, dcls_out_, dout_, dh_, dtok_;
};

}  // namespace vt
