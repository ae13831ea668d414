// The arithmetic of the VAE on a CUDA device (the coordinator's
// `vae.precision` key), following what DiT's scripts get from PyTorch and
// diffusers:
//   fp32  fp32 FMA math everywhere: convolutions without TF32 (cuDNN's
//         CUDNN_FMA_MATH, Conv2dParams::tf32 = false) and the attention
//         GEMMs without TF32 (CUBLAS_COMPUTE_32F); results equal the CPU's
//         to fp32 rounding. The default, and the only choice on the CPU.
//   tf32  convolutions and GEMMs may use TF32 tensor cores (inputs rounded
//         to 10 mantissa bits, fp32 accumulation): what DiT's sample.py and
//         train.py run, which set torch.backends.cudnn.allow_tf32 (PyTorch's
//         default) and torch.backends.cuda.matmul.allow_tf32 to True.
//         CUDA only.
//   bf16  diffusers' vae.to(torch.bfloat16): refused for now (the
//         convolution op, kernels/conv.h, takes F32 tensors only, though
//         cuDNN's ConvMath::Bf16 exists below it).
// Errors: std::invalid_argument naming `vae.precision` and the value.
#pragma once
#include <string>

namespace vt {

enum class VaePrecision { Fp32, Tf32, Bf16 };

// "fp32" | "tf32" | "bf16"; anything else throws std::invalid_argument
// naming vae.precision and the value.
VaePrecision parse_vae_precision(const std::string& s);
const char* vae_precision_name(VaePrecision p);

}  // namespace vt
