// Small elementwise helpers for module code (residual adds, scaled adds,
// gradient scaling). Tensors are contiguous with identical shapes and one
// dtype: F32, or BF16 on CUDA (fp32 arithmetic, one rounding per output);
// an output may alias any input. For fill/copy/zero use
// Tensor::fill, Tensor::copy_from and Tensor::zero (they handle both devices).
// CPU: OpenMP over chunks. CUDA: kernels/cuda/elementwise.h
// (sum synchronises the stream to return its value).
// Errors: std::invalid_argument naming the op and the tensors' shapes.
#pragma once
#include "core/tensor.h"

namespace vt {

// out = a + b
void add(const Tensor& a, const Tensor& b, const Tensor& out);
// out = alpha * a + beta * b
void axpby(float alpha, const Tensor& a, float beta, const Tensor& b, const Tensor& out);
// y += alpha * x
void axpy(float alpha, const Tensor& x, const Tensor& y);
// out = alpha * x
void scale(const Tensor& x, float alpha, const Tensor& out);
// out = a * b (elementwise)
void mul(const Tensor& a, const Tensor& b, const Tensor& out);
// out = min(max(x, lo), hi) (torch.clamp; NaN stays NaN), lo <= hi, e.g.
// the VAE posterior's logvar clamp to [-30, 20].
void clamp(const Tensor& x, float lo, float hi, const Tensor& out);
// sum of all elements, accumulated in double.
double sum(const Tensor& x);

// dst = src converted between F32 and BF16 (either direction, or a plain
// copy for equal dtypes), rounding to nearest even as core/dtype.h's
// f32_to_bf16 (PyTorch's .to(torch.bfloat16)). The bf16 GEMM operands of a
// GPU step (activations, upstream gradients, the weight copy) are made with
// it. Both contiguous, same shape, one device; the only op here that takes
// BF16 on the CPU (its reference for the CUDA twin).
void convert(const Tensor& src, const Tensor& dst);

}  // namespace vt
