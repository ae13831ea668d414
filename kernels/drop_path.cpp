#include "kernels/drop_path.h"

#include <string>
#include <vector>

#include "core/philox.h"
#include "kernels/cpu/drop_path.h"
#include "kernels/op_checks.h"

namespace vt {
namespace {

void check_scaled(const char* op, const char* nx, const Tensor& x, const Tensor& scales, const char* no,
                  const Tensor& out) {
  opcheck::dtype(op, nx, x, DType::F32);
  opcheck::contiguous(op, nx, x);
  if (x.dim() < 1) opcheck::fail(op, opcheck::desc(nx, x) + " must be [B, ...]");
  opcheck::f32_like(op, "scales", scales, {x.size(0)});
  opcheck::f32_like(op, no, out, x.shape());
  opcheck::same_device(op, x.device(), {{"scales", &scales}, {no, &out}});
  if (!x.device().is_cpu()) opcheck::no_cuda(op);
}

}  // namespace

void drop_path_scales(float rate, uint64_t seed, uint64_t stream, const Tensor& scales, int64_t sample_offset) {
  const char* op = "drop_path_scales";
  if (!(rate >= 0.0f && rate < 1.0f)) opcheck::fail(op, "rate " + std::to_string(rate) + " outside [0, 1)");
  opcheck::dtype(op, "scales", scales, DType::F32);
  if (scales.dim() != 1) opcheck::fail(op, opcheck::desc("scales", scales) + " must be [B]");
  if (sample_offset < 0) opcheck::fail(op, "negative sample_offset " + std::to_string(sample_offset));
  const int64_t B = scales.size(0);
  const double keep = 1.0 - static_cast<double>(rate);
  const float kept_scale = static_cast<float>(1.0 / keep);
  std::vector<float> host(static_cast<size_t>(B), 1.0f);
  if (rate > 0.0f)
    for (int64_t b = 0; b < B; ++b) {
      // One Philox block per sample: the draw depends only on the global index.
      Philox rng(seed, stream, static_cast<uint64_t>(sample_offset + b));
      host[static_cast<size_t>(b)] = rng.uniform_double() < keep ? kept_scale : 0.0f;
    }
  // copy_from handles a CUDA or strided destination; dst shares scales' storage.
  Tensor dst = scales;
  dst.copy_from(Tensor::from_vector(host, {B}));
}

void drop_path_forward(const Tensor& x, const Tensor& scales, const Tensor& out) {
  const char* op = "drop_path_forward";
  check_scaled(op, "x", x, scales, "out", out);
  cpu::drop_path_forward(x.f32(), scales.f32(), out.f32(), x.size(0), x.size(0) ? x.numel() / x.size(0) : 0);
}

void drop_path_backward(const Tensor& dout, const Tensor& scales, const Tensor& dx) {
  const char* op = "drop_path_backward";
  check_scaled(op, "dout", dout, scales, "dx", dx);
  cpu::drop_path_forward(dout.f32(), scales.f32(), dx.f32(), dout.size(0),
                         dout.size(0) ? dout.numel() / dout.size(0) : 0);
}

void drop_path_add(const Tensor& x, const Tensor& scales, const Tensor& residual) {
  const char* op = "drop_path_add";
  check_scaled(op, "x", x, scales, "residual", residual);
  cpu::drop_path_add(x.f32(), scales.f32(), residual.f32(), x.size(0), x.size(0) ? x.numel() / x.size(0) : 0);
}

}  // namespace vt
