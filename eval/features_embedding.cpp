#include "eval/features_embedding.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "core/npz.h"
#include "core/npz_image_reader.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/resample.h"
#include "data_pipeline/transforms.h"
#include "eval/npz_members.h"
#include "eval/sharded_stats.h"
#include "vision/evaluate.h"

namespace vt {

ClassifierEmbedding ClassifierEmbedding::load(const std::string& ckpt, const std::string& config_path, bool ema,
                                              const std::vector<std::string>& configs_dirs) {
  std::string cfg = config_path;
  std::error_code ec;
  if (!std::filesystem::exists(ckpt, ec))
    throw std::runtime_error("--features: checkpoint '" + ckpt + "' does not exist (a vtrain run's step_N directory)");
  if (cfg.empty()) {
    cfg = run_config_of_checkpoint(ckpt);
    if (cfg.empty())
      throw std::runtime_error("--features '" + ckpt +
                               "': no config.yaml in its run directory; pass the training config with --config");
  }
  const FoundConfig fc = load_vtrain_config_for(ckpt, ema, cfg, configs_dirs);
  return ClassifierEmbedding(load_classifier(fc.cfg, fc.path, ckpt, ema));
}

ClassifierEmbedding::ClassifierEmbedding(LoadedClassifier lc) : lc_(std::move(lc)), pipe_(deit_eval_pipeline(lc_.options)) {
  if (lc_.options.vit.in_chans != 3)
    throw std::runtime_error("--features: the classifier takes " + std::to_string(lc_.options.vit.in_chans) +
                             " channels; images are RGB");
}

void ClassifierEmbedding::preprocess_file(const std::string& path, float* out) const {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  Philox unused(0, 0);  // the eval transform draws nothing
  process_image(bytes.data(), bytes.size(), path, pipe_, unused, out);
}

void ClassifierEmbedding::preprocess_u8(const uint8_t* hwc, int64_t h, int64_t w, float* out) const {
  const int S = pipe_.size;
  const cv::Mat src(static_cast<int>(h), static_cast<int>(w), CV_8UC3, const_cast<uint8_t*>(hwc));
  const EvalGeometry g = eval_geometry(src.cols, src.rows, static_cast<int>(S / pipe_.crop_pct), S);
  const cv::Mat r = resize_pil(src, g.resized_w, g.resized_h, ResampleFilter::Bicubic);
  to_chw_normalized(r(cv::Rect(g.crop.left, g.crop.top, S, S)), pipe_.mean, pipe_.std, out);
}

void ClassifierEmbedding::to(Device device) { lc_.model->to(device); }

void ClassifierEmbedding::features(const Tensor& images, const Tensor& out) const {
  const Device dev = lc_.model->device();
  // forward_features copies its result into `out` on whichever device it is.
  lc_.model->forward_features(images.device() == dev ? images : images.contiguous().to(dev), out);
}

namespace {

void require_two(int64_t n, const std::string& path) {
  if (n < 2) throw std::runtime_error("'" + path + "': FID needs at least 2 images, found " + std::to_string(n));
}

}  // namespace

FidSourceStats embedding_source_stats(const std::string& path, const ClassifierEmbedding& emb, int64_t batch,
                                      void (*progress)(int64_t, int64_t)) {
  FidSourceStats out;
  out.kind = classify_fid_source(path);
  if (out.kind == FidSourceKind::StatsNpz) return fid_source_stats(path, nullptr, batch, progress);
  if (batch < 1) throw std::invalid_argument("embedding_source_stats: batch must be >= 1, got " + std::to_string(batch));
  const int64_t S = emb.image_size(), D = emb.feature_dim(), per = 3 * S * S;
  // prep(i, j, dst): image i of the source, j-th of its batch, into dst.
  // `load(s, b)` brings the batch's rows in first (an .npz streams them).
  auto run = [&](int64_t n, const std::function<void(int64_t, int64_t)>& load,
                 const std::function<void(int64_t, int64_t, float*)>& prep) {
    require_two(n, path);
    ShardedStats acc(n, batch, D);  // this rank's batches (eval/sharded_stats.h)
    Tensor x = Tensor::empty({std::min(batch, n), 3, S, S}), f = Tensor::empty({std::min(batch, n), D});
    for (int64_t s = acc.begin(); s < acc.end(); s += batch) {
      const int64_t b = std::min(batch, n - s);
      Tensor xb = x.slice(0, 0, b), fb = f.slice(0, 0, b);
      load(s, b);
      // Decoding dominates for small models; an exception must not leave
      // the parallel region, so the first one is carried out of it.
      std::exception_ptr err;
#pragma omp parallel for schedule(dynamic)
      for (int64_t i = 0; i < b; ++i) {
        try {
          prep(s + i, i, xb.f32() + i * per);
        } catch (...) {
#pragma omp critical(vt_embedding_err)
          if (!err) err = std::current_exception();
        }
      }
      if (err) std::rethrow_exception(err);
      emb.features(xb, fb);
      acc.add(fb);
      if (progress) progress(s + b - acc.begin(), acc.end() - acc.begin());
    }
    out.stats = acc.finish();
  };
  if (out.kind == FidSourceKind::ImageNpz) {
    // One batch of arr_0 in memory at a time (core/npz_image_reader.h).
    NpzImageReader rd(path);
    const int64_t h = rd.height(), w = rd.width();
    const std::vector<uint8_t>* px = nullptr;
    run(
        rd.rows(),
        [&](int64_t s, int64_t b) {
          rd.skip_to(s);
          int64_t got = 0;
          px = &rd.read_batch(b, &got);
        },
        [&](int64_t, int64_t j, float* dst) { emb.preprocess_u8(px->data() + j * h * w * 3, h, w, dst); });
  } else {
    const std::vector<std::string> files = list_images_recursive(path);
    require_two_images(files, path);
    run(
        static_cast<int64_t>(files.size()), [](int64_t, int64_t) {},
        [&](int64_t i, int64_t, float* dst) { emb.preprocess_file(files[i], dst); });
  }
  out.count = out.stats.count;
  return out;
}

}  // namespace vt
