#include "vae/autoencoder_kl.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "core/safetensors.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/upsample.h"

namespace vt {
namespace fs = std::filesystem;

AutoencoderKL AutoencoderKL::load(const std::string& path, Device device, VaePrecision precision) {
  std::error_code ec;
  fs::path weights, config;
  if (fs::is_directory(path, ec)) {
    weights = fs::path(path) / "diffusion_pytorch_model.safetensors";
    config = fs::path(path) / "config.json";
  } else if (fs::is_regular_file(path, ec)) {
    weights = path;
    config = fs::path(path).parent_path() / "config.json";
  } else {
    throw std::runtime_error("VAE '" + path +
                             "': no such folder or file (give a diffusers AutoencoderKL folder with "
                             "diffusion_pytorch_model.safetensors and config.json, e.g. stabilityai/sd-vae-ft-ema)");
  }
  if (!fs::is_regular_file(weights, ec))
    throw std::runtime_error("VAE '" + path + "': weights file '" + weights.string() + "' is missing");
  AutoencoderKLConfig cfg;
  if (fs::is_regular_file(config, ec)) cfg = AutoencoderKLConfig::from_json_file(config.string());
  AutoencoderKL vae(cfg, load_safetensors(weights.string()), weights.string());
  vae.precision_ = precision;
  vae.to(device);  // checks the precision against the device; one upload
  return vae;
}

AutoencoderKL::AutoencoderKL(const AutoencoderKLConfig& config, std::map<std::string, Tensor> state_dict,
                             const std::string& source)
    : cfg_(config) {
  cfg_.validate(source);
  VaeWeights w(std::move(state_dict), source);
  build(w);
  w.expect_all_used();
  place();  // the CPU, fp32: the forward's parameters are the masters themselves
}

AutoencoderKL::AutoencoderKL(const AutoencoderKLConfig& config) : cfg_(config) { cfg_.validate("(shapes)"); }

std::map<std::string, Shape> AutoencoderKL::state_dict_shapes(const AutoencoderKLConfig& config) {
  AutoencoderKL probe(config);
  VaeWeights r = VaeWeights::recorder();
  probe.build(r);
  return r.recorded();
}

void AutoencoderKL::build(VaeWeights& w) {
  const auto& ch = cfg_.block_out_channels;
  const int64_t levels = static_cast<int64_t>(ch.size()), g = cfg_.norm_num_groups, lat = cfg_.latent_channels;
  using K = Conv2dLayer::Kind;

  enc_.conv_in = Conv2dLayer::load(w, "encoder.conv_in", cfg_.in_channels, ch[0], K::Same3x3);
  int64_t cin = ch[0];
  enc_.resnets.resize(levels);
  for (int64_t i = 0; i < levels; ++i) {
    const std::string p = "encoder.down_blocks." + std::to_string(i);
    for (int64_t j = 0; j < cfg_.layers_per_block; ++j) {
      enc_.resnets[i].push_back(ResnetBlock2D::load(w, p + ".resnets." + std::to_string(j), cin, ch[i], g));
      cin = ch[i];
    }
    if (i + 1 < levels) enc_.downsamplers.push_back(Conv2dLayer::load(w, p + ".downsamplers.0.conv", ch[i], ch[i], K::Downsample));
  }
  enc_.mid = MidBlock2D::load(w, "encoder.mid_block", ch.back(), g, cfg_.mid_block_add_attention);
  enc_.norm_out = GroupNormLayer::load(w, "encoder.conv_norm_out", ch.back(), g);
  enc_.conv_out = Conv2dLayer::load(w, "encoder.conv_out", ch.back(), 2 * lat, K::Same3x3);  // double_z
  has_quant_ = cfg_.use_quant_conv;
  if (has_quant_) quant_conv_ = Conv2dLayer::load(w, "quant_conv", 2 * lat, 2 * lat, K::Pointwise);

  has_post_quant_ = cfg_.use_post_quant_conv;
  if (has_post_quant_) post_quant_conv_ = Conv2dLayer::load(w, "post_quant_conv", lat, lat, K::Pointwise);
  dec_.conv_in = Conv2dLayer::load(w, "decoder.conv_in", lat, ch.back(), K::Same3x3);
  dec_.mid = MidBlock2D::load(w, "decoder.mid_block", ch.back(), g, cfg_.mid_block_add_attention);
  cin = ch.back();
  dec_.resnets.resize(levels);
  for (int64_t i = 0; i < levels; ++i) {
    const int64_t cout = ch[levels - 1 - i];
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    for (int64_t j = 0; j < cfg_.layers_per_block + 1; ++j) {
      dec_.resnets[i].push_back(ResnetBlock2D::load(w, p + ".resnets." + std::to_string(j), cin, cout, g));
      cin = cout;
    }
    if (i + 1 < levels) dec_.upsamplers.push_back(Conv2dLayer::load(w, p + ".upsamplers.0.conv", cout, cout, K::Same3x3));
  }
  dec_.norm_out = GroupNormLayer::load(w, "decoder.conv_norm_out", ch[0], g);
  dec_.conv_out = Conv2dLayer::load(w, "decoder.conv_out", ch[0], cfg_.out_channels, K::Same3x3);
}

namespace {

void check_input(const char* what, const char* name, const Tensor& x, int64_t channels) {
  if (!x.defined() || x.dtype() != DType::F32 || x.dim() != 4 || x.size(1) != channels || x.size(2) < 1 ||
      x.size(3) < 1)
    throw std::invalid_argument(std::string("AutoencoderKL::") + what + ": " + name + " " +
                                (x.defined() ? x.str() : std::string("(undefined)")) + " must be F32 [N, " +
                                std::to_string(channels) + ", H, W]");
}

// The VAE's GEMMs (the mid-block attention) in its own precision for the
// duration of one encode/decode on CUDA; the process-wide setting is
// restored after. On the CPU (always fp32) the setting is left alone, so a
// host-side VAE never touches what GPU work in another thread uses.
class MatmulTf32Scope {
 public:
  MatmulTf32Scope(Device device, VaePrecision p) : active_(device.is_cuda()), prev_(matmul_tf32()) {
    if (active_) set_matmul_tf32(p == VaePrecision::Tf32);
  }
  ~MatmulTf32Scope() {
    if (active_) set_matmul_tf32(prev_);
  }
  MatmulTf32Scope(const MatmulTf32Scope&) = delete;
  MatmulTf32Scope& operator=(const MatmulTf32Scope&) = delete;

 private:
  bool active_, prev_;
};

void check_precision(VaePrecision p, Device device) {
  if (p == VaePrecision::Bf16 && device.is_cpu())
    throw std::invalid_argument(
        "vae.precision: 'bf16' needs a CUDA device (the VAE on the CPU computes in fp32)");
  if (p == VaePrecision::Tf32 && device.is_cpu())
    throw std::invalid_argument("vae.precision: 'tf32' needs a CUDA device (the VAE on the CPU computes in fp32)");
}

// x (F32, any device) on `device` in the activation dtype of precision p:
// BF16 for bf16 (rounded once, as diffusers' caller's .to(torch.bfloat16)).
Tensor entry(const Tensor& x, Device device, VaePrecision p) {
  Tensor d = x.contiguous().to(device);
  if (p != VaePrecision::Bf16) return d;
  Tensor b = Tensor::empty(d.shape(), DType::BF16, device);
  convert(d, b);
  return b;
}
// A result back in F32 (bf16 values widened exactly).
Tensor exit_f32(const Tensor& y) {
  if (y.dtype() == DType::F32) return y;
  Tensor f = Tensor::empty(y.shape(), DType::F32, y.device());
  convert(y.contiguous(), f);
  return f;
}

}  // namespace

void AutoencoderKL::set_precision(VaePrecision precision) {
  check_precision(precision, device_);
  precision_ = precision;
  place();
}

void AutoencoderKL::to(Device device) {
  check_precision(precision_, device);
  device_ = device;
  place();
}

void AutoencoderKL::place() {
  const VaePrecision pr = precision_;
  enc_.conv_in.to(device_, pr);
  for (auto& level : enc_.resnets)
    for (auto& r : level) r.to(device_, pr);
  for (auto& d : enc_.downsamplers) d.to(device_, pr);
  enc_.mid.to(device_, pr);
  enc_.norm_out.to(device_, pr);
  enc_.conv_out.to(device_, pr);
  dec_.conv_in.to(device_, pr);
  dec_.mid.to(device_, pr);
  for (auto& level : dec_.resnets)
    for (auto& r : level) r.to(device_, pr);
  for (auto& u : dec_.upsamplers) u.to(device_, pr);
  dec_.norm_out.to(device_, pr);
  dec_.conv_out.to(device_, pr);
  if (has_quant_) quant_conv_.to(device_, pr);
  if (has_post_quant_) post_quant_conv_.to(device_, pr);
}

AutoencoderKL::Posterior AutoencoderKL::encode(const Tensor& images) const {
  check_input("encode", "images", images, cfg_.in_channels);
  MatmulTf32Scope gemm_math(device_, precision_);
  Tensor h = enc_.conv_in(entry(images, device_, precision_));
  for (size_t i = 0; i < enc_.resnets.size(); ++i) {
    for (const auto& r : enc_.resnets[i]) h = r(h);
    if (i < enc_.downsamplers.size()) h = enc_.downsamplers[i](h);
  }
  h = enc_.mid(h);
  enc_.norm_out.apply_inplace(h, true);
  h = enc_.conv_out(h);
  if (has_quant_) h = quant_conv_(h);
  const int64_t lat = cfg_.latent_channels;
  Posterior p;
  p.mean = exit_f32(h.slice(1, 0, lat).contiguous());
  Tensor logvar = h.slice(1, lat, 2 * lat).contiguous();
  clamp(logvar, -30.f, 20.f, logvar);  // in the activation dtype, as diffusers
  p.logvar = exit_f32(logvar);
  return p;
}

Tensor AutoencoderKL::decode(const Tensor& z) const {
  check_input("decode", "z", z, cfg_.latent_channels);
  MatmulTf32Scope gemm_math(device_, precision_);
  const Tensor zd = entry(z, device_, precision_);
  Tensor h = has_post_quant_ ? post_quant_conv_(zd) : zd;
  h = dec_.mid(dec_.conv_in(h));
  for (size_t i = 0; i < dec_.resnets.size(); ++i) {
    for (const auto& r : dec_.resnets[i]) h = r(h);
    if (i < dec_.upsamplers.size()) {
      Tensor up = Tensor::empty({h.size(0), h.size(1), 2 * h.size(2), 2 * h.size(3)}, h.dtype(), h.device());
      upsample_nearest2x(h, up);
      h = dec_.upsamplers[i](up);
    }
  }
  dec_.norm_out.apply_inplace(h, true);
  return exit_f32(dec_.conv_out(h));
}

}  // namespace vt
