#include "eval/inception.h"

#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

#include "core/safetensors.h"
#include "kernels/conv.h"
#include "kernels/elementwise.h"
#include "kernels/pool.h"
#include "kernels/resize.h"

namespace vt {
namespace {

constexpr double kBnEps = 1e-3;  // torchvision BasicConv2d: BatchNorm2d(eps=0.001)
constexpr int64_t kSize = 299;

struct Spec {
  std::string name;
  int64_t cin, cout;
  int kh, kw, sh, sw, ph, pw;
};

// The BasicConv2d units of torchvision's Inception3 as pytorch-fid builds
// it (Mixed_5b = InceptionA(192, 32), ...), channels divided by d.
std::vector<Spec> topology(int64_t d) {
  std::vector<Spec> s;
  auto add = [&](const std::string& n, int64_t ci, int64_t co, int kh, int kw, int st = 1, int ph = 0, int pw = 0) {
    s.push_back({n, ci, co, kh, kw, st, st, ph, pw});
  };
  add("Conv2d_1a_3x3", 3, 32 / d, 3, 3, 2);
  add("Conv2d_2a_3x3", 32 / d, 32 / d, 3, 3);
  add("Conv2d_2b_3x3", 32 / d, 64 / d, 3, 3, 1, 1, 1);
  add("Conv2d_3b_1x1", 64 / d, 80 / d, 1, 1);
  add("Conv2d_4a_3x3", 80 / d, 192 / d, 3, 3);
  auto inception_a = [&](const std::string& p, int64_t cin, int64_t pool) {
    add(p + ".branch1x1", cin, 64 / d, 1, 1);
    add(p + ".branch5x5_1", cin, 48 / d, 1, 1);
    add(p + ".branch5x5_2", 48 / d, 64 / d, 5, 5, 1, 2, 2);
    add(p + ".branch3x3dbl_1", cin, 64 / d, 1, 1);
    add(p + ".branch3x3dbl_2", 64 / d, 96 / d, 3, 3, 1, 1, 1);
    add(p + ".branch3x3dbl_3", 96 / d, 96 / d, 3, 3, 1, 1, 1);
    add(p + ".branch_pool", cin, pool / d, 1, 1);
  };
  inception_a("Mixed_5b", 192 / d, 32);
  inception_a("Mixed_5c", 256 / d, 64);
  inception_a("Mixed_5d", 288 / d, 64);
  add("Mixed_6a.branch3x3", 288 / d, 384 / d, 3, 3, 2);
  add("Mixed_6a.branch3x3dbl_1", 288 / d, 64 / d, 1, 1);
  add("Mixed_6a.branch3x3dbl_2", 64 / d, 96 / d, 3, 3, 1, 1, 1);
  add("Mixed_6a.branch3x3dbl_3", 96 / d, 96 / d, 3, 3, 2);
  auto inception_c = [&](const std::string& p, int64_t c7) {
    const int64_t cin = 768 / d;
    c7 /= d;
    add(p + ".branch1x1", cin, 192 / d, 1, 1);
    add(p + ".branch7x7_1", cin, c7, 1, 1);
    add(p + ".branch7x7_2", c7, c7, 1, 7, 1, 0, 3);
    add(p + ".branch7x7_3", c7, 192 / d, 7, 1, 1, 3, 0);
    add(p + ".branch7x7dbl_1", cin, c7, 1, 1);
    add(p + ".branch7x7dbl_2", c7, c7, 7, 1, 1, 3, 0);
    add(p + ".branch7x7dbl_3", c7, c7, 1, 7, 1, 0, 3);
    add(p + ".branch7x7dbl_4", c7, c7, 7, 1, 1, 3, 0);
    add(p + ".branch7x7dbl_5", c7, 192 / d, 1, 7, 1, 0, 3);
    add(p + ".branch_pool", cin, 192 / d, 1, 1);
  };
  inception_c("Mixed_6b", 128);
  inception_c("Mixed_6c", 160);
  inception_c("Mixed_6d", 160);
  inception_c("Mixed_6e", 192);
  add("Mixed_7a.branch3x3_1", 768 / d, 192 / d, 1, 1);
  add("Mixed_7a.branch3x3_2", 192 / d, 320 / d, 3, 3, 2);
  add("Mixed_7a.branch7x7x3_1", 768 / d, 192 / d, 1, 1);
  add("Mixed_7a.branch7x7x3_2", 192 / d, 192 / d, 1, 7, 1, 0, 3);
  add("Mixed_7a.branch7x7x3_3", 192 / d, 192 / d, 7, 1, 1, 3, 0);
  add("Mixed_7a.branch7x7x3_4", 192 / d, 192 / d, 3, 3, 2);
  auto inception_e = [&](const std::string& p, int64_t cin) {
    add(p + ".branch1x1", cin, 320 / d, 1, 1);
    add(p + ".branch3x3_1", cin, 384 / d, 1, 1);
    add(p + ".branch3x3_2a", 384 / d, 384 / d, 1, 3, 1, 0, 1);
    add(p + ".branch3x3_2b", 384 / d, 384 / d, 3, 1, 1, 1, 0);
    add(p + ".branch3x3dbl_1", cin, 448 / d, 1, 1);
    add(p + ".branch3x3dbl_2", 448 / d, 384 / d, 3, 3, 1, 1, 1);
    add(p + ".branch3x3dbl_3a", 384 / d, 384 / d, 1, 3, 1, 0, 1);
    add(p + ".branch3x3dbl_3b", 384 / d, 384 / d, 3, 1, 1, 1, 0);
    add(p + ".branch_pool", cin, 192 / d, 1, 1);
  };
  inception_e("Mixed_7b", 1280 / d);
  inception_e("Mixed_7c", 2048 / d);
  return s;
}

const Tensor& need(const std::map<std::string, Tensor>& sd, const std::string& name, const Shape& shape,
                   const std::string& source) {
  auto it = sd.find(name);
  if (it == sd.end())
    throw std::runtime_error("Inception weights '" + source + "': tensor '" + name + "' is missing");
  if (it->second.shape() != shape)
    throw std::runtime_error("Inception weights '" + source + "': tensor '" + name + "' has shape " +
                             shape_str(it->second.shape()) + ", expected " + shape_str(shape));
  if (it->second.dtype() != DType::F32 && it->second.dtype() != DType::BF16 && it->second.dtype() != DType::F16)
    throw std::runtime_error("Inception weights '" + source + "': tensor '" + name + "' has dtype " +
                             dtype_name(it->second.dtype()) + ", expected a float type");
  return it->second;
}

std::vector<double> as_double(const Tensor& t) {
  std::vector<float> f = t.dtype() == DType::F32 ? t.to_vector() : t.to(DType::F32).to_vector();
  return std::vector<double>(f.begin(), f.end());
}

Pool2dParams pool3(PoolKind kind, int stride, int pad) {
  Pool2dParams p;
  p.kind = kind, p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = stride, p.pad_h = p.pad_w = pad;
  return p;
}

Tensor pool_new(const Tensor& x, const Pool2dParams& p) {
  Tensor y = Tensor::empty(pool2d_output_shape(x.shape(), p), DType::F32, x.device());
  pool2d_forward(x, y, p);
  return y;
}

}  // namespace

std::map<std::string, Shape> InceptionFid::state_dict_shapes(int k) {
  if (k < 1 || k > 16 || (k & (k - 1)))
    throw std::invalid_argument("InceptionFid::state_dict_shapes: width divisor " + std::to_string(k) +
                                " is not one of 1, 2, 4, 8, 16");
  std::map<std::string, Shape> m;
  for (const Spec& s : topology(k)) {
    m[s.name + ".conv.weight"] = {s.cout, s.cin, s.kh, s.kw};
    for (const char* b : {".bn.weight", ".bn.bias", ".bn.running_mean", ".bn.running_var"}) m[s.name + b] = {s.cout};
  }
  return m;
}

InceptionFid InceptionFid::load(const std::string& path) {
  return InceptionFid(load_safetensors(path), path);
}

InceptionFid::InceptionFid(const std::map<std::string, Tensor>& sd, const std::string& source) {
  auto first = sd.find("Conv2d_1a_3x3.conv.weight");
  if (first == sd.end())
    throw std::runtime_error("Inception weights '" + source +
                             "': tensor 'Conv2d_1a_3x3.conv.weight' is missing (not a pytorch-fid Inception "
                             "state dict; make one with tools/convert_inception.py)");
  const int64_t c0 = first->second.size(0);
  if (c0 < 1 || 32 % c0 != 0 || (32 / c0) & (32 / c0 - 1) || 32 / c0 > 16)
    throw std::runtime_error("Inception weights '" + source + "': Conv2d_1a_3x3.conv.weight has shape " +
                             shape_str(first->second.shape()) + "; its output channels must be 32 / k, k in {1,2,4,8,16}");
  div_ = static_cast<int>(32 / c0);
  for (const Spec& s : topology(div_)) {
    const std::string p = s.name;
    const Tensor& w = need(sd, p + ".conv.weight", {s.cout, s.cin, s.kh, s.kw}, source);
    std::vector<double> gamma = as_double(need(sd, p + ".bn.weight", {s.cout}, source));
    std::vector<double> beta = as_double(need(sd, p + ".bn.bias", {s.cout}, source));
    std::vector<double> mean = as_double(need(sd, p + ".bn.running_mean", {s.cout}, source));
    std::vector<double> var = as_double(need(sd, p + ".bn.running_var", {s.cout}, source));
    std::vector<double> wd = as_double(w);
    Unit u;
    u.cin = s.cin, u.cout = s.cout, u.kh = s.kh, u.kw = s.kw, u.sh = s.sh, u.sw = s.sw, u.ph = s.ph, u.pw = s.pw;
    u.w = Tensor::empty({s.cout, s.cin, s.kh, s.kw});
    u.b = Tensor::empty({s.cout});
    const int64_t per = s.cin * s.kh * s.kw;
    for (int64_t o = 0; o < s.cout; ++o) {
      if (!(var[o] >= 0.0))
        throw std::runtime_error("Inception weights '" + source + "': " + p + ".bn.running_var[" +
                                 std::to_string(o) + "] is negative or NaN");
      const double scale = gamma[o] / std::sqrt(var[o] + kBnEps);
      for (int64_t i = 0; i < per; ++i) u.w.f32()[o * per + i] = static_cast<float>(wd[o * per + i] * scale);
      u.b.f32()[o] = static_cast<float>(beta[o] - mean[o] * scale);
    }
    units_.emplace(p, std::move(u));
  }
  if (auto fc = sd.find("fc.weight"); fc != sd.end()) {
    const Tensor& w = fc->second;
    if (w.dim() != 2 || w.size(1) != feature_dim() || w.size(0) < 2)
      throw std::runtime_error("Inception weights '" + source + "': tensor 'fc.weight' has shape " + shape_str(w.shape()) +
                               ", expected [C, " + std::to_string(feature_dim()) + "] (C = 1008 for the FID network)");
    fc_w_ = (w.dtype() == DType::F32 ? w : w.to(DType::F32)).contiguous().clone();
  }
}

const InceptionFid::Unit& InceptionFid::unit(const std::string& name) const {
  auto it = units_.find(name);
  if (it == units_.end()) throw std::logic_error("InceptionFid: no unit " + name);
  return it->second;
}

void InceptionFid::run(const std::string& name, const Tensor& x, const Tensor& y) const {
  const Unit& u = unit(name);
  Conv2dParams p;
  p.stride_h = u.sh, p.stride_w = u.sw, p.pad_h = u.ph, p.pad_w = u.pw, p.relu = true;
  p.tf32 = tf32_;
  conv2d_forward(x, u.w, u.b, y, p);
}

Tensor InceptionFid::run_new(const std::string& name, const Tensor& x) const {
  const Unit& u = unit(name);
  Conv2dParams p;
  p.stride_h = u.sh, p.stride_w = u.sw, p.pad_h = u.ph, p.pad_w = u.pw;
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), u.w.shape(), p), DType::F32, x.device());
  run(name, x, y);
  return y;
}

// Branch outputs are written straight into their channel range of the
// block's output (torch.cat order), so no concatenation copies are made.
Tensor InceptionFid::block_a(const std::string& p, const Tensor& x) const {
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  const int64_t c1 = unit(p + ".branch1x1").cout, c2 = unit(p + ".branch5x5_2").cout,
                c3 = unit(p + ".branch3x3dbl_3").cout, c4 = unit(p + ".branch_pool").cout;
  Tensor out = Tensor::empty({n, c1 + c2 + c3 + c4, h, w}, DType::F32, x.device());
  run(p + ".branch1x1", x, out.slice(1, 0, c1));
  run(p + ".branch5x5_2", run_new(p + ".branch5x5_1", x), out.slice(1, c1, c1 + c2));
  run(p + ".branch3x3dbl_3", run_new(p + ".branch3x3dbl_2", run_new(p + ".branch3x3dbl_1", x)),
      out.slice(1, c1 + c2, c1 + c2 + c3));
  // FID patch: TensorFlow's average pool does not count the zero padding.
  run(p + ".branch_pool", pool_new(x, pool3(PoolKind::AvgExcludePad, 1, 1)), out.slice(1, c1 + c2 + c3, c1 + c2 + c3 + c4));
  return out;
}

Tensor InceptionFid::block_b(const std::string& p, const Tensor& x) const {
  const Pool2dParams mp = pool3(PoolKind::Max, 2, 0);
  const Shape ps = pool2d_output_shape(x.shape(), mp);
  const int64_t c1 = unit(p + ".branch3x3").cout, c2 = unit(p + ".branch3x3dbl_3").cout, c3 = x.size(1);
  Tensor out = Tensor::empty({x.size(0), c1 + c2 + c3, ps[2], ps[3]}, DType::F32, x.device());
  run(p + ".branch3x3", x, out.slice(1, 0, c1));
  run(p + ".branch3x3dbl_3", run_new(p + ".branch3x3dbl_2", run_new(p + ".branch3x3dbl_1", x)),
      out.slice(1, c1, c1 + c2));
  pool2d_forward(x, out.slice(1, c1 + c2, c1 + c2 + c3), mp);
  return out;
}

Tensor InceptionFid::block_c(const std::string& p, const Tensor& x) const {
  const int64_t c1 = unit(p + ".branch1x1").cout, c2 = unit(p + ".branch7x7_3").cout,
                c3 = unit(p + ".branch7x7dbl_5").cout, c4 = unit(p + ".branch_pool").cout;
  Tensor out = Tensor::empty({x.size(0), c1 + c2 + c3 + c4, x.size(2), x.size(3)}, DType::F32, x.device());
  run(p + ".branch1x1", x, out.slice(1, 0, c1));
  run(p + ".branch7x7_3", run_new(p + ".branch7x7_2", run_new(p + ".branch7x7_1", x)), out.slice(1, c1, c1 + c2));
  Tensor t = run_new(p + ".branch7x7dbl_1", x);
  t = run_new(p + ".branch7x7dbl_2", t);
  t = run_new(p + ".branch7x7dbl_3", t);
  t = run_new(p + ".branch7x7dbl_4", t);
  run(p + ".branch7x7dbl_5", t, out.slice(1, c1 + c2, c1 + c2 + c3));
  run(p + ".branch_pool", pool_new(x, pool3(PoolKind::AvgExcludePad, 1, 1)), out.slice(1, c1 + c2 + c3, c1 + c2 + c3 + c4));
  return out;
}

Tensor InceptionFid::block_d(const std::string& p, const Tensor& x) const {
  const Pool2dParams mp = pool3(PoolKind::Max, 2, 0);
  const Shape ps = pool2d_output_shape(x.shape(), mp);
  const int64_t c1 = unit(p + ".branch3x3_2").cout, c2 = unit(p + ".branch7x7x3_4").cout, c3 = x.size(1);
  Tensor out = Tensor::empty({x.size(0), c1 + c2 + c3, ps[2], ps[3]}, DType::F32, x.device());
  run(p + ".branch3x3_2", run_new(p + ".branch3x3_1", x), out.slice(1, 0, c1));
  Tensor t = run_new(p + ".branch7x7x3_1", x);
  t = run_new(p + ".branch7x7x3_2", t);
  t = run_new(p + ".branch7x7x3_3", t);
  run(p + ".branch7x7x3_4", t, out.slice(1, c1, c1 + c2));
  pool2d_forward(x, out.slice(1, c1 + c2, c1 + c2 + c3), mp);
  return out;
}

Tensor InceptionFid::block_e(const std::string& p, const Tensor& x, bool max_pool) const {
  const int64_t c1 = unit(p + ".branch1x1").cout, c2 = unit(p + ".branch3x3_2a").cout,
                c3 = unit(p + ".branch3x3dbl_3a").cout, c4 = unit(p + ".branch_pool").cout;
  Tensor out = Tensor::empty({x.size(0), c1 + 2 * c2 + 2 * c3 + c4, x.size(2), x.size(3)}, DType::F32, x.device());
  int64_t at = 0;
  run(p + ".branch1x1", x, out.slice(1, at, at + c1));
  at += c1;
  Tensor t = run_new(p + ".branch3x3_1", x);
  run(p + ".branch3x3_2a", t, out.slice(1, at, at + c2));
  run(p + ".branch3x3_2b", t, out.slice(1, at + c2, at + 2 * c2));
  at += 2 * c2;
  t = run_new(p + ".branch3x3dbl_2", run_new(p + ".branch3x3dbl_1", x));
  run(p + ".branch3x3dbl_3a", t, out.slice(1, at, at + c3));
  run(p + ".branch3x3dbl_3b", t, out.slice(1, at + c3, at + 2 * c3));
  at += 2 * c3;
  // FID patch: Mixed_7b pools by average without padding, Mixed_7c by max
  // (as in the TensorFlow graph the FID weights come from).
  const Pool2dParams pp = pool3(max_pool ? PoolKind::Max : PoolKind::AvgExcludePad, 1, 1);
  run(p + ".branch_pool", pool_new(x, pp), out.slice(1, at, at + c4));
  return out;
}

void InceptionFid::network(const Tensor& x, const Tensor& out, Tensor* mixed_6d) const {
  Tensor t = run_new("Conv2d_1a_3x3", x);
  t = run_new("Conv2d_2a_3x3", t);
  t = run_new("Conv2d_2b_3x3", t);
  t = pool_new(t, pool3(PoolKind::Max, 2, 0));
  t = run_new("Conv2d_3b_1x1", t);
  t = run_new("Conv2d_4a_3x3", t);
  t = pool_new(t, pool3(PoolKind::Max, 2, 0));
  t = block_a("Mixed_5b", t);
  t = block_a("Mixed_5c", t);
  t = block_a("Mixed_5d", t);
  t = block_b("Mixed_6a", t);
  for (const char* b : {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"}) {
    t = block_c(b, t);
    if (mixed_6d && std::string(b) == "Mixed_6d") *mixed_6d = t;
  }
  t = block_d("Mixed_7a", t);
  t = block_e("Mixed_7b", t, false);
  t = block_e("Mixed_7c", t, true);
  global_avg_pool2d(t, out);
}

void InceptionFid::to(Device device) {
  for (auto& [name, u] : units_) u.w = u.w.to(device), u.b = u.b.to(device);
  device_ = device;
  ones_ = Tensor();
  if (device_.is_cpu()) tf32_ = false;
}

void InceptionFid::set_tf32(bool on) {
  if (on && device_.is_cpu())
    throw std::invalid_argument("InceptionFid::set_tf32: TF32 needs the network on a CUDA device (the CPU computes in fp32)");
  tf32_ = on;
}

void InceptionFid::features(const Tensor& images, const Tensor& out) const {
  const auto here = [&](const Tensor& t) { return t.device().is_cpu() || t.device() == device_; };
  const std::string where = device_.is_cpu() ? "CPU" : "CPU or " + device_.str();
  if (images.dtype() != DType::F32 || !here(images) || images.dim() != 4 || images.size(1) != 3 ||
      images.size(0) < 1)
    throw std::invalid_argument("InceptionFid::features: images " + images.str() + " must be " + where +
                                " F32 [N, 3, H, W]");
  if (out.dtype() != DType::F32 || out.shape() != Shape{images.size(0), feature_dim()} || !out.is_contiguous() ||
      !here(out))
    throw std::invalid_argument("InceptionFid::features: out " + out.str() + " must be contiguous " + where + " F32 [" +
                                std::to_string(images.size(0)) + ", " + std::to_string(feature_dim()) + "]");
  if (!device_.is_cpu()) return features_on_device(images, out);
  const Tensor src = images.contiguous();
  Tensor x = Tensor::empty({src.size(0), 3, kSize, kSize});
  if (src.size(2) == kSize && src.size(3) == kSize) x.copy_from(src);
  else resize_bilinear(src, x);
  float* p = x.f32();
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = 2.f * p[i] - 1.f;
  network(x, out);
}

// The host path's steps on the device: upload, resize (or copy), 2x - 1,
// network, download; each the same float operations as on the host except
// the convolutions' summation order.
void InceptionFid::features_on_device(const Tensor& images, const Tensor& out) const {
  const Tensor src = images.contiguous().to(device_);
  Tensor x = Tensor::empty({src.size(0), 3, kSize, kSize}, DType::F32, device_);
  if (src.size(2) == kSize && src.size(3) == kSize) x.copy_from(src);
  else resize_bilinear(src, x);
  if (!ones_.defined() || ones_.numel() < x.numel()) ones_ = Tensor::full({x.numel()}, 1.f, device_);
  axpby(2.f, x, -1.f, ones_.slice(0, 0, x.numel()).view(x.shape()), x);
  const Tensor o = out.device() == device_ ? out : Tensor::empty(out.shape(), DType::F32, device_);
  network(x, o);
  if (o.device() != out.device()) {
    Tensor dst = out;  // a handle on the caller's storage
    dst.copy_from(o);
  }
}

void InceptionFid::forward(const Tensor& x, const Tensor& pool, const Tensor& spatial) const {
  const auto here = [&](const Tensor& t) { return t.device().is_cpu() || t.device() == device_; };
  if (x.dtype() != DType::F32 || !here(x) || x.dim() != 4 || x.size(1) != 3 || x.size(2) != kSize ||
      x.size(3) != kSize || x.size(0) < 1)
    throw std::invalid_argument("InceptionFid::forward: input " + x.str() + " must be F32 [N, 3, 299, 299]");
  const int64_t n = x.size(0);
  if (pool.dtype() != DType::F32 || pool.shape() != Shape{n, feature_dim()} || !pool.is_contiguous() || !here(pool))
    throw std::invalid_argument("InceptionFid::forward: pool " + pool.str() + " must be contiguous F32 [" +
                                std::to_string(n) + ", " + std::to_string(feature_dim()) + "]");
  if (spatial.defined() && (spatial.dtype() != DType::F32 || spatial.shape() != Shape{n, spatial_dim()} ||
                            !spatial.is_contiguous() || !spatial.device().is_cpu()))
    throw std::invalid_argument("InceptionFid::forward: spatial " + spatial.str() + " must be contiguous host F32 [" +
                                std::to_string(n) + ", " + std::to_string(spatial_dim()) + "]");
  const Tensor in = x.device() == device_ ? x.contiguous() : x.contiguous().to(device_);
  const Tensor o = pool.device() == device_ ? pool : Tensor::empty(pool.shape(), DType::F32, device_);
  Tensor m6;
  network(in, o, spatial.defined() ? &m6 : nullptr);
  if (o.device() != pool.device()) {
    Tensor dst = pool;
    dst.copy_from(o);
  }
  if (!spatial.defined()) return;
  // channels [0, 7) of Mixed_6d = mixed_6/conv[..., :7], NCHW -> (h, w, c).
  const Tensor s = m6.slice(1, 0, kSpatialChannels).contiguous().to(Device::cpu());
  const int64_t hw = kSpatialSize * kSpatialSize;
  if (s.size(2) != kSpatialSize || s.size(3) != kSpatialSize)
    throw std::logic_error("InceptionFid::forward: Mixed_6d is " + shape_str(s.shape()) + ", expected 17x17");
  const float* src = s.f32();
  float* dst = spatial.f32();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t c = 0; c < kSpatialChannels; ++c)
        dst[(b * hw + p) * kSpatialChannels + c] = src[(b * kSpatialChannels + c) * hw + p];
}

void InceptionFid::logits(const Tensor& pool, const Tensor& out) const {
  if (!has_logits()) throw std::logic_error("InceptionFid::logits: the weights have no fc.weight");
  const int64_t n = pool.size(0), d = feature_dim(), c = num_logits();
  if (pool.dtype() != DType::F32 || pool.shape() != Shape{n, d} || !pool.device().is_cpu() ||
      out.dtype() != DType::F32 || out.shape() != Shape{n, c} || !out.is_contiguous() || !out.device().is_cpu())
    throw std::invalid_argument("InceptionFid::logits: pool " + pool.str() + " and out " + out.str() +
                                " must be host F32 [N, D] and contiguous [N, C]");
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Tensor pc = pool.contiguous();
  Eigen::Map<const MatF> p(pc.f32(), n, d), w(fc_w_.f32(), c, d);
  Eigen::Map<MatF> o(out.f32(), n, c);
  o.noalias() = p * w.transpose();
}

Tensor u8_nhwc_to_unit_nchw(const Tensor& im) {
  if (im.dtype() != DType::U8 || im.dim() != 4 || im.size(3) != 3 || !im.device().is_cpu())
    throw std::invalid_argument("u8_nhwc_to_unit_nchw: images " + im.str() + " must be CPU U8 [N, H, W, 3]");
  const Tensor c = im.contiguous();
  const int64_t n = c.size(0), h = c.size(1), w = c.size(2);
  Tensor out = Tensor::empty({n, 3, h, w});
  const uint8_t* s = c.u8();
  float* d = out.f32();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int ch = 0; ch < 3; ++ch)
          d[((b * 3 + ch) * h + y) * w + x] = static_cast<float>(s[((b * h + y) * w + x) * 3 + ch]) / 255.f;
  return out;
}

void InceptionFid::features_u8(const Tensor& images_nhwc, const Tensor& out) const {
  features(u8_nhwc_to_unit_nchw(images_nhwc), out);
}

}  // namespace vt
