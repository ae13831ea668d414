// 2-D convolution forward through cuDNN's classic (legacy, cudnn_cnn) API
// behind kernels/conv.h on CUDA, in builds with cuDNN (VT_CUDNN_CONV; the
// CMake option VT_CUDNN, kernels/CMakeLists.txt). Same contract as the
// hand-written kernel (kernels/cuda/conv.h):
//   x [N, C, H, W]   strided, W stride 1  (NCHW dims; any strides, so a
//                    channels-last buffer viewed as NCHW is described too)
//   w [O, C/G, KH, KW] contiguous (cuDNN filter format NCHW)
//   b [O] fp32 or null
//   y [N, O, OH, OW] strided (a channel slice of a concat buffer is fine)
//   y = relu?(conv(x, w) + b), zero padding ph / pw on top / left; the
//   bottom / right padding follows from OH, OW (Conv2dDesc).
// Tensors are described with their strides (cudnnSetTensor4dDescriptorEx),
// so no layout copy is made: cuDNN picks its kernels for the layout given.
//
// Precision, per call (ConvMath):
//   Fp32  x, w, y fp32, fp32 accumulation, no tensor cores:
//         CUDNN_FMA_MATH. (CUDNN_DEFAULT_MATH is not enough: from cuDNN 8
//         on it permits TF32 tensor cores for fp32 data on sm_80+; PyTorch
//         and Paddle set FMA_MATH when TF32 is off.) The FID Inception's
//         default, so its features match the CPU to fp32 rounding.
//   Tf32  x, w, y fp32, TF32 tensor cores allowed: CUDNN_DEFAULT_MATH, the
//         type cudnnMathType_t documents as permitting TF32 on A100 and
//         later (PyTorch's choice for fp32 with allow_tf32); the
//         documentation of CUDNN_TENSOR_OP_MATH promises tensor cores
//         without down conversion, which for fp32 data says nothing more.
//   Bf16  x, w, y bf16 (CUDNN_DATA_BFLOAT16 with CUDNN_DATA_FLOAT compute,
//         CUDNN_TENSOR_OP_MATH); the bias stays fp32 and is added by the
//         epilogue kernel (kernels/cuda/conv_epilogue.h) after y is
//         rounded to bf16, i.e. not fused.
// The heuristic lists each algorithm with the math type it runs, which may
// differ from the descriptor's; that type is set on the descriptor before
// the call (PyTorch's Note [behavior of cudnnFind and cudnnGet]: else
// cuDNN runs the algorithm with the slower kernel), fused or not. Entries
// are kept only when their math type keeps the call's precision: Fp32 only
// CUDNN_FMA_MATH; Tf32 and Bf16 anything but
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which "will actively perform
// datatype down conversion on tensors in order to utilize Tensor Cores"
// (cudnnMathType_t), i.e. fp32 data to fp16 (tensorflow/tensorflow#36036):
// fp16's 5 exponent bits overflow past 65504, which neither TF32 (fp32's
// exponent, 10 mantissa bits) nor bf16 does.
//
// Batches past cuDNN's tensor size limit (2^31 - 1 elements per tensor,
// strides' gaps included) are cut along N into chunks of near-equal size,
// each one cuDNN call on a view of x and y, as PyTorch does
// (kernels/conv_cudnn_split.h: the limit, its sources, the arithmetic);
// e.g. the SD VAE decoder at 256 px from batch 128 on ([N, 256, 256, 256]
// in up_blocks.2/3). Should cuDNN refuse a descriptor as too large
// (NOT_SUPPORTED) even so, the chunks are made smaller until it takes them
// (the fewest chunks it allows; remembered per shape).
// Calls, per chunk shape (device, dims, strides, padding, ..., math) once:
// the descriptors, cudnnGetConvolutionForwardAlgorithm_v7 (the heuristic,
// no timing runs), its entries whose status is SUCCESS, whose math type
// keeps the precision (above) and whose workspace is at most 256 MiB, in
// its order; the plan is cached. The workspace comes from vt's caching allocator on the
// call's stream. Then per call:
//   - bias or ReLU, Fp32/Tf32: cudnnConvolutionBiasActivationForward
//     (y = act(1 * conv(x) + 0 * z + bias), z = y) with CUDNN_ACTIVATION_RELU,
//     or CUDNN_ACTIVATION_IDENTITY for a bias alone, which cuDNN documents
//     only with CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
//     (cudnnActivationMode_t), so IDENTITY is used only when that algorithm
//     is usable for the shape. ReLU without a bias passes a zero bias.
//   - otherwise, or when the fused call answers CUDNN_STATUS_NOT_SUPPORTED
//     (remembered per shape): cudnnConvolutionForward, then the bias / ReLU
//     epilogue kernel over y. An algorithm cudnnConvolutionForward refuses
//     (NOT_SUPPORTED: the heuristic does not run what it lists; PyTorch's
//     AlgoIterator::try_all moves on to the next on a cuDNN error) is
//     dropped for the shape and the next one run; when all are refused for
//     a strided y, the packed output below; when that is refused too, the
//     hand-written kernel (the false return).
//   - padding cuDNN cannot express (it pads symmetrically: ph rows top and
//     bottom) when the symmetric output size differs from OH / OW, e.g.
//     diffusers' Downsample2D (0, 1, 0, 1): x is copied once into a zeroed
//     [N, C, Hp, Wp] buffer (cudnnTransformTensor into its interior; the
//     rows past the last one the output reads are dropped) and convolved
//     with zero padding. With symmetric padding whose output size is OH / OW
//     (all of the Inception's) cuDNN pads itself, no copy.
//   - no usable algorithm for a strided y: the output goes to a packed
//     buffer and cudnnTransformTensor copies it into y.
// conv2d_cudnn returns false when cuDNN has no usable algorithm for the
// shape and math, refuses every one at execution (remembered), or when one
// image exceeds its tensor size limit or int descriptors; y is then
// unspecified (chunks before an execution refusal are written) and
// kernels/conv.cpp runs the hand-written fp32 kernel over all of it (for
// Bf16 over operands widened to fp32, the result rounded once).
// Other cuDNN failures throw std::runtime_error naming the call, the status
// string and the shape.
//
// The hand-written kernel (kernels/cuda/conv.h) stays compiled in cuDNN
// builds only as this fallback and as the reference of the benchmark
// (bench/gpu/check_inception_device.cpp: images/s of both): whether it is
// faster at some shape could not be measured where this was written (no
// GPU). set_conv_cudnn(false) makes kernels/conv.cpp use it.
#pragma once
#if defined(VT_CUDNN_CONV)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/conv_desc.h"

namespace vt {
namespace cuda {

enum class ConvMath { Fp32, Tf32, Bf16 };

// x, w, y: float (Fp32, Tf32) or __nv_bfloat16 (Bf16); b: fp32 or null.
bool conv2d_cudnn(const Conv2dDesc& d, const void* x, const void* w, const float* b, void* y, ConvMath math,
                  cudaStream_t stream = 0);

// Process-wide switch (default on): off makes kernels/conv.cpp run the
// hand-written kernel; the benchmark compares the two.
void set_conv_cudnn(bool on);
bool conv_cudnn();

// Counts since process start, for tests: cuDNN calls (chunks) run fused,
// with the separate epilogue (unfused or the fused call refused), through
// the explicit pad copy, through the packed output copy; conv2d_cudnn calls
// refused (the false return); conv2d_cudnn calls cut along N (split) and the
// cuDNN calls they made (chunks); algorithms cudnnConvolutionForward refused
// at execution (retried: each dropped for its shape).
struct CudnnConvCounts {
  int64_t fused = 0, unfused = 0, padded = 0, packed_out = 0, refused = 0;
  int64_t split = 0, chunks = 0, retried = 0;
};
CudnnConvCounts cudnn_conv_counts();

}  // namespace cuda
}  // namespace vt
#endif  // VT_CUDNN_CONV
