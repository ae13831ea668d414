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
//   bf16  diffusers' vae.to(torch.bfloat16) as PyTorch runs it on CUDA:
//         weights and activations stored in bf16 (8-bit mantissa, unit
//         roundoff 2^-8), arithmetic in fp32 inside each op: convolutions
//         through cuDNN with bf16 data and fp32 accumulation
//         (ConvMath::Bf16; the bias added after the bf16 rounding and
//         rounded again, as PyTorch's cudnn_convolution + add_), GroupNorm
//         (+SiLU) with fp32 statistics, the attention GEMMs (cuBLAS(Lt),
//         bf16 operands, fp32 accumulation) and the probabilities path at
//         width 512, residual adds rounded once, the logvar clamp in bf16.
//         Inputs (F32) are rounded to bf16 on entry; results are returned
//         as F32 (the bf16 values). Expect about 2^-8 relative error per
//         layer against fp32 (tests/cuda/emu/vae/test_vae_emu.cpp). CUDA
//         only.
// Errors: std::invalid_argument naming `vae.precision` and the value (also
// for tf32 or bf16 with a CPU VAE, vae/autoencoder_kl.h).
#pragma once
#include <string>

namespace vt {

enum class VaePrecision { Fp32, Tf32, Bf16 };

// "fp32" | "tf32" | "bf16"; anything else throws std::invalid_argument
// naming vae.precision and the value.
VaePrecision parse_vae_precision(const std::string& s);
const char* vae_precision_name(VaePrecision p);

}  // namespace vt
