// Datasets the loader reads: an index -> (float sample, label) mapping whose
// randomness comes from a Philox the loader keys by (seed, epoch, draw id).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "data_pipeline/augment_plan.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/randaugment.h"
#include "data_pipeline/transforms.h"

namespace vt {

// One sample of a data.decode_on=device batch (Dataset::load_encoded).
struct EncodedSample {
  const uint8_t* data = nullptr;  // the JPEG's bytes; null: the crop was made on the host
  size_t size = 0;
  std::vector<uint8_t> owned;  // the bytes, when the dataset does not keep them (data points here)
  std::string name;            // the file (Dataset::name), for the decoder's errors
  CropBox box;                 // RandomResizedCrop's box in the full-size image's pixels

  EncodedSample() = default;
  // A copy's `data` points into its own `owned` when the original's did
  // (moves keep the buffer, and so the pointer).
  EncodedSample(const EncodedSample& o) : data(o.data), size(o.size), owned(o.owned), name(o.name), box(o.box) {
    if (o.data && o.data == o.owned.data()) data = owned.data();
  }
  EncodedSample& operator=(const EncodedSample& o) {
    if (this != &o) *this = EncodedSample(o);
    return *this;
  }
  EncodedSample(EncodedSample&&) = default;
  EncodedSample& operator=(EncodedSample&&) = default;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Shape sample_shape() const = 0;  // [C, H, W]
  virtual int32_t label(int64_t i) const = 0;
  virtual int num_classes() const = 0;
  virtual std::string name(int64_t i) const = 0;  // file (or shard:row) for messages
  // Writes sample i (numel(sample_shape()) floats, CHW) to `out`. Throws
  // CorruptImage (decode.h) for a file that cannot be decoded, other
  // exceptions for I/O errors.
  virtual void load(int64_t i, Philox& rng, float* out) const = 0;
  // data.augment_on=device: sample i up to its augmentation (DeitTrain:
  // RandomResizedCrop) as uint8 HWC [H, W, 3] in `hwc` (numel(sample_shape())
  // bytes), and the plan of the rest (augment_plan.h), from the same rng
  // draws as load(), so apply_augment_plan(hwc, plan) is load()'s output
  // bit for bit. Datasets without such a split say so (std::logic_error).
  virtual bool has_augment_plans() const { return false; }
  virtual void load_planned(int64_t i, Philox& rng, uint8_t* hwc, AugmentPlan* plan) const;
  // data.decode_on=device: load_planned without decoding a JPEG. A JPEG's
  // bytes and RandomResizedCrop box (drawn from the header's size) go to
  // `enc`, for the consumer to decode and crop (data_pipeline/device);
  // any other format is decoded and cropped here into `hwc` as load_planned
  // does (enc->data stays null). `plan` as load_planned's. Same draws as
  // load_planned, so a device decode that gives the host decoder's pixels
  // gives load_planned's crop (with data.dct_scaling off: the device
  // decodes at full size). Header errors: CorruptImage naming the file.
  virtual void load_encoded(int64_t i, Philox& rng, EncodedSample* enc, uint8_t* hwc, AugmentPlan* plan) const;
  // The loader announces a batch's samples before loading them, so a dataset
  // can ask the OS to read their bytes in one go (packed shards:
  // madvise(MADV_WILLNEED)); default: nothing.
  virtual void will_need(const int64_t* indices, int64_t n) const {
    (void)indices;
    (void)n;
  }
};

enum class ImagePipeline {
  DeitTrain,  // RRC + flip + RandAugment + Normalize + RandomErasing (docs/recipes.md §2)
  DeitEval,   // resize shorter side to int(size/crop_pct) + center crop + Normalize
  Adm,        // DiT: ADM center crop + flip, mapped to [-1, 1] (docs/recipes.md §8)
};

struct ImagePipelineConfig {
  ImagePipeline kind = ImagePipeline::DeitTrain;
  int size = 224;
  double crop_pct = 0.875;  // eval: resize to int(size / crop_pct)
  bool hflip = true;
  bool rand_augment = true;
  bool random_erasing = true;
  // JPEG DCT-domain downscaling by 1/2, 1/4 or 1/8 when the crop needs at
  // most that many pixels (libjpeg-turbo's SIMD scales; the other eighths
  // decode slower than full size); off = decode at full size as PIL does.
  bool dct_scaling = true;
  // DeitTrain: decode the whole JPEG, or only RandomResizedCrop's box
  // (crop_decode.h; the same pixels, less work).
  DecodeMode decode = DecodeMode::Full;
  RrcParams rrc;
  RandAugmentParams randaug;
  ErasingParams erasing;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f}, std{0.229f, 0.224f, 0.225f};
};

// Runs the configured pipeline on one encoded image (JPEG, PNG, ...) and
// writes [3, size, size] floats. `name` is used in error messages.
// DeitTrain: process_image_planned, then apply_augment_plan.
void process_image(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                   Philox& rng, float* out);

// process_image_planned's draws for Dataset::load_encoded: a JPEG's box
// from its header (true; `hwc` untouched), any other format through
// process_image_planned into `hwc` (false). Then plan_augment.
bool process_image_encoded(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                           Philox& rng, CropBox* box, uint8_t* hwc, AugmentPlan* plan);

// The augmentation settings of a DeitTrain pipeline (augment_plan.h).
AugmentSettings augment_settings(const ImagePipelineConfig& cfg);

// DeitTrain only (else std::invalid_argument): decode and RandomResizedCrop
// into hwc uint8 [size, size, 3], then plan_augment, from `rng` as
// process_image draws.
void process_image_planned(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                           Philox& rng, uint8_t* hwc, AugmentPlan* plan);

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(const std::string& root, ImagePipelineConfig cfg);
  int64_t size() const override { return folder_.size(); }
  Shape sample_shape() const override { return {3, cfg_.size, cfg_.size}; }
  int32_t label(int64_t i) const override;
  int num_classes() const override { return folder_.num_classes(); }
  std::string name(int64_t i) const override;
  void load(int64_t i, Philox& rng, float* out) const override;
  bool has_augment_plans() const override { return cfg_.kind == ImagePipeline::DeitTrain; }
  void load_planned(int64_t i, Philox& rng, uint8_t* hwc, AugmentPlan* plan) const override;
  void load_encoded(int64_t i, Philox& rng, EncodedSample* enc, uint8_t* hwc, AugmentPlan* plan) const override;
  const ImageFolder& folder() const { return folder_; }
  const ImagePipelineConfig& config() const { return cfg_; }

 private:
  ImageFolder folder_;
  ImagePipelineConfig cfg_;
};

// DiT latent shards: every *.safetensors file of a directory (sorted by
// name) holding `labels` [N] (I64 or I32) and either
//   `latents`   [N, C, H, W] (F32 or BF16): fixed latents (a pre-drawn
//               posterior sample, as fast-DiT), returned as stored; or
//   `posterior` [N, 2C, H, W] (F32 or BF16): the VAE posterior's mean
//               (channels [0, C)) and log-variance ([C, 2C)), as `dittrain
//               extract` writes them; every load draws a fresh sample
//               z = mean + exp(logvar / 2) * eps, eps ~ N(0, 1) from the
//               load's Philox (keyed by seed, epoch and draw id), as DiT's
//               train.py samples the posterior at every step.
// All shards must be of one kind. Shards are read into memory at
// construction in their stored dtype. Samples are optionally flipped along W
// with probability 0.5. Errors name the shard and tensor: missing tensors,
// wrong ranks/dtypes, N mismatch, an odd posterior channel count, differing
// [C, H, W] or kinds between shards, an empty directory.
class LatentShardDataset : public Dataset {
 public:
  explicit LatentShardDataset(const std::string& dir, bool hflip = false, int num_classes = 1000);
  int64_t size() const override { return total_; }
  Shape sample_shape() const override { return chw_; }
  int32_t label(int64_t i) const override;
  int num_classes() const override { return num_classes_; }
  std::string name(int64_t i) const override;
  void load(int64_t i, Philox& rng, float* out) const override;

 private:
  struct Shard {
    std::string path;
    Tensor latents;  // [N, C, H, W] or posterior [N, 2C, H, W]; F32 or BF16
    std::vector<int32_t> labels;
    int64_t first = 0;
  };
  const Shard& locate(int64_t i, int64_t* row) const;
  std::vector<Shard> shards_;
  Shape chw_;
  int64_t total_ = 0;
  bool posterior_ = false;  // shards hold `posterior` (sampled per load)
  bool hflip_;
  int num_classes_;
};

}  // namespace vt
