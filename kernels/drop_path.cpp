#include "kernels/drop_path.h"

#include <string>
#include <vector>

#include "core/philox_block.h"
#include "kernels/cpu/drop_path.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/drop_path.h"
#endif

namespace vt {
namespace {

// Checks the operands; returns true when they are on CUDA (in a CUDA build).
bool check_scaled(const char* op, const char* nx, const Tensor& x, const Tensor& scales, const char* no,
                  const Tensor& out) {
  const DType dt = opcheck::io_dtype(op, nx, x);
  opcheck::contiguous(op, nx, x);
  if (x.dim() < 1) opcheck::fail(op, opcheck::desc(nx, x) + " must be [B, ...]");
  opcheck::f32_like(op, "scales", scales, {x.size(0)});
  opcheck::like(op, no, out, x.shape(), dt);
  opcheck::same_device(op, x.device(), {{"scales", &scales}, {no, &out}});
  if (x.device().is_cpu()) return false;
#ifndef VT_CUDA
  opcheck::no_cuda(op);
#endif
  return true;
}

int64_t per_sample(const Tensor& x) { return x.size(0) ? x.numel() / x.size(0) : 0; }

}  // namespace

void drop_path_scales(float rate, uint64_t seed, uint64_t stream, const Tensor& scales, int64_t sample_offset,
                      int64_t sample_stride) {
  const char* op = "drop_path_scales";
  if (!(rate >= 0.0f && rate < 1.0f)) opcheck::fail(op, "rate " + std::to_string(rate) + " outside [0, 1)");
  opcheck::dtype(op, "scales", scales, DType::F32);
  if (scales.dim() != 1) opcheck::fail(op, opcheck::desc("scales", scales) + " must be [B]");
  if (sample_offset < 0) opcheck::fail(op, "negative sample_offset " + std::to_string(sample_offset));
  if (sample_stride < 1) opcheck::fail(op, "sample_stride " + std::to_string(sample_stride) + " < 1");
  const int64_t B = scales.size(0);
  const double keep = 1.0 - static_cast<double>(rate);
  const float kept_scale = static_cast<float>(1.0 / keep);
  if (scales.device().is_cuda() && scales.is_contiguous()) {
#ifdef VT_CUDA
    // Drawn on the device from the same Philox keys (core/philox_block.h).
    cuda::drop_path_scales(scales.f32(), B, keep, kept_scale, seed, stream, sample_offset, sample_stride);
    return;
#else
    opcheck::no_cuda(op);
#endif
  }
  std::vector<float> host(static_cast<size_t>(B), 1.0f);
  if (rate > 0.0f)
    for (int64_t b = 0; b < B; ++b) {
      // One Philox block per sample: the draw depends only on the global index.
      // (the first uniform_double of Philox(seed, stream, sample_offset + b * sample_stride))
      const double u =
          philox_first_uniform_double(seed, stream, static_cast<uint64_t>(sample_offset + b * sample_stride));
      host[static_cast<size_t>(b)] = u < keep ? kept_scale : 0.0f;
    }
  // copy_from handles a CUDA or strided destination; dst shares scales' storage.
  Tensor dst = scales;
  dst.copy_from(Tensor::from_vector(host, {B}));
}

void drop_path_scales_at(float rate, uint64_t seed, const Tensor& step, uint64_t block, uint64_t sublayer,
                         const Tensor& scales, int64_t sample_offset, int64_t sample_stride) {
  const char* op = "drop_path_scales_at";
  opcheck::dtype(op, "step", step, DType::I64);
  if (step.numel() != 1) opcheck::fail(op, opcheck::desc("step", step) + " must hold one step number");
  opcheck::same_device(op, scales.device(), {{"step", &step}});
  if (scales.device().is_cuda() && scales.is_contiguous() && rate >= 0.0f && rate < 1.0f && sample_offset >= 0 &&
      sample_stride >= 1 && scales.dtype() == DType::F32 && scales.dim() == 1) {
#ifdef VT_CUDA
    const double keep = 1.0 - static_cast<double>(rate);
    cuda::drop_path_scales_at(scales.f32(), scales.size(0), keep, static_cast<float>(1.0 / keep), seed,
                              static_cast<const int64_t*>(step.raw()), block, sublayer, sample_offset, sample_stride);
    return;
#endif
  }
  // The host twin (and every argument error, named as drop_path_scales names them).
  const Tensor host = step.device().is_cpu() ? step : step.to(Device::cpu());
  const uint64_t s = static_cast<uint64_t>(static_cast<const int64_t*>(host.raw())[0]);
  drop_path_scales(rate, seed, philox_stream_mix(s, block, sublayer), scales, sample_offset, sample_stride);
}

void drop_path_forward(const Tensor& x, const Tensor& scales, const Tensor& out) {
  const char* op = "drop_path_forward";
  if (check_scaled(op, "x", x, scales, "out", out)) {
#ifdef VT_CUDA
    return cuda::drop_path_forward(x.raw(), scales.f32(), out.raw(), x.size(0), per_sample(x), x.dtype());
#endif
  }
  cpu::drop_path_forward(x.f32(), scales.f32(), out.f32(), x.size(0), per_sample(x));
}

void drop_path_backward(const Tensor& dout, const Tensor& scales, const Tensor& dx) {
  const char* op = "drop_path_backward";
  if (check_scaled(op, "dout", dout, scales, "dx", dx)) {
#ifdef VT_CUDA
    return cuda::drop_path_forward(dout.raw(), scales.f32(), dx.raw(), dout.size(0), per_sample(dout), dout.dtype());
#endif
  }
  cpu::drop_path_forward(dout.f32(), scales.f32(), dx.f32(), dout.size(0), per_sample(dout));
}

void drop_path_add(const Tensor& x, const Tensor& scales, const Tensor& residual) {
  const char* op = "drop_path_add";
  if (check_scaled(op, "x", x, scales, "residual", residual)) {
#ifdef VT_CUDA
    return cuda::drop_path_add(x.raw(), scales.f32(), residual.raw(), x.size(0), per_sample(x), x.dtype());
#endif
  }
  cpu::drop_path_add(x.f32(), scales.f32(), residual.f32(), x.size(0), per_sample(x));
}

}  // namespace vt
