#include "eval/fid_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "core/npz.h"
#include "core/npz_image_reader.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "eval/npz_members.h"
#include "eval/sharded_stats.h"
#include "kernels/resize.h"

namespace fs = std::filesystem;

namespace vt {

const char* fid_source_name(FidSourceKind k) {
  switch (k) {
    case FidSourceKind::ImageFolder: return "images";
    case FidSourceKind::ImageNpz: return "npz images";
    case FidSourceKind::StatsNpz: return "npz statistics";
  }
  return "?";
}

namespace {

std::string keys_of(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "(none)" : s;
}

GaussianStats stats_from_npz(const std::map<std::string, NpyArray>& m, const std::string& path) {
  const NpyArray& mu = m.at("mu");
  const NpyArray& sg = m.at("sigma");
  if (mu.shape.size() != 1 || sg.shape.size() != 2 || sg.shape[0] != mu.shape[0] || sg.shape[1] != mu.shape[0])
    throw std::runtime_error("'" + path + "': mu " + shape_str(mu.shape) + " and sigma " + shape_str(sg.shape) +
                             " must be [D] and [D, D]");
  const int64_t d = mu.shape[0];
  std::vector<double> m1 = mu.to_f64(), s1 = sg.to_f64();
  // Caught here, the error names the file; frechet_distance could only say
  // "statistics contain NaN".
  for (const auto* v : {&m1, &s1})
    for (size_t i = 0; i < v->size(); ++i)
      if (!std::isfinite((*v)[i]))
        throw std::runtime_error("'" + path + "': " + (v == &m1 ? "mu" : "sigma") + " holds a non-finite value (" +
                                 std::to_string((*v)[i]) + " at flat index " + std::to_string(i) + ")");
  GaussianStats s;
  s.mu = Eigen::Map<Eigen::VectorXd>(m1.data(), d);
  s.sigma = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(s1.data(), d, d);
  return s;
}

// One uint8 HWC image into slot i of a [B, 3, 299, 299] batch.
void put_image(const uint8_t* hwc, int64_t h, int64_t w, const Tensor& batch, int64_t i) {
  Tensor u8 = Tensor::wrap(const_cast<uint8_t*>(hwc), {1, h, w, 3}, DType::U8);
  Tensor unit = u8_nhwc_to_unit_nchw(u8);
  Tensor dst = batch.slice(0, i, i + 1);
  if (h == 299 && w == 299) dst.copy_from(unit);
  else resize_bilinear(unit, dst);
}

void require_two(int64_t n, const std::string& path) {
  if (n < 2) throw std::runtime_error("'" + path + "': FID needs at least 2 images, found " + std::to_string(n));
}

}  // namespace

void require_two_images(const std::vector<std::string>& files, const std::string& path) {
  if (files.size() >= 2) return;
  // A corrupt file is the more useful report than the count it leads to.
  for (const std::string& f : files) {
    std::vector<uint8_t> bytes = read_file_bytes(f);
    decode_image(bytes.data(), bytes.size(), f);
  }
  require_two(static_cast<int64_t>(files.size()), path);
}

FidSourceKind classify_fid_source(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error("'" + path + "': no such file or directory");
  if (fs::is_directory(path)) return FidSourceKind::ImageFolder;
  const std::vector<std::string> keys = npz_keys(path);
  auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  if (has("mu") && has("sigma")) return FidSourceKind::StatsNpz;
  if (has("arr_0")) return FidSourceKind::ImageNpz;
  throw std::runtime_error("'" + path + "': expected an .npz with 'mu' and 'sigma' or with 'arr_0' images; found keys " +
                           keys_of(keys));
}

std::vector<std::string> list_images_recursive(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && has_image_extension(e.path().filename().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("'" + root + "': folder holds no image files");
  return files;
}

FidSourceStats fid_source_stats(const std::string& path, const InceptionFid* net, int64_t batch,
                                void (*progress)(int64_t, int64_t)) {
  FidSourceStats out;
  out.kind = classify_fid_source(path);
  if (out.kind == FidSourceKind::StatsNpz) {
    out.stats = stats_from_npz(load_npz_members(path, {"mu", "sigma"}), path);
    out.count = out.stats.count = stored_count(path);
    return out;
  }
  if (!net) throw std::invalid_argument("fid_source_stats: '" + path + "' holds images but no network was given");
  if (batch < 1) throw std::invalid_argument("fid_source_stats: batch must be >= 1, got " + std::to_string(batch));
  if (out.kind == FidSourceKind::ImageNpz) {
    // One batch of arr_0 in memory at a time (core/npz_image_reader.h).
    NpzImageReader rd(path);
    const int64_t n = rd.rows(), h = rd.height(), w = rd.width();
    require_two(n, path);
    ShardedStats acc(n, batch, net->feature_dim());
    rd.skip_to(acc.begin());
    for (int64_t s = acc.begin(); s < acc.end(); s += batch) {
      const int64_t b = std::min(batch, n - s);
      int64_t got = 0;
      const std::vector<uint8_t>& px = rd.read_batch(b, &got);
      Tensor x = Tensor::empty({b, 3, 299, 299});
      for (int64_t i = 0; i < b; ++i) put_image(px.data() + i * h * w * 3, h, w, x, i);
      Tensor f = Tensor::empty({b, net->feature_dim()});
      net->features(x, f);
      acc.add(f);
      if (progress) progress(s + b - acc.begin(), acc.end() - acc.begin());
    }
    out.stats = acc.finish();
  } else {
    const std::vector<std::string> files = list_images_recursive(path);
    const int64_t n = static_cast<int64_t>(files.size());
    require_two_images(files, path);
    ShardedStats acc(n, batch, net->feature_dim());
    for (int64_t s = acc.begin(); s < acc.end(); s += batch) {
      const int64_t b = std::min(batch, n - s);
      Tensor x = Tensor::empty({b, 3, 299, 299});
      for (int64_t i = 0; i < b; ++i) {
        const std::string& f = files[s + i];
        std::vector<uint8_t> bytes = read_file_bytes(f);
        cv::Mat rgb = decode_image(bytes.data(), bytes.size(), f).rgb;
        if (!rgb.isContinuous()) rgb = rgb.clone();
        put_image(rgb.ptr<uint8_t>(0), rgb.rows, rgb.cols, x, i);
      }
      Tensor feats = Tensor::empty({b, net->feature_dim()});
      net->features(x, feats);
      acc.add(feats);
      if (progress) progress(s + b - acc.begin(), acc.end() - acc.begin());
    }
    out.stats = acc.finish();
  }
  out.count = out.stats.count;
  return out;
}

void save_stats_npz(const std::string& path, const GaussianStats& s) {
  const int64_t d = s.dim();
  std::vector<double> mu(s.mu.data(), s.mu.data() + d), sigma(static_cast<size_t>(d * d));
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) sigma[i * d + j] = s.sigma(i, j);
  std::map<std::string, NpyArray> m{{"mu", NpyArray::from(mu, {d})}, {"sigma", NpyArray::from(sigma, {d, d})}};
  if (s.count > 0) m.emplace("count", NpyArray::from(std::vector<int64_t>{s.count}, Shape{}));
  save_npz(path, m);
}

int64_t stored_count(const std::string& path) {
  const std::vector<std::string> keys = npz_keys(path);
  if (std::find(keys.begin(), keys.end(), "count") == keys.end()) return 0;
  const NpyArray a = load_npz_members(path, {"count"}).at("count");
  if (a.numel() != 1) return 0;
  const double v = a.to_f64()[0];
  return std::isfinite(v) && v >= 0 ? static_cast<int64_t>(v) : 0;
}

std::string find_inception_weights(const std::string& explicit_path) {
  std::vector<std::string> tried;
  if (!explicit_path.empty()) {
    if (fs::is_regular_file(explicit_path)) return explicit_path;
    tried.push_back(explicit_path + " (--inception)");
  } else {
    if (const char* env = std::getenv("VT_INCEPTION_WEIGHTS"); env && *env) {
      if (fs::is_regular_file(env)) return env;
      tried.push_back(std::string(env) + " ($VT_INCEPTION_WEIGHTS)");
    } else {
      tried.push_back("$VT_INCEPTION_WEIGHTS (unset)");
    }
    const char* home = std::getenv("HOME");
    const std::string def = std::string(home ? home : "~") + "/.cache/vtrain/pt_inception-2015-12-05.safetensors";
    if (fs::is_regular_file(def)) return def;
    tried.push_back(def);
  }
  std::string msg = "Inception weights not found; looked at:";
  for (const auto& t : tried) msg += "\n  " + t;
  msg +=
      "\nveval never downloads. Get pytorch-fid's pt_inception-2015-12-05-6726825d.pth (the FID_WEIGHTS_URL in "
      "pytorch_fid/inception.py) and convert it:\n  python3 tools/convert_inception.py "
      "pt_inception-2015-12-05-6726825d.pth\n(writes ~/.cache/vtrain/pt_inception-2015-12-05.safetensors), or pass "
      "--inception FILE.";
  throw std::runtime_error(msg);
}

}  // namespace vt
