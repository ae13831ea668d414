#include "data_pipeline/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "core/safetensors.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/resample.h"

namespace vt {

namespace {

// Decodes at rrc_dct_scale (crop_decode.h) for a w x h region of the full
// image that must cover out_w x out_h.
DecodedImage decode_for(const uint8_t* bytes, size_t n, const std::string& name, bool dct, double region_w,
                        double region_h, int out_w, int out_h) {
  return decode_image(bytes, n, name, rrc_dct_scale(dct, region_w, region_h, out_w, out_h));
}

cv::Mat crop_resize(const DecodedImage& d, const CropBox& b, int out) {
  return resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, b, out);
}

}  // namespace

void Dataset::load_planned(int64_t i, Philox&, uint8_t*, AugmentPlan*) const {
  throw std::logic_error("dataset sample " + name(i) + ": this dataset has no augmentation plan (data.augment_on=device "
                         "needs the DeiT train pipeline)");
}

void Dataset::load_encoded(int64_t i, Philox&, EncodedSample*, uint8_t*, AugmentPlan*) const {
  throw std::logic_error("dataset sample " + name(i) + ": this dataset has no encoded samples (data.decode_on=device "
                         "needs the DeiT train pipeline on an image folder or packed shards)");
}

AugmentSettings augment_settings(const ImagePipelineConfig& cfg) {
  AugmentSettings s;
  s.hflip = cfg.hflip, s.rand_augment = cfg.rand_augment, s.random_erasing = cfg.random_erasing;
  s.randaug = cfg.randaug, s.erasing = cfg.erasing;
  s.mean = cfg.mean, s.std = cfg.std;
  return s;
}

void process_image_planned(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                           Philox& rng, uint8_t* hwc, AugmentPlan* plan) {
  if (cfg.kind != ImagePipeline::DeitTrain)
    throw std::invalid_argument("process_image_planned: only the DeiT train pipeline has an augmentation plan");
  const int S = cfg.size;
  cv::Mat img;
  if (sniff_format(bytes, n) == ImageFormat::Jpeg) {
    const ImageSize full = probe_image(bytes, n, name);
    const CropBox box = rrc_box(full.width, full.height, rng, cfg.rrc);
    if (cfg.decode != DecodeMode::Crop ||
        !decode_crop_resize(bytes, n, name, cfg.dct_scaling, full.width, full.height, box, S, &img))
      img = crop_resize(decode_for(bytes, n, name, cfg.dct_scaling, box.width, box.height, S, S), box, S);
  } else {
    const DecodedImage d = decode_image(bytes, n, name);
    img = crop_resize(d, rrc_box(d.full_width, d.full_height, rng, cfg.rrc), S);
  }
  cv::Mat dst(S, S, CV_8UC3, hwc);
  img.copyTo(dst);  // copyTo keeps dst's buffer: same size and type
  *plan = plan_augment(S, S, rng, augment_settings(cfg));
}

bool process_image_encoded(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                           Philox& rng, CropBox* box, uint8_t* hwc, AugmentPlan* plan) {
  if (cfg.kind != ImagePipeline::DeitTrain)
    throw std::invalid_argument("process_image_encoded: only the DeiT train pipeline has an augmentation plan");
  if (sniff_format(bytes, n) != ImageFormat::Jpeg) {
    process_image_planned(bytes, n, name, cfg, rng, hwc, plan);
    return false;
  }
  const ImageSize full = probe_image(bytes, n, name);
  *box = rrc_box(full.width, full.height, rng, cfg.rrc);
  *plan = plan_augment(cfg.size, cfg.size, rng, augment_settings(cfg));
  return true;
}

void process_image(const uint8_t* bytes, size_t n, const std::string& name, const ImagePipelineConfig& cfg,
                   Philox& rng, float* out) {
  const int S = cfg.size;
  cv::Mat img;
  switch (cfg.kind) {
    case ImagePipeline::DeitTrain: {
      // The crop, then its augmentation: the one path for host and batched runs.
      std::vector<uint8_t> hwc(static_cast<size_t>(S) * S * 3);
      AugmentPlan plan;
      process_image_planned(bytes, n, name, cfg, rng, hwc.data(), &plan);
      apply_augment_plan(hwc.data(), S, S, plan, augment_settings(cfg), out);
      return;
    }
    case ImagePipeline::DeitEval: {
      const int resize = static_cast<int>(S / cfg.crop_pct);
      DecodedImage d;
      if (sniff_format(bytes, n) == ImageFormat::Jpeg) {
        const ImageSize full = probe_image(bytes, n, name);
        const EvalGeometry g = eval_geometry(full.width, full.height, resize, S);
        d = decode_for(bytes, n, name, cfg.dct_scaling, full.width, full.height, g.resized_w, g.resized_h);
      } else {
        d = decode_image(bytes, n, name);
      }
      const EvalGeometry g = eval_geometry(d.full_width, d.full_height, resize, S);
      const cv::Mat r = resize_pil(d.rgb, g.resized_w, g.resized_h, ResampleFilter::Bicubic);
      img = r(cv::Rect(g.crop.left, g.crop.top, S, S));
      to_chw_normalized(img, cfg.mean, cfg.std, out);
      return;
    }
    case ImagePipeline::Adm: {
      img = adm_center_crop(decode_image(bytes, n, name).rgb, S);
      if (cfg.hflip && rng.uniform_double() < 0.5) hflip_inplace(img);
      to_chw_normalized(img, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, out);
      return;
    }
  }
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, ImagePipelineConfig cfg)
    : folder_(root), cfg_(std::move(cfg)) {
  if (cfg_.size <= 0) throw std::invalid_argument("ImageFolderDataset: size must be positive");
}

int32_t ImageFolderDataset::label(int64_t i) const { return folder_.samples().at(static_cast<size_t>(i)).label; }

std::string ImageFolderDataset::name(int64_t i) const { return folder_.samples().at(static_cast<size_t>(i)).path; }

void ImageFolderDataset::load(int64_t i, Philox& rng, float* out) const {
  const std::string& path = folder_.samples().at(static_cast<size_t>(i)).path;
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  process_image(bytes.data(), bytes.size(), path, cfg_, rng, out);
}

void ImageFolderDataset::load_planned(int64_t i, Philox& rng, uint8_t* hwc, AugmentPlan* plan) const {
  const std::string& path = folder_.samples().at(static_cast<size_t>(i)).path;
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  process_image_planned(bytes.data(), bytes.size(), path, cfg_, rng, hwc, plan);
}

void ImageFolderDataset::load_encoded(int64_t i, Philox& rng, EncodedSample* enc, uint8_t* hwc,
                                      AugmentPlan* plan) const {
  const std::string& path = folder_.samples().at(static_cast<size_t>(i)).path;
  *enc = EncodedSample{};
  enc->owned = read_file_bytes(path);
  if (process_image_encoded(enc->owned.data(), enc->owned.size(), path, cfg_, rng, &enc->box, hwc, plan)) {
    enc->data = enc->owned.data(), enc->size = enc->owned.size();
    enc->name = path;
  } else {
    enc->owned = {};
  }
}

// ---------------------------------------------------------------- latents

LatentShardDataset::LatentShardDataset(const std::string& dir, bool hflip, int num_classes)
    : hflip_(hflip), num_classes_(num_classes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("LatentShardDataset: '" + dir + "' is not a directory");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("LatentShardDataset: no .safetensors files in '" + dir + "'");
  for (const auto& f : files) {
    SafetensorsReader r(f);
    const bool posterior = r.contains("posterior");
    if ((!r.contains("latents") && !posterior) || !r.contains("labels"))
      throw std::runtime_error("latent shard '" + f + "': needs tensors 'latents' (or 'posterior') and 'labels'");
    if (posterior && r.contains("latents"))
      throw std::runtime_error("latent shard '" + f + "': holds both 'latents' and 'posterior'; keep one");
    if (files.front() != f && posterior != posterior_)
      throw std::runtime_error("latent shard '" + f + "': holds '" + (posterior ? "posterior" : "latents") +
                               "' but the first shard '" + files.front() + "' holds '" +
                               (posterior_ ? "posterior" : "latents") + "'");
    posterior_ = posterior;
    const char* tname = posterior ? "posterior" : "latents";
    Shard s;
    s.path = f;
    s.latents = r.load(tname);
    Tensor labels = r.load("labels");
    if (s.latents.dim() != 4 || (s.latents.dtype() != DType::F32 && s.latents.dtype() != DType::BF16) ||
        (posterior && s.latents.size(1) % 2 != 0))
      throw std::runtime_error("latent shard '" + f + "': '" + tname + "' must be F32 or BF16 [N, " +
                               (posterior ? "2C" : "C") + ", H, W], got " + s.latents.str());
    if (labels.dim() != 1 || labels.size(0) != s.latents.size(0) ||
        (labels.dtype() != DType::I64 && labels.dtype() != DType::I32))
      throw std::runtime_error("latent shard '" + f + "': 'labels' must be I64 or I32 [" +
                               std::to_string(s.latents.size(0)) + "], got " + labels.str());
    const Shape chw{s.latents.size(1) / (posterior ? 2 : 1), s.latents.size(2), s.latents.size(3)};
    if (chw_.empty()) chw_ = chw;
    if (chw != chw_)
      throw std::runtime_error("latent shard '" + f + "': latents sample shape " + shape_str(chw) + " differs from " +
                               shape_str(chw_) + " of the first shard");
    const int64_t n = labels.size(0);
    s.labels.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = labels.dtype() == DType::I64 ? labels.data<int64_t>()[k] : labels.data<int32_t>()[k];
      if (v < 0 || v >= num_classes)
        throw std::runtime_error("latent shard '" + f + "': label " + std::to_string(v) + " at row " +
                                 std::to_string(k) + " outside [0, " + std::to_string(num_classes) + ")");
      s.labels[static_cast<size_t>(k)] = static_cast<int32_t>(v);
    }
    s.first = total_;
    total_ += n;
    shards_.push_back(std::move(s));
  }
}

const LatentShardDataset::Shard& LatentShardDataset::locate(int64_t i, int64_t* row) const {
  if (i < 0 || i >= total_)
    throw std::out_of_range("LatentShardDataset: index " + std::to_string(i) + " outside [0, " +
                            std::to_string(total_) + ")");
  auto it = std::upper_bound(shards_.begin(), shards_.end(), i,
                             [](int64_t v, const Shard& s) { return v < s.first; });
  const Shard& s = *(it - 1);
  *row = i - s.first;
  return s;
}

int32_t LatentShardDataset::label(int64_t i) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  return s.labels[static_cast<size_t>(row)];
}

std::string LatentShardDataset::name(int64_t i) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  return s.path + ":" + std::to_string(row);
}

void LatentShardDataset::load(int64_t i, Philox& rng, float* out) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  const int64_t C = chw_[0], H = chw_[1], W = chw_[2], numel = C * H * W;
  const bool flip = hflip_ && rng.uniform_double() < 0.5;
  const Tensor src = s.latents.select(0, row);
  auto at = [&](int64_t k) {
    return s.latents.dtype() == DType::F32 ? src.data<float>()[k] : bf16_to_f32(src.data<uint16_t>()[k]);
  };
  for (int64_t k = 0; k < numel; ++k) {
    const int64_t x = k % W, rest = k - x;
    const int64_t sk = flip ? rest + (W - 1 - x) : k;
    // Posterior: mean at sk, logvar C*H*W further (DiagonalGaussianDistribution.sample).
    out[k] = posterior_ ? static_cast<float>(at(sk) + std::exp(0.5 * at(numel + sk)) * rng.normal()) : at(sk);
  }
}

}  // namespace vt
