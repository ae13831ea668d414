#include "eval/fid_activations.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "core/npz_image_reader.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "eval/fid_inputs.h"
#include "eval/npz_members.h"

namespace vt {
namespace {

NpyArray image_array(const std::string& path) {
  NpyArray arr = load_npz_members(path, {"arr_0"}).at("arr_0");
  if (arr.dtype != "|u1" || arr.shape.size() != 4 || arr.shape[3] != 3)
    throw std::runtime_error("'" + path + "': arr_0 has dtype " + arr.dtype + " and shape " + shape_str(arr.shape) +
                             "; expected uint8 [N, H, W, 3]");
  return arr;
}

// Image i of a folder or an arr_0, as contiguous RGB HWC bytes; an arr_0 is
// read `batch` rows at a time (core/npz_image_reader.h), never whole.
struct Images {
  std::string path;
  int64_t batch = 1;
  std::unique_ptr<NpzImageReader> npz;
  int64_t buf_first = 0, buf_rows = 0;
  const std::vector<uint8_t>* buf = nullptr;
  std::vector<std::string> files;
  cv::Mat cur;
  Images(const std::string& p, int64_t batch_rows) : path(p), batch(batch_rows) {
    const FidSourceKind k = classify_fid_source(p);
    if (k == FidSourceKind::StatsNpz) {  // a reference batch may hold arr_0 next to its statistics
      const std::vector<std::string> keys = npz_keys(p);
      if (std::find(keys.begin(), keys.end(), "arr_0") == keys.end())
        throw std::runtime_error("'" + p + "' holds statistics (mu, sigma) and no key 'arr_0'; per-image activations need images");
    }
    if (k != FidSourceKind::ImageFolder) {
      npz = std::make_unique<NpzImageReader>(p);
      if (npz->rows() < 2)
        throw std::runtime_error("'" + p + "': arr_0 holds " + std::to_string(npz->rows()) + " images, at least 2 needed");
    } else {
      files = list_images_recursive(p);
      require_two_images(files, p);
    }
  }
  int64_t size() const { return npz ? npz->rows() : static_cast<int64_t>(files.size()); }
  const uint8_t* get(int64_t i, int64_t* h, int64_t* w) {
    if (npz) {
      *h = npz->height(), *w = npz->width();
      if (i < buf_first || i >= buf_first + buf_rows) {
        npz->skip_to(i);
        buf_first = i;
        buf = &npz->read_batch(batch, &buf_rows);
      }
      return buf->data() + (i - buf_first) * npz->height() * npz->width() * 3;
    }
    std::vector<uint8_t> bytes = read_file_bytes(files[i]);
    cur = decode_image(bytes.data(), bytes.size(), files[i]).rgb;
    if (!cur.isContinuous()) cur = cur.clone();
    *h = cur.rows, *w = cur.cols;
    return cur.ptr<uint8_t>(0);
  }
};

}  // namespace

FidActivations compute_fid_activations(const std::string& path, const InceptionFid& net, FidProtocol protocol,
                                       int64_t batch, bool spatial, bool logits, void (*progress)(int64_t, int64_t)) {
  if (batch < 1) throw std::invalid_argument("compute_fid_activations: batch must be >= 1");
  if (logits && !net.has_logits())
    throw std::runtime_error("the Inception weights have no 'fc.weight' (needed for the Inception Score logits)");
  Images im(path, batch);
  FidActivations a;
  a.n = im.size();
  a.pool_dim = net.feature_dim();
  a.spatial_dim = spatial ? InceptionFid::spatial_dim() : 0;
  a.logit_dim = logits ? net.num_logits() : 0;
  a.pool.resize(static_cast<size_t>(a.n * a.pool_dim));
  a.spatial.resize(static_cast<size_t>(a.n * a.spatial_dim));
  a.logits.resize(static_cast<size_t>(a.n * a.logit_dim));
  for (int64_t s = 0; s < a.n; s += batch) {
    const int64_t b = std::min(batch, a.n - s);
    Tensor x = Tensor::empty({b, 3, 299, 299});
    for (int64_t i = 0; i < b; ++i) {
      int64_t h = 0, w = 0;
      const uint8_t* px = im.get(s + i, &h, &w);
      preprocess_fid_image(px, h, w, protocol, x, i);
    }
    Tensor pool = Tensor::wrap(a.pool.data() + s * a.pool_dim, {b, a.pool_dim}, DType::F32);
    Tensor sp = spatial ? Tensor::wrap(a.spatial.data() + s * a.spatial_dim, {b, a.spatial_dim}, DType::F32) : Tensor();
    net.forward(x, pool, sp);
    if (logits) net.logits(pool, Tensor::wrap(a.logits.data() + s * a.logit_dim, {b, a.logit_dim}, DType::F32));
    if (progress) progress(s + b, a.n);
  }
  return a;
}

void save_activations_npz(const std::string& path, const FidActivations& a) {
  std::map<std::string, NpyArray> m;
  if (a.pool_dim) m.emplace("pool", NpyArray::from(a.pool, {a.n, a.pool_dim}));
  if (a.spatial_dim) m.emplace("spatial", NpyArray::from(a.spatial, {a.n, a.spatial_dim}));
  if (a.logit_dim) m.emplace("logits", NpyArray::from(a.logits, {a.n, a.logit_dim}));
  m.emplace("count", NpyArray::from(std::vector<int64_t>{a.n}, Shape{}));
  save_npz(path, m);
}

GaussianStats stats_of_rows(const std::vector<float>& rows, int64_t n, int64_t d) {
  StatsAccumulator acc(d);
  acc.add(rows.data(), n);
  return acc.finish();
}

bool write_stacked_images(const std::string& path, NpzStreamWriter& w, const std::string& key, int64_t batch) {
  Images im(path, batch);
  int64_t h0 = 0, w0 = 0;
  for (int64_t i = 0; i < im.size(); ++i) {
    int64_t h = 0, wd = 0;
    const uint8_t* px = im.get(i, &h, &wd);
    if (i == 0) {
      h0 = h, w0 = wd;
      w.begin(key, "|u1", {im.size(), h, wd, 3});
    } else if (h != h0 || wd != w0) {
      return false;
    }
    w.write(px, static_cast<size_t>(h * wd * 3));
  }
  w.end();
  return true;
}

}  // namespace vt
