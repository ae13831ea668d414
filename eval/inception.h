// Inception-v3 feature extractor for FID, exactly pytorch-fid's FID variant
// (github.com/mseitzer/pytorch-fid, src/pytorch_fid/inception.py:
// fid_inception_v3 with FIDInceptionA/C/E_1/E_2, InceptionV3 with
// output_blocks=[3], resize_input and normalize_input) — docs/recipes.md §9:
//   uint8 RGB -> v / 255 -> bilinear resize to 299x299 (align_corners=False,
//   no antialias; skipped when already 299x299, where it is the identity)
//   -> 2x - 1 -> Conv2d_1a .. Mixed_7c -> global average pool -> [N, 2048].
// Every BasicConv2d is conv (no bias) + BatchNorm (eps 1e-3, running stats)
// + ReLU; the BatchNorm is folded into the conv weights and bias at load time
// (in double precision), and ReLU is fused into the conv.
//
// Weights: a safetensors file holding the torchvision/pytorch-fid state dict
// of the inner Inception3 (names "Conv2d_1a_3x3.conv.weight",
// "Mixed_5b.branch_pool.bn.running_var", ...; "fc.*" and
// "*.num_batches_tracked" are ignored). tools/convert_inception.py writes it
// from pytorch-fid's pt_inception-2015-12-05-6726825d.pth.
//
// Width divisor: the same topology with every channel count divided by k
// (k in {1, 2, 4, 8, 16}; tools/inception_fixture.py defines the identical
// reduced network in PyTorch) is inferred from the weight shapes, so small
// test networks load like the real one; feature_dim() = 2048 / k.
//
// Device: built on the host; to(cuda:N) moves the folded weights once, and
// the network then runs there (kernels/conv.h, pool.h, resize.h: fp32, no
// TF32; the convolutions through cuDNN with CUDNN_FMA_MATH in builds with
// cuDNN, kernels/cuda/conv_cudnn.h, else the hand-written kernel) on images
// given on the host or on that device. Its features agree
// with the CPU's to fp32 accumulation order (the convolutions sum in another
// order than oneDNN; resize, 2x - 1, the pools and the final mean are the
// same float operations).
//
// Taps for ADM's evaluation suite (eval/adm_suite.h), taken from the same
// forward pass as the pool features so that a device network provides them
// too:
//   spatial: ADM's "mixed_6/conv:0" [..., :7] (sFID). In the TF graph the
//     blocks are named mixed (Mixed_5b), mixed_1 (5c), mixed_2 (5d),
//     mixed_3 (6a), mixed_4 (6b), mixed_5 (6c), mixed_6 (6d), ...; inside a
//     block, "conv" is the plain 1x1 tower (Conv2D, batchnorm, and the ReLU
//     whose output is "mixed_6/conv:0"), which torchvision/pytorch-fid call
//     branch1x1 and concatenate first. So the tap is Mixed_6d.branch1x1
//     after its ReLU = channels [0, 7) of Mixed_6d's output, 17x17
//     (openai/guided-diffusion issue #109 finds the same layer), flattened
//     in ADM's NHWC order (h, w, c): 17 * 17 * 7 = 2023 values an image.
//   logits: pool3 x fc.weight^T WITHOUT fc.bias (ADM multiplies pool_3 by
//     the weight input of "softmax/logits/MatMul"; torch-fidelity's
//     "logits_unbiased"), [N, 1008], computed on the host in float32.
//     Needs "fc.weight" [C, D] in the weights (optional; has_logits()).
//
// Errors: std::runtime_error naming the file and tensor for a missing tensor
// or a shape that does not match the topology.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vt {

class InceptionFid {
 public:
  static InceptionFid load(const std::string& safetensors_path);
  // Names and shapes of the tensors a network of width divisor k reads
  // (conv.weight and bn.weight/bias/running_mean/running_var of every unit),
  // for programs that build random-weight networks (bench/gpu).
  static std::map<std::string, Shape> state_dict_shapes(int width_divisor);
  // `source` names the weights in error messages.
  InceptionFid(const std::map<std::string, Tensor>& state_dict, const std::string& source);

  int width_divisor() const { return div_; }
  // Moves the weights (the host copies are released); not thread safe.
  void to(Device device);
  Device device() const { return device_; }
  // TF32 tensor cores for the convolutions (veval --precision tf32), as
  // PyTorch runs pytorch-fid's network on a GPU by default
  // (torch.backends.cudnn.allow_tf32 is True): each conv's inputs rounded to
  // 10 mantissa bits, fp32 accumulation (Conv2dParams::tf32, cuDNN's
  // CUDNN_DEFAULT_MATH). Takes effect on a CUDA device in builds with cuDNN
  // only; the CPU and the hand-written CUDA kernel stay fp32, so set_tf32
  // throws std::invalid_argument on a CPU network. Off by default: the
  // features then match the CPU to fp32 rounding. Pools, resize and the
  // statistics are fp32 / float64 either way.
  void set_tf32(bool on);
  bool tf32() const { return tf32_; }
  int64_t feature_dim() const { return 2048 / div_; }
  static constexpr int64_t kSpatialChannels = 7, kSpatialSize = 17;
  static constexpr int64_t spatial_dim() { return kSpatialSize * kSpatialSize * kSpatialChannels; }  // 2023
  bool has_logits() const { return fc_w_.defined(); }
  int64_t num_logits() const { return has_logits() ? fc_w_.size(0) : 0; }

  // images: [N, 3, H, W] F32 in [0, 1] on the CPU or on device(); out:
  // [N, D] F32 contiguous on the CPU or on device() (a device network
  // uploads host images and downloads into a host `out`).
  void features(const Tensor& images, const Tensor& out) const;
  // images: [N, H, W, 3] U8 RGB on the CPU (as decoded or from an ADM .npz);
  // out [N, D] as for features().
  void features_u8(const Tensor& images_nhwc, const Tensor& out) const;

  // The network on an already preprocessed batch x299: [N, 3, 299, 299] F32
  // in the network's input range (pytorch-fid: 2 * resized - 1; ADM:
  // (resized - 128) / 128), on the CPU or device(). pool: [N, D] F32
  // contiguous (host or device()); spatial: undefined (not computed) or
  // [N, spatial_dim()] F32 contiguous on the host, (h, w, c) order.
  void forward(const Tensor& x299, const Tensor& pool, const Tensor& spatial) const;
  // pool: [N, D] F32 host; out: [N, num_logits()] F32 host = pool x fc.weight^T
  // (no bias). Throws std::logic_error when the weights have no fc.weight.
  void logits(const Tensor& pool, const Tensor& out) const;

  // One folded Conv+BN+ReLU unit (public for tests and the benchmark).
  struct Unit {
    int64_t cin = 0, cout = 0;
    int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
    Tensor w, b;  // folded: [cout, cin, kh, kw], [cout]
  };

 private:
  const Unit& unit(const std::string& name) const;
  // Runs unit `name` on x, writing into y (may be a channel slice).
  void run(const std::string& name, const Tensor& x, const Tensor& y) const;
  Tensor run_new(const std::string& name, const Tensor& x) const;
  Tensor block_a(const std::string& p, const Tensor& x) const;
  Tensor block_b(const std::string& p, const Tensor& x) const;
  Tensor block_c(const std::string& p, const Tensor& x) const;
  Tensor block_d(const std::string& p, const Tensor& x) const;
  Tensor block_e(const std::string& p, const Tensor& x, bool max_pool) const;
  // mixed_6d (nullable) receives Mixed_6d's output [N, 768/k, 17, 17].
  void network(const Tensor& x299, const Tensor& out, Tensor* mixed_6d = nullptr) const;
  void features_on_device(const Tensor& images, const Tensor& out) const;

  int div_ = 1;
  std::map<std::string, Unit> units_;
  Device device_ = Device::cpu();
  bool tf32_ = false;
  Tensor fc_w_;  // [C, D] F32 host, or undefined
  // A device buffer of ones, grown on demand: 2x - 1 on the device is
  // axpby(2, x, -1, ones), the same float result as the host's 2.f * x - 1.f.
  mutable Tensor ones_;
};

// Converts [N, H, W, 3] U8 to [N, 3, H, W] F32 in [0, 1] as torchvision's
// ToTensor (float(v) / 255).
Tensor u8_nhwc_to_unit_nchw(const Tensor& images_nhwc);

}  // namespace vt
