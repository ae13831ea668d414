// `veval fid --features CKPT`: a vtrain classifier's pre-logit features as
// the FID embedding instead of Inception-v3, for domains or machines without
// the Inception weights. The embedding of an image is the model's final
// normed class token [D] (VisionTransformer::forward_features: what the
// head sees), computed on the image after the classifier's own DeiT eval
// transform (docs/recipes.md §2 with the config's model.img_size, data.crop_pct,
// data.dct_scaling: shorter side to int(img_size / crop_pct) with PIL
// bicubic, center crop img_size, ImageNet mean/std normalisation). Images
// from a folder go through exactly the loader's path (JPEG DCT scaling
// included when on); uint8 arrays from an .npz take the same geometry on the
// decoded pixels. So samples already at img_size with crop_pct 1 (e.g.
// 32x32 CIFAR-like samples and the CIFAR configs) are used as they are.
//
// Scores are NOT comparable with published FIDs (or between different
// checkpoints): the feature space is the classifier's, not Inception's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data_pipeline/dataset.h"
#include "eval/classifier_checkpoint.h"
#include "eval/fid_inputs.h"

namespace vt {

class ClassifierEmbedding {
 public:
  // config_path "" = the run's config.yaml next to the checkpoint
  // (run_config_of_checkpoint); throws std::runtime_error saying so when
  // there is none. Other errors as load_classifier.
  static ClassifierEmbedding load(const std::string& ckpt, const std::string& config_path, bool ema = false,
                                  const std::vector<std::string>& configs_dirs = {"configs"});
  explicit ClassifierEmbedding(LoadedClassifier lc);

  int64_t feature_dim() const { return lc_.options.vit.backbone.dim; }
  int64_t image_size() const { return lc_.options.vit.img_size; }
  const ImagePipelineConfig& transform() const { return pipe_; }
  const LoadedClassifier& classifier() const { return lc_; }

  // Encoded image file -> out [3, S, S] (the loader's DeitEval path).
  void preprocess_file(const std::string& path, float* out) const;
  // uint8 RGB HWC pixels -> out [3, S, S], same geometry and filter.
  void preprocess_u8(const uint8_t* hwc, int64_t h, int64_t w, float* out) const;
  // Moves the classifier (built on the host) to `device`; features() then
  // runs there in fp32 (the caller keeps TF32 off: train/device_choice.h).
  void to(Device device);
  // images F32 [B, 3, S, S] (preprocessed) -> out F32 [B, D]; both on the
  // CPU or on the classifier's device (host images are uploaded).
  void features(const Tensor& images, const Tensor& out) const;

 private:
  LoadedClassifier lc_;
  ImagePipelineConfig pipe_;
};

// fid_source_stats with the classifier embedding: a folder (recursive,
// sorted) or an ADM .npz arr_0 is embedded in batches of `batch`; a
// statistics .npz is read as is (its dimension must then be D, checked by
// the caller as for Inception). Errors as fid_source_stats.
FidSourceStats embedding_source_stats(const std::string& path, const ClassifierEmbedding& emb, int64_t batch,
                                      void (*progress)(int64_t, int64_t) = nullptr);

}  // namespace vt
