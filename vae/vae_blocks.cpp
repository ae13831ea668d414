#include "vae/vae_blocks.h"

#include <stdexcept>
#include <utility>

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/groupnorm.h"
#include "kernels/matmul.h"

namespace vt {
namespace {

constexpr float kVaeEps = 1e-6f;  // resnet_eps and the attention group_norm eps of AutoencoderKL

// A weight as the forward uses it on `device`: BF16 for bf16, else F32.
Tensor run_weight_of(const Tensor& master, Device device, VaePrecision p) {
  return p == VaePrecision::Bf16 ? master.to(DType::BF16).to(device) : master.to(device);
}
// A bias / affine parameter: F32, holding bf16 values for bf16 (what a bf16
// module's parameter is, widened exactly to the fp32 the kernels take).
Tensor run_bias_of(const Tensor& master, Device device, VaePrecision p) {
  return p == VaePrecision::Bf16 ? master.to(DType::BF16).to(DType::F32).to(device) : master.to(device);
}

// New attention parameter names and the ones diffusers used before 0.14.
const std::pair<const char*, const char*> kDeprecatedAttention[] = {
    {".to_q.", ".query."}, {".to_k.", ".key."}, {".to_v.", ".value."}, {".to_out.0.", ".proj_attn."}};

}  // namespace

VaeWeights::VaeWeights(std::map<std::string, Tensor> tensors, std::string source)
    : tensors_(std::move(tensors)), source_(std::move(source)) {}

VaeWeights VaeWeights::recorder() {
  VaeWeights w({}, "(recorder)");
  w.recording_ = true;
  return w;
}

Tensor VaeWeights::take(const std::string& name, const Shape& shape) {
  if (recording_) {
    if (!recorded_.emplace(name, shape).second)
      throw std::logic_error("VaeWeights::recorder: tensor '" + name + "' asked twice");
    return Tensor::zeros(shape);
  }
  std::string found = name;
  if (!tensors_.count(found)) {
    for (const auto& [now, old] : kDeprecatedAttention) {
      const size_t at = name.find(now);
      if (at == std::string::npos) continue;
      const std::string alt = name.substr(0, at) + old + name.substr(at + std::string(now).size());
      if (tensors_.count(alt)) found = alt;
    }
  }
  auto it = tensors_.find(found);
  if (it == tensors_.end())
    throw std::runtime_error("VAE weights '" + source_ + "': tensor '" + name + "' is missing (expected shape " +
                             shape_str(shape) + ")");
  if (used_.count(found))
    throw std::runtime_error("VAE weights '" + source_ + "': tensor '" + found + "' is used twice");
  Tensor t = it->second;
  // Old checkpoints stored the attention projections as 1x1 convolutions.
  if (found != name && t.dim() == 4 && shape.size() == 2 && t.size(2) == 1 && t.size(3) == 1)
    t = t.contiguous().view({t.size(0), t.size(1)});
  if (t.shape() != shape)
    throw std::runtime_error("VAE weights '" + source_ + "': tensor '" + found + "' has shape " + shape_str(t.shape()) +
                             ", expected " + shape_str(shape) + " (does config.json match the checkpoint?)");
  if (t.dtype() != DType::F32 && t.dtype() != DType::F16 && t.dtype() != DType::BF16)
    throw std::runtime_error("VAE weights '" + source_ + "': tensor '" + found + "' has dtype " +
                             dtype_name(t.dtype()) + ", expected F32, F16 or BF16");
  used_.insert(found);
  return t.dtype() == DType::F32 ? t.contiguous() : t.contiguous().to(DType::F32);
}

void VaeWeights::expect_all_used() const {
  if (recording_) return;
  std::string extra;
  int count = 0;
  for (const auto& kv : tensors_)
    if (!used_.count(kv.first)) {
      if (count < 5) extra += (count ? ", '" : "'") + kv.first + "'";
      ++count;
    }
  if (count)
    throw std::runtime_error("VAE weights '" + source_ + "': " + std::to_string(count) +
                             " unexpected tensor(s) not in this AutoencoderKL configuration: " + extra +
                             (count > 5 ? ", ..." : ""));
}

Conv2dLayer Conv2dLayer::load(VaeWeights& w, const std::string& prefix, int64_t cin, int64_t cout, Kind kind) {
  Conv2dLayer c;
  const int64_t k = kind == Kind::Pointwise ? 1 : 3;
  c.weight = w.take(prefix + ".weight", {cout, cin, k, k});
  c.bias = w.take(prefix + ".bias", {cout});
  c.params.frozen_weights = true;  // the VAE is frozen
  if (kind == Kind::Same3x3) {
    c.params.pad_h = c.params.pad_w = 1;
    c.params.cpu_winograd = true;  // the CPU VAE's time is in these convolutions
  }
  if (kind == Kind::Downsample) {
    // Downsample2D(padding=0): F.pad(x, (0, 1, 0, 1)), then 3x3 stride 2.
    c.params.stride_h = c.params.stride_w = 2;
    c.params.pad_h_end = c.params.pad_w_end = 1;
  }
  return c;
}

Tensor Conv2dLayer::operator()(const Tensor& x) const {
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), weight.shape(), params), x.dtype(), x.device());
  conv2d_forward(x, run_weight, run_bias, y, params);
  return y;
}

void Conv2dLayer::to(Device device, VaePrecision precision) {
  run_weight = run_weight_of(weight, device, precision);
  run_bias = run_bias_of(bias, device, precision);
  params.tf32 = precision == VaePrecision::Tf32;
}

GroupNormLayer GroupNormLayer::load(VaeWeights& w, const std::string& prefix, int64_t channels, int64_t groups) {
  GroupNormLayer g;
  g.weight = w.take(prefix + ".weight", {channels});
  g.bias = w.take(prefix + ".bias", {channels});
  g.groups = groups;
  g.eps = kVaeEps;
  return g;
}

Tensor GroupNormLayer::operator()(const Tensor& x, bool silu) const {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  groupnorm_forward(x, groups, run_weight, run_bias, eps, y, silu);
  return y;
}

void GroupNormLayer::apply_inplace(const Tensor& x, bool silu) const {
  groupnorm_forward(x, groups, run_weight, run_bias, eps, x, silu);
}

void GroupNormLayer::to(Device device, VaePrecision precision) {
  run_weight = run_bias_of(weight, device, precision);
  run_bias = run_bias_of(bias, device, precision);
}

ResnetBlock2D ResnetBlock2D::load(VaeWeights& w, const std::string& p, int64_t cin, int64_t cout, int64_t groups) {
  ResnetBlock2D r;
  r.norm1 = GroupNormLayer::load(w, p + ".norm1", cin, groups);
  r.conv1 = Conv2dLayer::load(w, p + ".conv1", cin, cout, Conv2dLayer::Kind::Same3x3);
  r.norm2 = GroupNormLayer::load(w, p + ".norm2", cout, groups);
  r.conv2 = Conv2dLayer::load(w, p + ".conv2", cout, cout, Conv2dLayer::Kind::Same3x3);
  r.has_shortcut = cin != cout;  // diffusers: use_in_shortcut = in_channels != out_channels
  if (r.has_shortcut) r.conv_shortcut = Conv2dLayer::load(w, p + ".conv_shortcut", cin, cout, Conv2dLayer::Kind::Pointwise);
  return r;
}

Tensor ResnetBlock2D::operator()(const Tensor& x) const {
  Tensor h = conv1(norm1(x, true));
  norm2.apply_inplace(h, true);
  h = conv2(h);
  add(has_shortcut ? conv_shortcut(x) : x, h, h);  // output_scale_factor 1
  return h;
}

void ResnetBlock2D::to(Device device, VaePrecision precision) {
  norm1.to(device, precision);
  norm2.to(device, precision);
  conv1.to(device, precision);
  conv2.to(device, precision);
  if (has_shortcut) conv_shortcut.to(device, precision);
}

MidAttention MidAttention::load(VaeWeights& w, const std::string& p, int64_t c, int64_t groups) {
  MidAttention a;
  a.group_norm = GroupNormLayer::load(w, p + ".group_norm", c, groups);
  a.qkv_weight = Tensor::empty({3 * c, c});
  a.qkv_bias = Tensor::empty({3 * c});
  const char* names[3] = {".to_q", ".to_k", ".to_v"};
  for (int i = 0; i < 3; ++i) {
    a.qkv_weight.slice(0, i * c, (i + 1) * c).copy_from(w.take(p + names[i] + ".weight", {c, c}));
    a.qkv_bias.slice(0, i * c, (i + 1) * c).copy_from(w.take(p + names[i] + ".bias", {c}));
  }
  a.to_out.weight = w.take(p + ".to_out.0.weight", {c, c}).view({c, c, 1, 1});
  a.to_out.bias = w.take(p + ".to_out.0.bias", {c});
  return a;
}

Tensor MidAttention::operator()(const Tensor& x) const {
  const int64_t n = x.size(0), c = x.size(1), t = x.size(2) * x.size(3);
  const Device dev = x.device();
  const DType io = x.dtype();  // F32, or BF16 (q, k, v, probabilities and output bf16)
  const Tensor hn = group_norm(x, false);
  // Tokens are the H*W positions: qkv[b] [T, 3C] = hn[b]^T W_qkv^T + b_qkv,
  // read straight from the channel-major activations (no transpose copy).
  Tensor qkv = Tensor::empty({n, t, 3 * c}, io, dev);
  for (int64_t b = 0; b < n; ++b)
    matmul(hn.select(0, b).view({c, t}), true, run_qkv_weight, true, qkv.select(0, b), 1.f, 0.f, run_qkv_bias);
  Tensor attn = Tensor::empty({n, t, c}, io, dev);
  attention_forward(qkv, 1, attn, Tensor());  // one head of width C: scale C^-1/2 as diffusers
  // to_out.0 back into channel-major layout, bias fused: y [N, C, T, 1] from
  // attn read as [N, C, T, 1] with strides (T C, 1, C, 1).
  Tensor y = Tensor::empty(x.shape(), io, dev);
  conv2d_forward(attn.view({n, t, c, 1}).transpose(1, 2), to_out.run_weight, to_out.run_bias,
                 y.view({n, c, t, 1}), to_out.params);
  add(x, y, y);  // residual connection; rescale_output_factor 1
  return y;
}

void MidAttention::to(Device device, VaePrecision precision) {
  group_norm.to(device, precision);
  run_qkv_weight = run_weight_of(qkv_weight, device, precision);
  run_qkv_bias = run_bias_of(qkv_bias, device, precision);
  to_out.to(device, precision);
}

MidBlock2D MidBlock2D::load(VaeWeights& w, const std::string& p, int64_t c, int64_t groups, bool attention) {
  MidBlock2D m;
  m.resnet0 = ResnetBlock2D::load(w, p + ".resnets.0", c, c, groups);
  m.has_attention = attention;
  if (attention) m.attention = MidAttention::load(w, p + ".attentions.0", c, groups);
  m.resnet1 = ResnetBlock2D::load(w, p + ".resnets.1", c, c, groups);
  return m;
}

Tensor MidBlock2D::operator()(const Tensor& x) const {
  Tensor h = resnet0(x);
  if (has_attention) h = attention(h);
  return resnet1(h);
}

void MidBlock2D::to(Device device, VaePrecision precision) {
  resnet0.to(device, precision);
  if (has_attention) attention.to(device, precision);
  resnet1.to(device, precision);
}

}  // namespace vt
