// The building blocks of diffusers' AutoencoderKL, forward only (the VAE is
// frozen: DiT trains on its latents and decodes its samples with it):
//   Conv2dLayer   nn.Conv2d (3x3 padding 1, 1x1, or Downsample2D's stride-2
//                 3x3 after F.pad(x, (0, 1, 0, 1)))
//   GroupNormLayer nn.GroupNorm(num_groups, C, eps=1e-6, affine=True)
//   ResnetBlock2D diffusers/models/resnet.py ResnetBlock2D without temb:
//                 h = conv1(silu(norm1(x))); h = conv2(silu(norm2(h)));
//                 out = (conv_shortcut(x) if C_in != C_out else x) + h
//   MidAttention  diffusers/models/attention_processor.py Attention as
//                 UNetMidBlock2D builds it (heads 1, dim_head C, group_norm,
//                 to_q/to_k/to_v/to_out.0 with bias, residual connection,
//                 rescale_output_factor 1): x + to_out(softmax(q k^T / sqrt(C)) v)
//                 over the H*W positions of each image. On CUDA the attention
//                 of width C > 128 (the VAE's 512) runs kernels/attention.h's
//                 probabilities path (cuBLAS GEMMs and a softmax kernel): the
//                 flash kernel takes head_dim <= 128.
//   MidBlock2D    UNetMidBlock2D: resnets.0, attentions.0 (optional), resnets.1
// Activations are [N, C, H, W] contiguous tensors on the device of the
// parameters (CPU or CUDA: one code path, the ops of kernels/ dispatch),
// F32, or BF16 for precision bf16 (CUDA only); every intermediate is
// allocated on the input's device in the input's dtype.
// Parameters: `weight`, `bias` (and MidAttention's qkv_*) are the F32
// masters as loaded, kept on the host; to(device, precision) derives what
// the forward uses (run_*: one upload; the blocks are then used on that
// device) and sets the convolutions' Conv2dParams::tf32 for tf32:
//   fp32, tf32  the masters uploaded as they are;
//   bf16        diffusers' vae.to(torch.bfloat16): convolution and linear
//               weights as BF16 tensors; biases and GroupNorm affine
//               parameters rounded to bf16 values but held as F32 (the
//               kernels take fp32 biases; the numbers are bf16's).
// Re-deriving from the masters lets a model switch precisions without
// compounding roundings.
//
// Parameters are taken by their diffusers state-dict names from a
// VaeWeights, which checks each shape and dtype and, at the end, that no
// tensor of the checkpoint was left unused (a strict load).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/conv.h"
#include "vae/vae_precision.h"

namespace vt {

// A checkpoint's tensors being consumed by name. Errors are
// std::runtime_error "VAE weights '<source>': tensor '<name>' ...".
class VaeWeights {
 public:
  VaeWeights(std::map<std::string, Tensor> tensors, std::string source);
  // A source that holds nothing and records what is asked of it: take()
  // returns zeros of the asked shape and notes (name, shape), so a loader
  // run against it lists the state dict a configuration reads
  // (AutoencoderKL::state_dict_shapes).
  static VaeWeights recorder();
  const std::map<std::string, Shape>& recorded() const { return recorded_; }
  // The tensor `name` as contiguous F32 (F16/BF16 are converted), which must
  // have `shape`. Deprecated attention names of old diffusers checkpoints
  // (query/key/value/proj_attn, as the sd-vae-ft-* files on the Hub still
  // use) are accepted for to_q/to_k/to_v/to_out.0, as diffusers'
  // _convert_deprecated_attention_blocks does, including 1x1-conv shapes.
  Tensor take(const std::string& name, const Shape& shape);
  // Throws naming the unused tensors (up to five) when any is left.
  void expect_all_used() const;
  const std::string& source() const { return source_; }

 private:
  std::map<std::string, Tensor> tensors_;
  std::set<std::string> used_;
  std::string source_;
  bool recording_ = false;
  std::map<std::string, Shape> recorded_;
};

struct Conv2dLayer {
  Tensor weight, bias;          // [O, C, K, K], [O] F32 masters (host)
  Tensor run_weight, run_bias;  // on the device: weight F32 or BF16, bias F32 (see above)
  Conv2dParams params;
  // kind: 3x3 "same" convolution, 1x1, or diffusers' Downsample2D conv.
  enum class Kind { Same3x3, Pointwise, Downsample };
  static Conv2dLayer load(VaeWeights& w, const std::string& prefix, int64_t cin, int64_t cout, Kind kind);
  Tensor operator()(const Tensor& x) const;
  int64_t out_channels() const { return weight.size(0); }
  void to(Device device, VaePrecision precision);
};

struct GroupNormLayer {
  Tensor weight, bias;          // [C] F32 masters (host)
  Tensor run_weight, run_bias;  // [C] F32 on the device (bf16 values for bf16)
  int64_t groups = 32;
  float eps = 1e-6f;
  static GroupNormLayer load(VaeWeights& w, const std::string& prefix, int64_t channels, int64_t groups);
  // y = norm(x) (then SiLU when silu), into a new tensor.
  Tensor operator()(const Tensor& x, bool silu) const;
  // The same, overwriting x (saves one activation-sized buffer).
  void apply_inplace(const Tensor& x, bool silu) const;
  void to(Device device, VaePrecision precision);
};

struct ResnetBlock2D {
  GroupNormLayer norm1, norm2;
  Conv2dLayer conv1, conv2;
  bool has_shortcut = false;
  Conv2dLayer conv_shortcut;
  static ResnetBlock2D load(VaeWeights& w, const std::string& prefix, int64_t cin, int64_t cout, int64_t groups);
  Tensor operator()(const Tensor& x) const;
  void to(Device device, VaePrecision precision);
};

struct MidAttention {
  GroupNormLayer group_norm;
  Tensor qkv_weight, qkv_bias;  // to_q/to_k/to_v stacked: [3C, C], [3C] F32 masters (host)
  Tensor run_qkv_weight, run_qkv_bias;  // on the device: F32 or BF16 weight, F32 bias
  // to_out.0 ([C, C] Linear) as the 1x1 convolution it was in old diffusers
  // checkpoints (proj_attn): it reads the token-major attention output
  // [N, T, C] as channels-last [N, C, T, 1] and writes channel-major
  // activations with the bias fused, on either device, no transpose copy.
  Conv2dLayer to_out;
  static MidAttention load(VaeWeights& w, const std::string& prefix, int64_t channels, int64_t groups);
  Tensor operator()(const Tensor& x) const;
  void to(Device device, VaePrecision precision);
};

struct MidBlock2D {
  ResnetBlock2D resnet0, resnet1;
  bool has_attention = true;
  MidAttention attention;
  static MidBlock2D load(VaeWeights& w, const std::string& prefix, int64_t channels, int64_t groups, bool attention);
  Tensor operator()(const Tensor& x) const;
  void to(Device device, VaePrecision precision);
};

}  // namespace vt
