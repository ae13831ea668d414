// Matrix multiplication for the transformer: plain and strided-batched GEMM,
// Linear layers in PyTorch layout, and the bias gradient.
//
// Layout: row-major fp32. Every operand of `matmul` is read as a matrix by
// flattening its leading dimensions into rows ([..., C] -> [R, C]); the row
// stride may differ from C for 2-D views (e.g. a column slice of qkv), but the
// last stride must be 1. op(X) = X or X^T as the trans flag says.
//
// CPU: oneDNN's dnnl_sgemm (Intel/UXL oneDNN, which selects its AVX2/AVX-512
// kernels at run time; Debian's OpenBLAS misdetects some virtual CPUs and
// falls back to slow generic kernels). Multithreaded inside; the batched variant runs batches in
// parallel when there are at least as many batches as threads.
// CUDA: cuBLAS, fp32 accumulation without TF32 (kernels/cuda/matmul.h);
// the Linear ops run their bias, GELU and bias gradient as cuBLASLt
// epilogues of the GEMM (kernels/cuda/matmul_lt.h), falling back to the
// separate passes where cuBLASLt offers no algorithm.
// Dtypes: F32 everywhere on the CPU. On CUDA `matmul`/`linear_*`/
// `bias_backward` also take BF16 operands: a and b (x, weight, dy) share one
// dtype, c is F32 or that dtype (bf16 x bf16 -> fp32 weight gradients); bias
// and dbias are always F32. matmul_strided_batched is F32 only.
//
// Errors: std::invalid_argument naming the op, the tensor and its shape, for
// undefined operands or unsupported dtypes, mismatched inner dimensions, devices that
// differ, or a strided-batched layout that would read outside a tensor.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "kernels/activation.h"

namespace vt {

// c[M, N] = alpha * op(a) op(b) + beta * c  (+ bias[N] added to every row
// when bias is defined; the bias is not scaled by alpha). On CUDA with
// alpha == 1 and beta == 0 the bias is a cuBLASLt epilogue: added to the fp32 accumulator,
// so a BF16 c is rounded once (the separate pass rounded the product, then
// the sum); for a BF16 c the bias itself is rounded to bf16 first, the
// type cuBLASLt takes (kernels/cuda/matmul_lt.h).
//   a: [M, K] (trans_a = false) or [K, M] (trans_a = true)
//   b: [K, N] (trans_b = false) or [N, K] (trans_b = true)
// With beta == 0, c is overwritten and its old contents (even NaN) ignored.
void matmul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, const Tensor& c,
            float alpha = 1.0f, float beta = 0.0f, const Tensor& bias = Tensor());

// Strided batched GEMM (attention): for i in [0, batch),
//   C_i = alpha * op(A_i) op(B_i) + beta * C_i,
// where X_i starts at element i * stride_x of tensor x's data and is a
// row-major matrix with leading dimension ld_x (elements). Shapes of the
// tensors themselves do not matter beyond their element count, which bounds
// every access (checked). Tensors must be contiguous.
struct BatchedGemm {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
};
void matmul_strided_batched(const Tensor& a, const Tensor& b, const Tensor& c, const BatchedGemm& g);

// y[..., N] = x[..., K] W^T + b, with W [N, K] and b [N] (PyTorch nn.Linear
// layout); b may be undefined (no bias).
void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y);

// Backward of linear_forward for upstream gradient dy [..., N]:
//   dx = dy W          (overwrite; skipped when dx is undefined)
//   dW += dy^T x       (accumulate; skipped when dweight is undefined)
//   db += sum_rows dy  (accumulate; skipped when dbias is undefined)
// On CUDA db comes out of the dW GEMM (cuBLASLt BGRADB epilogue) when both
// are wanted.
void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& dx,
                     const Tensor& dweight, const Tensor& dbias);

// timm Mlp's fc1 + activation: pre = x W^T + b, y = act(pre); pre is what
// the backward needs (act_linear_backward). pre and y: [..., N], contiguous,
// the dtype of a linear_forward output. CPU: linear_forward then
// activation_forward (bitwise those two ops). CUDA: GeluTanh is one GEMM
// with cuBLASLt's GELU_AUX_BIAS epilogue (GELU applied to the fp32
// accumulator, pre written beside y); GeluErf (DeiT) and SiLU are the bias
// epilogue writing pre, then the activation kernel (cuBLASLt's GELU is the
// tanh form only).
void linear_act_forward(Activation act, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& pre,
                        const Tensor& y);

// Backward of a Linear whose input was x = act(pre) (timm Mlp's fc2 after
// the activation), the input gradient taken through the activation:
//   dpre = act'(pre) * (dy W)   (overwrite)
//   dW += dy^T x, db += sum_rows dy  (accumulate, as linear_backward)
// CPU: linear_backward then activation_backward (bitwise those two ops).
// CUDA: GeluTanh's derivative is the dx GEMM's DGELU epilogue (one rounding
// of dpre); other activations run their backward kernel after the GEMM.
void act_linear_backward(Activation act, const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& pre,
                         const Tensor& dpre, const Tensor& dweight, const Tensor& dbias);

// dbias[N] += sum over rows of dy[..., N]. The sum runs over rows in a fixed
// order per column, so the result does not depend on the thread count.
void bias_backward(const Tensor& dy, const Tensor& dbias);

// precision: tf32 (train/device_choice.h): CUDA F32 GEMMs on TF32 tensor
// cores (10-bit mantissa products, fp32 accumulation), process-wide. No
// effect on the CPU (always fp32) or on BF16 operands.
void set_matmul_tf32(bool on);
// The current setting (false on the CPU-only build), so that a caller with
// its own precision (the VAE, vae/vae_precision.h) can restore it.
bool matmul_tf32();

// CUDA: cuBLASLt epilogues on (default) or off (the separate passes: cuBLAS
// GEMM, bias kernel, activation kernel, column sums), process-wide; for the
// benchmark and the agreement tests. No effect on the CPU.
void set_matmul_epilogues(bool on);

}  // namespace vt
