#include "vision/vit.h"

#include <cmath>
#include <stdexcept>

#include "core/philox.h"
#include "kernels/matmul.h"
#include "kernels/patch.h"

namespace vt {

void VitConfig::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("VitConfig: " + what); };
  if (img_size <= 0) bad("model.img_size must be positive, got " + std::to_string(img_size));
  if (patch_size <= 0) bad("model.patch_size must be positive, got " + std::to_string(patch_size));
  if (img_size % patch_size != 0)
    bad("model.img_size " + std::to_string(img_size) + " is not a multiple of model.patch_size " +
        std::to_string(patch_size));
  if (in_chans <= 0) bad("model.in_chans must be positive, got " + std::to_string(in_chans));
  if (num_classes <= 0) bad("model.num_classes must be positive, got " + std::to_string(num_classes));
  if (backbone.variant != ModelVariant::DeiT) bad("the backbone variant must be DeiT");
  backbone.validate();
}

VitConfig vit_preset(const std::string& name, NormScheme scheme, float drop_path_rate, int64_t num_classes) {
  VitConfig c;
  c.num_classes = num_classes;
  c.backbone.scheme = scheme;
  if (name == "deit_tiny") c.backbone.dim = 192, c.backbone.heads = 3;
  else if (name == "deit_small") c.backbone.dim = 384, c.backbone.heads = 6;
  else if (name == "deit_base") c.backbone.dim = 768, c.backbone.heads = 12;
  else throw std::invalid_argument("model.preset: unknown preset '" + name + "' (deit_tiny | deit_small | deit_base)");
  c.backbone.depth = 12;
  c.backbone.drop_path = drop_path_linspace(drop_path_rate, c.backbone.depth);
  return c;
}

VisionTransformer::VisionTransformer(const VitConfig& cfg) : cfg_(cfg) {
  cfg_.backbone.variant = ModelVariant::DeiT;
  cfg_.validate();
  const int64_t D = cfg_.backbone.dim, C = cfg_.in_chans, p = cfg_.patch_size;
  patch_w_ = store_.add("patch_embed.proj.weight", {D, C, p, p}, ParamInit::zeros(), true);
  patch_b_ = store_.add("patch_embed.proj.bias", {D}, ParamInit::zeros(), false);
  cls_ = store_.add("cls_token", {1, 1, D}, ParamInit::trunc_normal(0.02f), false);
  pos_ = store_.add("pos_embed", {1, cfg_.tokens(), D}, ParamInit::trunc_normal(0.02f), false);
  trunk_begin_ = store_.numel();
  backbone_ = std::make_unique<Backbone>(store_, cfg_.backbone);
  head_begin_ = store_.numel();
  head_ = Linear(store_, "head", D, cfg_.num_classes, true, ParamInit::trunc_normal(0.02f));
  store_.finalize();
}

void VisionTransformer::init(uint64_t seed) {
  store_.init(seed);
  // PyTorch's default Conv2d init, which timm 0.3.2 leaves in place.
  const int64_t D = cfg_.backbone.dim;
  const int64_t fan_in = cfg_.in_chans * cfg_.patch_size * cfg_.patch_size;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  Philox g(seed, philox_stream(0x7A7C4E3B, 1));
  float* w = store_.value(patch_w_).f32();
  for (int64_t i = 0; i < D * fan_in; ++i) w[i] = static_cast<float>(g.uniform(-bound, bound));
  float* b = store_.value(patch_b_).f32();
  for (int64_t i = 0; i < D; ++i) b[i] = static_cast<float>(g.uniform(-bound, bound));
}

void VisionTransformer::to(Device device) {
  store_.to(device);
  B_ = 0;  // the next forward plans on the new device
}

void VisionTransformer::plan(int64_t B) {
  if (B == B_) return;
  B_ = B;
  const Device dev = store_.device();
  const int64_t D = cfg_.backbone.dim, N = cfg_.num_patches(), T = cfg_.tokens();
  const int64_t F = cfg_.in_chans * cfg_.patch_size * cfg_.patch_size;
  patches_ = Tensor::empty({B, N, F}, DType::F32, dev);
  tok_ = Tensor::empty({B, N, D}, DType::F32, dev);
  h_ = Tensor::empty({B, T, D}, DType::F32, dev);
  out_ = Tensor::empty({B, T, D}, DType::F32, dev);
  cls_out_ = Tensor::empty({B, D}, DType::F32, dev);
  dcls_out_ = Tensor::empty({B, D}, DType::F32, dev);
  dout_ = Tensor::zeros({B, T, D}, DType::F32, dev);
  dh_ = Tensor::empty({B, T, D}, DType::F32, dev);
  dtok_ = Tensor::empty({B, N, D}, DType::F32, dev);
}

void VisionTransformer::check_images(const Tensor& images, const char* who) const {
  const Shape want{images.defined() && images.dim() == 4 ? images.shape()[0] : -1, cfg_.in_chans, cfg_.img_size,
                   cfg_.img_size};
  if (!images.defined() || images.shape() != want || images.dtype() != DType::F32)
    throw std::invalid_argument(std::string("VisionTransformer::") + who + ": images must be F32 [B, " +
                                std::to_string(cfg_.in_chans) + ", " + std::to_string(cfg_.img_size) + ", " +
                                std::to_string(cfg_.img_size) + "], got " +
                                (images.defined() ? shape_str(images.shape()) : std::string("undefined")));
}

void VisionTransformer::forward_trunk(const Tensor& images, bool training, uint64_t seed, uint64_t step) {
  plan(images.shape()[0]);
  const int64_t D = cfg_.backbone.dim, F = cfg_.in_chans * cfg_.patch_size * cfg_.patch_size;
  patchify(images, cfg_.patch_size, patches_);
  linear_forward(patches_, store_.value(patch_w_).view({D, F}), store_.value(patch_b_), tok_);
  cls_concat(tok_, store_.value(cls_), h_);
  pos_embed_add(h_, store_.value(pos_), h_);
  backbone_->forward(h_, Tensor(), out_, training, seed, step);
  cls_select(out_, cls_out_);
}

void VisionTransformer::forward(const Tensor& images, const Tensor& logits, bool training, uint64_t seed,
                                uint64_t step) {
  check_images(images, "forward");
  const int64_t B = images.shape()[0];
  if (!logits.defined() || logits.shape() != Shape{B, cfg_.num_classes})
    throw std::invalid_argument("VisionTransformer::forward: logits must be [" + std::to_string(B) + ", " +
                                std::to_string(cfg_.num_classes) + "]");
  forward_trunk(images, training, seed, step);
  head_.forward(cls_out_, logits);
}

void VisionTransformer::forward_features(const Tensor& images, const Tensor& features) {
  check_images(images, "forward_features");
  const Shape want{images.shape()[0], cfg_.backbone.dim};
  if (!features.defined() || features.shape() != want || features.dtype() != DType::F32)
    throw std::invalid_argument("VisionTransformer::forward_features: features must be F32 " + shape_str(want) +
                                ", got " + (features.defined() ? shape_str(features.shape()) : std::string("undefined")));
  forward_trunk(images, false, 0, 0);
  Tensor dst = features;  // a handle on the caller's storage
  dst.copy_from(cls_out_);
}

void VisionTransformer::backward(const Tensor& dlogits) {
  if (B_ == 0) throw std::logic_error("VisionTransformer::backward: no forward to differentiate");
  if (!dlogits.defined() || dlogits.shape() != Shape{B_, cfg_.num_classes})
    throw std::invalid_argument("VisionTransformer::backward: dlogits must be [" + std::to_string(B_) + ", " +
                                std::to_string(cfg_.num_classes) + "]");
  const int64_t D = cfg_.backbone.dim, F = cfg_.in_chans * cfg_.patch_size * cfg_.patch_size;
  head_.backward(dlogits, cls_out_, dcls_out_);
  store_.grads_final(head_begin_, store_.numel() - head_begin_);
  // Only the class token reaches the head; the other rows of dout are zero.
  cls_select_backward(dcls_out_, dout_);
  backbone_->backward(dout_, dh_, Tensor());
  pos_embed_add_backward(dh_, store_.grad(pos_));
  cls_concat_backward(dh_, dtok_, store_.grad(cls_));
  linear_backward(dtok_, patches_, store_.value(patch_w_).view({D, F}), Tensor(),
                  store_.grad(patch_w_).view({D, F}), store_.grad(patch_b_));
  store_.grads_final(0, trunk_begin_);
}

}  // namespace vt
