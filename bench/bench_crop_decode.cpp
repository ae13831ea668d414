// Host CPU cost per training image, one thread (= per core): `data.decode:
// full` (today's folder read + decode + train transform) against `data.decode:
// crop` (crop_decode.h), on the original ImageNet samples and on the same
// images pre-resized so the longer side is <= 512 (re-encoded as JPEG q90
// 4:2:0 into a temporary folder under /tmp, removed at exit: the images a
// packed shard at max_side 512 would hold). Two transforms:
//   train: RandomResizedCrop 224 + flip + RandAugment + normalize + erasing
//          (the whole DeiT train transform, ImageFolderDataset::load);
//   rrc:   the same without RandAugment and erasing (decode + crop + resize
//          + flip + normalize: the part decode mode can change);
//   host:  the host's share with `data.augment_on: device` (the loader's
//          load_planned: decode + crop + resize to a uint8 crop and the
//          augmentation plan's draws; flip, RandAugment, normalize and
//          erasing then run on the GPU), the per-core figure the input-path
//          issue targets (>= 875 images/s, >= 3x `train_original_full`),
//          its ratio against `train_original_full` (today's whole host
//          transform on the original files).
// Ratios are against `full` on the original files with the same transform,
// measured in the same run (passes interleaved). It then prints how far the
// uint8 RandomResizedCrop output (before flip and normalisation) of `crop`
// is from `full`, and from a whole decode without DCT scaling (PIL's
// pixels), over every image: mean and max absolute difference per value;
// and, before that, the milliseconds per image of each stage (whole decode,
// region decode at the power-of-two scale and at the nearest eighth, resize,
// flip + normalize, RandAugment).
//
//   build/bench/bench_crop_decode [root] [passes] [only]   (from the repository root)
// `only`: run just the configurations whose name contains it (and their
// reference), without the difference lines.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <turbojpeg.h>

#include "data_pipeline/augment_plan.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/jpeg_region.h"
#include "data_pipeline/randaugment.h"
#include "data_pipeline/resample.h"

namespace fs = std::filesystem;

namespace {

// Copies `root`'s class folders to `dst`, every image decoded, shrunk
// (Pillow bicubic) so its longer side is at most max_side, and saved as
// JPEG quality 90 with 4:2:0 chroma (PIL's default for RGB at q90).
void write_resized(const vt::ImageFolder& f, const std::string& root, const std::string& dst, int max_side) {
  tjhandle tj = tjInitCompress();
  for (const auto& s : f.samples()) {
    const auto bytes = vt::read_file_bytes(s.path);
    cv::Mat rgb = vt::decode_image(bytes.data(), bytes.size(), s.path).rgb;
    const int longer = std::max(rgb.cols, rgb.rows);
    if (longer > max_side) {
      const double k = static_cast<double>(max_side) / longer;
      rgb = vt::resize_pil(rgb, std::max(1, static_cast<int>(std::lround(rgb.cols * k))),
                           std::max(1, static_cast<int>(std::lround(rgb.rows * k))), vt::ResampleFilter::Bicubic);
    }
    if (!rgb.isContinuous()) rgb = rgb.clone();
    unsigned char* buf = nullptr;
    unsigned long n = 0;
    if (tjCompress2(tj, rgb.data, rgb.cols, 0, rgb.rows, TJPF_RGB, &buf, &n, TJSAMP_420, 90, 0) != 0)
      throw std::runtime_error(std::string("tjCompress2: ") + tjGetErrorStr2(tj));
    // Lexically: fs::relative resolves symlinks, so a class folder linked
    // from elsewhere gave "../..." and the copy overwrote the original photo.
    const fs::path rel = fs::path(s.path).lexically_normal().lexically_relative(fs::path(root).lexically_normal());
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
      throw std::runtime_error("bench_crop_decode: " + s.path + " is not under " + root + "; not writing its copy");
    const fs::path out = fs::path(dst) / rel;
    fs::create_directories(out.parent_path());
    std::FILE* fp = std::fopen(out.c_str(), "wb");
    if (!fp || std::fwrite(buf, 1, n, fp) != n || std::fclose(fp) != 0)
      throw std::runtime_error("cannot write " + out.string());
    tjFree(buf);
  }
  tjDestroy(tj);
}

struct Case {
  std::string name;
  std::shared_ptr<vt::ImageFolderDataset> ds;
  int reference = 0;  // index of the case this one's ratio is against
  bool planned = false;  // load_planned (augmentation on the device) instead of load
  double seconds = 0;
  int64_t images = 0;
};

// One pass over every image on this thread, the sample keyed as the loader
// keys it (seed 0, stream = index).
void pass(Case& c) {
  std::vector<float> out(3 * 224 * 224);
  std::vector<uint8_t> hwc(3 * 224 * 224);
  vt::AugmentPlan plan;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < c.ds->size(); ++i) {
    vt::Philox rng(0, static_cast<uint64_t>(i));
    if (c.planned) c.ds->load_planned(i, rng, hwc.data(), &plan);
    else c.ds->load(i, rng, out.data());
  }
  c.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.images += c.ds->size();
}

// The uint8 RandomResizedCrop output of one image: `mode` Crop or Full with
// DCT scaling, or (reference_pil) a whole full-size decode.
cv::Mat rrc_uint8(const std::vector<uint8_t>& b, const std::string& name, uint64_t i, vt::DecodeMode mode,
                  bool reference_pil) {
  const vt::ImageSize sz = vt::probe_image(b.data(), b.size(), name);
  vt::Philox rng(0, i);
  const vt::CropBox box = vt::rrc_box(sz.width, sz.height, rng);
  cv::Mat img;
  if (mode == vt::DecodeMode::Crop &&
      vt::decode_crop_resize(b.data(), b.size(), name, true, sz.width, sz.height, box, 224, &img))
    return img;
  const double s = reference_pil ? 1.0 : vt::rrc_dct_scale(true, box.width, box.height, 224, 224);
  const vt::DecodedImage d = vt::decode_image(b.data(), b.size(), name, s);
  return vt::resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, box, 224);
}

// Milliseconds per image of the stages of the `rrc` path, over the JPEGs of
// `f` held in memory, the boxes drawn as in pass(): where the time goes.
void stage_lines(const vt::ImageFolder& f, int passes) {
  struct Item {
    std::vector<uint8_t> bytes;
    vt::ImageSize size;
    vt::CropBox box;
    double scale;
    vt::DecodedImage whole;
    cv::Mat crop;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < f.samples().size(); ++i) {
    Item it;
    it.bytes = vt::read_file_bytes(f.samples()[i].path);
    if (vt::sniff_format(it.bytes.data(), it.bytes.size()) != vt::ImageFormat::Jpeg) continue;
    it.size = vt::probe_image(it.bytes.data(), it.bytes.size(), f.samples()[i].path);
    vt::Philox rng(0, i);
    it.box = vt::rrc_box(it.size.width, it.size.height, rng);
    it.scale = vt::rrc_dct_scale(true, it.box.width, it.box.height, 224, 224);
    items.push_back(std::move(it));
  }
  auto time_ms = [&](const char* stage, const std::function<void(Item&)>& fn) {
    for (Item& it : items) fn(it);  // warm
    const auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p)
      for (Item& it : items) fn(it);
    const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3 /
                      (static_cast<double>(passes) * items.size());
    std::printf("{\"bench\": \"crop_decode\", \"stage\": \"%s\", \"jpegs\": %zu, \"ms_per_image\": %.3f}\n", stage,
                items.size(), ms);
  };
  time_ms("whole_decode_at_rrc_scale", [](Item& it) {
    it.whole = vt::decode_image(it.bytes.data(), it.bytes.size(), "", it.scale);
  });
  // The region decode alone at num/8: the integer pixels covering the box.
  auto region = [](Item& it, int num) {
    const double k = num / 8.0;
    const int sw = (it.size.width * num + 7) / 8, sh = (it.size.height * num + 7) / 8;
    const int x0 = static_cast<int>(it.box.left * k), y0 = static_cast<int>(it.box.top * k);
    const int x1 = std::min(sw, static_cast<int>(std::ceil((it.box.left + it.box.width) * k)));
    const int y1 = std::min(sh, static_cast<int>(std::ceil((it.box.top + it.box.height) * k)));
    vt::JpegRegion r;
    vt::decode_jpeg_region(it.bytes.data(), it.bytes.size(), "", num, 8, x0, y0, x1, y1, &r);
  };
  time_ms("region_decode_at_rrc_scale", [&](Item& it) { region(it, static_cast<int>(std::lround(8 * it.scale))); });
  // The alternative rule: the smallest eighth keeping the box >= 224 both ways.
  time_ms("region_decode_at_nearest_eighth", [&](Item& it) {
    int num = 8;
    while (num > 1 && it.box.width * (num - 1) >= 224 * 8 && it.box.height * (num - 1) >= 224 * 8) --num;
    region(it, num);
  });
  time_ms("resize_only", [](Item& it) {
    const vt::DecodedImage& d = it.whole;
    it.crop = vt::resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, it.box, 224);
  });
  std::vector<float> chw(3 * 224 * 224);
  time_ms("flip_and_normalize", [&](Item& it) {
    vt::hflip_inplace(it.crop);
    vt::to_chw_normalized(it.crop, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, chw.data());
  });
  size_t k = 0;
  time_ms("randaugment", [&](Item& it) {
    vt::Philox rng(1, k++);
    vt::rand_augment(it.crop, rng, {});
  });
}

void diff_line(const char* what, const vt::ImageFolder& f, bool reference_pil) {
  double sum = 0;
  int maxd = 0;
  int64_t values = 0, differing_images = 0;
  for (size_t i = 0; i < f.samples().size(); ++i) {
    const auto& path = f.samples()[i].path;
    const auto b = vt::read_file_bytes(path);
    const cv::Mat a = rrc_uint8(b, path, i, vt::DecodeMode::Crop, false);
    const cv::Mat r = rrc_uint8(b, path, i, vt::DecodeMode::Full, reference_pil);
    cv::Mat d;
    cv::absdiff(a, r, d);
    double mx = 0;
    cv::minMaxLoc(d.reshape(1), nullptr, &mx);
    sum += cv::sum(d)[0] + cv::sum(d)[1] + cv::sum(d)[2];
    maxd = std::max(maxd, static_cast<int>(mx));
    differing_images += mx > 0;
    values += static_cast<int64_t>(d.total()) * 3;
  }
  std::printf("{\"bench\": \"crop_decode\", \"diff\": \"%s\", \"images\": %zu, \"differing_images\": %lld, "
              "\"mean_abs\": %.4f, \"max_abs\": %d}\n",
              what, f.samples().size(), static_cast<long long>(differing_images), sum / values, maxd);
}

}  // namespace

int main(int argc, char** argv) {
  // Default: ../shared/data/imagenet-samples beside the repository.
  const std::string root = argc > 1 && argv[1][0] ? argv[1] : std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  const int passes = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  const std::string only = argc > 3 ? argv[3] : "";  // run only configs whose name contains this (no diff lines)

  const std::string small = (fs::temp_directory_path() / ("vt_bench_crop_512_" + std::to_string(getpid()))).string();
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{small};
  const vt::ImageFolder folder(root);
  write_resized(folder, root, small, 512);

  std::vector<Case> cases;
  for (const bool ra : {true, false}) {
    const char* t = ra ? "train" : "rrc";
    const int ref = static_cast<int>(cases.size());
    for (const auto& [dir, tag] : {std::pair<std::string, const char*>{root, "original"}, {small, "max512"}}) {
      for (const vt::DecodeMode m : {vt::DecodeMode::Full, vt::DecodeMode::Crop}) {
        vt::ImagePipelineConfig c;  // DeiT train defaults, 224 px, DCT scaling on
        c.rand_augment = ra;
        c.random_erasing = ra;
        c.decode = m;
        const std::string name = std::string(t) + "_" + tag + (m == vt::DecodeMode::Crop ? "_crop" : "_full");
        if (!only.empty() && name.find(only) == std::string::npos && static_cast<int>(cases.size()) != ref) continue;
        cases.push_back({name, std::make_shared<vt::ImageFolderDataset>(dir, c), ref});
      }
    }
  }
  // The host's share with augmentation on the device, against today's whole
  // host transform (case 0, train_original_full).
  for (const auto& [dir, tag] : {std::pair<std::string, const char*>{root, "original"}, {small, "max512"}}) {
    for (const vt::DecodeMode m : {vt::DecodeMode::Full, vt::DecodeMode::Crop}) {
      vt::ImagePipelineConfig c;  // the whole DeiT train recipe: its plan is drawn here, applied on the GPU
      c.decode = m;
      const std::string name = std::string("host_") + tag + (m == vt::DecodeMode::Crop ? "_crop" : "_full");
      if (!only.empty() && name.find(only) == std::string::npos) continue;
      cases.push_back({name, std::make_shared<vt::ImageFolderDataset>(dir, c), 0, true});
    }
  }
  for (Case& c : cases) {  // warm the page cache and the decoders
    pass(c);
    c.seconds = 0;
    c.images = 0;
  }
  for (int p = 0; p < passes; ++p)
    for (Case& c : cases) pass(c);
  for (const Case& c : cases) {
    const double ips = c.images / c.seconds;
    const Case& r = cases[static_cast<size_t>(c.reference)];
    std::printf("{\"bench\": \"crop_decode\", \"config\": \"%s\", \"threads\": 1, \"images\": %lld, "
                "\"images_per_s_per_core\": %.1f, \"ms_per_image\": %.3f, \"ratio_vs_%s\": %.2f}\n",
                c.name.c_str(), static_cast<long long>(c.images), ips, 1e3 * c.seconds / c.images, r.name.c_str(),
                ips / (r.images / r.seconds));
  }
  if (!only.empty()) return 0;
  stage_lines(folder, passes);
  diff_line("crop_vs_full", folder, false);
  diff_line("crop_vs_full_without_dct_scaling", folder, true);
  return 0;
}
