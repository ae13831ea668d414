#include "diffusion/latent_extract.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/output_claim.h"
#include "core/log.h"
#include "core/out_of_memory.h"
#include "core/philox.h"
#include "core/pinned_memory.h"
#include "core/progress.h"
#include "core/safetensors.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/transforms.h"
#include "diffusion/fingerprint.h"

namespace vt {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kPurposeExtractSample = 0xE7A0001;

std::string shard_path(const std::string& dir, int64_t k) {
  char name[48];
  std::snprintf(name, sizeof(name), "shard_%05lld.safetensors", static_cast<long long>(k));
  return (fs::path(dir) / name).string();
}

// The image list's identity: file names relative to the root and labels, in order.
std::string images_fingerprint(const ImageFolder& folder) {
  Sha256 h;
  const size_t skip = folder.root().size();
  for (const auto& s : folder.samples()) {
    h.add(s.path.size() > skip ? s.path.substr(skip) : s.path);
    h.add(std::to_string(s.label));
  }
  return h.hex();
}

SafetensorsMetadata shard_metadata(const ExtractOptions& o, const ImageFolder& folder) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(o.images_dir, ec);
  return {{"format", "vtrain-latents"},
          {"vae", o.vae_source},
          {"vae_sha256", vae_fingerprint(o.vae_source)},
          {"images_root", ec ? o.images_dir : root.string()},
          {"images_count", std::to_string(folder.size())},
          {"images_sha256", images_fingerprint(folder)},
          {"image_size", std::to_string(o.image_size)},
          {"store", o.store_posterior ? "posterior" : "sample"},
          {"hflip_copies", o.hflip_copies ? "true" : "false"},
          {"shard_size", std::to_string(o.shard_size)},
          {"seed", std::to_string(o.seed)}};
}

// An image as [3, S, S] floats in [-1, 1] (and its mirror when asked), or
// false for a bad image under on_corrupt: skip.
bool load_image(const std::string& path, const ExtractOptions& o, float* out, float* flipped, std::string* why) {
  try {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    cv::Mat rgb = decode_image(bytes.data(), bytes.size(), path).rgb;
    // Images smaller than the crop are upsampled, as DiT's center_crop_arr
    // does (its BICUBIC resize scales the shorter side up to image_size).
    cv::Mat img = adm_center_crop(rgb, static_cast<int>(o.image_size));
    to_chw_normalized(img, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, out);
    if (flipped) {
      hflip_inplace(img);
      to_chw_normalized(img, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, flipped);
    }
    return true;
  } catch (const CorruptImage& e) {
    if (o.on_corrupt != "skip") throw with_skip_hint(e);
    *why = e.what();
    return false;
  } catch (const std::exception& e) {
    if (o.on_corrupt != "skip") throw;
    *why = e.what();
    return false;
  }
}

}  // namespace

ExtractReport extract_latents(const AutoencoderKL& vae, const ExtractOptions& o) {
  const int64_t f = vae.config().downsample_factor(), C = vae.config().latent_channels;
  if (o.image_size < f || o.image_size % f != 0)
    throw std::invalid_argument("extract: image size " + std::to_string(o.image_size) +
                                " must be a positive multiple of the VAE's downsampling " + std::to_string(f));
  if (o.shard_size < 1 || o.batch < 1)
    throw std::invalid_argument("extract: shard_size and batch must be >= 1");
  if (o.on_corrupt != "error" && o.on_corrupt != "skip")
    throw std::invalid_argument("extract: on_corrupt must be error | skip, got '" + o.on_corrupt + "'");
  const ImageFolder folder(o.images_dir);
  if (folder.size() == 0) throw std::runtime_error("extract: no images in '" + o.images_dir + "'");
  if (o.num_classes > 0 && folder.num_classes() > o.num_classes)
    throw std::invalid_argument("extract: model.num_classes is " + std::to_string(o.num_classes) + ", but '" +
                                o.images_dir + "' has " + std::to_string(folder.num_classes()) + " class folders");
  fs::create_directories(o.out_dir);
  SafetensorsMetadata meta = shard_metadata(o, folder);
  // The encoder's arithmetic (vae.precision): fp32, tf32 and bf16 latents
  // differ by their roundings, so one folder holds one of them.
  meta["vae_precision"] = vae_precision_name(vae.precision());
  const int64_t S = o.image_size, h = S / f, copies = o.hflip_copies ? 2 : 1;
  const int64_t n_shards = (folder.size() + o.shard_size - 1) / o.shard_size;
  const int64_t plane = 3 * S * S;

  // One batch's pixels, allocated once; on a GPU page-locked, so each batch
  // goes up in one DMA.
  const size_t pix_n = static_cast<size_t>(o.batch * copies * plane);
  PinnedBuffer pinned;
  std::vector<float> pageable;
  float* pix = nullptr;
  if (vae.device().is_cuda()) {
    pinned = PinnedBuffer(pix_n * sizeof(float));
    pix = static_cast<float*>(pinned.data());
  } else {
    pageable.resize(pix_n);
    pix = pageable.data();
  }

  ExtractReport rep;
  ProgressOptions po;
  po.unit = "img";
  ProgressBar bar("extract", folder.size(), po);
  for (int64_t k = 0; k < n_shards; ++k) {
    const int64_t first = k * o.shard_size, last = std::min(folder.size(), first + o.shard_size);
    const std::string path = shard_path(o.out_dir, k);
    if (fs::exists(path)) {
      // Written atomically, so present means complete; its options, VAE and
      // images must match (the VAE's path may differ: its fingerprint decides).
      const SafetensorsReader r(path);
      for (const auto& [key, value] : meta) {
        if (key == "vae") continue;
        // Shards from before vae.precision existed were encoded in fp32.
        if (key == "vae_precision" && !r.metadata().count(key) && value == "fp32") continue;
        if (!r.metadata().count(key) || r.metadata().at(key) != value)
          throw std::runtime_error(output_differs_message(
              {"extract", "out=", ""}, path, key, "'" + (r.metadata().count(key) ? r.metadata().at(key) : std::string("?")) + "'",
              "'" + value + "'", "rerun with that extraction's arguments to continue out=" + o.out_dir +
                  ", or give another out="));
      }
      ++rep.shards_skipped;
      rep.rows_existing += r.entry("labels").shape.at(0);
      bar.update(last);
      continue;
    }
    std::vector<float> out_lat;   // rows of C (sample) or 2C (posterior) planes
    std::vector<int64_t> labels;
    for (int64_t b0 = first; b0 < last; b0 += o.batch) {
      const int64_t nb = std::min(o.batch, last - b0);
      std::vector<char> ok(static_cast<size_t>(nb));
      std::vector<std::string> why(static_cast<size_t>(nb));
      std::exception_ptr err;
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t i = 0; i < nb; ++i) {
        try {
          float* dst = pix + i * copies * plane;
          ok[i] = load_image(folder.samples()[b0 + i].path, o, dst, copies == 2 ? dst + plane : nullptr, &why[i]);
        } catch (...) {
#pragma omp critical
          if (!err) err = std::current_exception();
        }
      }
      if (err) std::rethrow_exception(err);
      // Compact the good images (rows keep the folder order).
      int64_t good = 0;
      for (int64_t i = 0; i < nb; ++i) {
        if (!ok[i]) {
          log().warn("extract: skipping {}", why[i]);
          ++rep.bad_images;
          continue;
        }
        if (good != i)
          std::copy_n(pix + i * copies * plane, copies * plane, pix + good * copies * plane);
        for (int64_t c = 0; c < copies; ++c) labels.push_back(folder.samples()[b0 + i].label);
        ++good;
      }
      if (good > 0) {
        const Tensor images = Tensor::wrap(pix, {good * copies, 3, S, S}, DType::F32);
        AutoencoderKL::Posterior p = naming_out_of_memory("extract: batch=" + std::to_string(o.batch) +
                                                              " (images per VAE call; lower it)",
                                                          [&] { return vae.encode(images); });
        p.mean = p.mean.to(Device::cpu()).contiguous();
        p.logvar = p.logvar.to(Device::cpu()).contiguous();
        const int64_t lat = C * h * h;
        for (int64_t r = 0; r < good * copies; ++r) {
          const float* m = p.mean.f32() + r * lat;
          const float* lv = p.logvar.f32() + r * lat;
          if (o.store_posterior) {
            out_lat.insert(out_lat.end(), m, m + lat);
            out_lat.insert(out_lat.end(), lv, lv + lat);
          } else {
            // The row's global index: folder position and copy, independent of batching.
            const int64_t row = static_cast<int64_t>(labels.size()) - good * copies + r;
            Philox rng(o.seed, philox_stream(kPurposeExtractSample, static_cast<uint64_t>(k), static_cast<uint64_t>(row)));
            for (int64_t j = 0; j < lat; ++j)
              out_lat.push_back(static_cast<float>(m[j] + std::exp(0.5 * lv[j]) * rng.normal()));
          }
        }
      }
      bar.update(b0 + nb);
    }
    const int64_t rows = static_cast<int64_t>(labels.size());
    const Shape shape{rows, o.store_posterior ? 2 * C : C, h, h};
    Tensor lat_t = Tensor::empty(shape), lab_t = Tensor::empty({rows}, DType::I64);
    std::copy(out_lat.begin(), out_lat.end(), lat_t.f32());
    std::copy(labels.begin(), labels.end(), lab_t.data<int64_t>());
    save_safetensors(path, {{o.store_posterior ? "posterior" : "latents", lat_t}, {"labels", lab_t}}, meta);
    ++rep.shards_written;
    rep.rows += rows;
  }
  bar.finish();
  log().info("extract: {} shard(s) written, {} already complete, {} rows in all ({} new), {} bad image(s) skipped into {}",
             rep.shards_written, rep.shards_skipped, rep.rows + rep.rows_existing, rep.rows, rep.bad_images, o.out_dir);
  return rep;
}

}  // namespace vt
