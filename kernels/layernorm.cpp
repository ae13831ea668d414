#include "kernels/layernorm.h"

#include "kernels/cpu/layernorm.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/layernorm.h"
#endif

namespace vt {

namespace {

int64_t last_dim(const char* op, const Tensor& x) {
  opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() < 1) opcheck::fail(op, opcheck::desc("x", x) + " must have at least one dimension");
  return x.size(-1);
}

void check_optional(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (t.defined()) opcheck::f32_like(op, name, t, shape);
}

void backward_impl(const char* op, const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                   const Tensor& rstd, const Tensor& dx, bool accumulate, const Tensor& dweight,
                   const Tensor& dbias) {
  const int64_t d = last_dim(op, x);
  const int64_t rows = opcheck::rows_of(x);
  opcheck::like(op, "dy", dy, x.shape(), x.dtype());
  check_optional(op, "weight", weight, {d});
  opcheck::f32_like(op, "mean", mean, {rows});
  opcheck::f32_like(op, "rstd", rstd, {rows});
  if (dx.defined()) opcheck::like(op, "dx", dx, x.shape(), x.dtype());
  check_optional(op, "dweight", dweight, {d});
  check_optional(op, "dbias", dbias, {d});
  if (dweight.defined() && !weight.defined())
    opcheck::fail(op, "dweight given without weight (LayerNorm without affine has no weight gradient)");
  if (accumulate && dx.defined() && dx.raw() == dy.raw())
    opcheck::fail(op, "dx must not alias dy when accumulating");
  opcheck::same_device(op, x.device(), {{"dy", &dy}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd},
                                        {"dx", &dx}, {"dweight", &dweight}, {"dbias", &dbias}});
  auto ptr = [](const Tensor& t) { return t.defined() ? t.f32() : nullptr; };
  if (!x.device().is_cpu()) {
#ifdef VT_CUDA
    cuda::layernorm_backward(dy.raw(), x.raw(), ptr(weight), mean.f32(), rstd.f32(), rows, d,
                             dx.defined() ? dx.raw() : nullptr, accumulate, ptr(dweight), ptr(dbias), x.dtype());
    return;
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::layernorm_backward(dy.f32(), x.f32(), ptr(weight), mean.f32(), rstd.f32(), rows, d, ptr(dx), accumulate,
                          ptr(dweight), ptr(dbias));
}

}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& y,
                       const Tensor& mean, const Tensor& rstd) {
  const char* op = "layernorm_forward";
  const int64_t d = last_dim(op, x);
  const int64_t rows = opcheck::rows_of(x);
  check_optional(op, "weight", weight, {d});
  check_optional(op, "bias", bias, {d});
  opcheck::like(op, "y", y, x.shape(), x.dtype());
  check_optional(op, "mean", mean, {rows});
  check_optional(op, "rstd", rstd, {rows});
  if (!(eps >= 0.0f)) opcheck::fail(op, "eps must be >= 0, got " + std::to_string(eps));
  opcheck::same_device(op, x.device(), {{"weight", &weight}, {"bias", &bias}, {"y", &y}, {"mean", &mean},
                                        {"rstd", &rstd}});
  auto ptr = [](const Tensor& t) { return t.defined() ? t.f32() : nullptr; };
  if (!x.device().is_cpu()) {
#ifdef VT_CUDA
    cuda::layernorm_forward(x.raw(), ptr(weight), ptr(bias), eps, rows, d, y.raw(), ptr(mean), ptr(rstd), x.dtype());
    return;
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::layernorm_forward(x.f32(), ptr(weight), ptr(bias), eps, rows, d, y.f32(), ptr(mean), ptr(rstd));
}

void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                        const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias) {
  backward_impl("layernorm_backward", dy, x, weight, mean, rstd, dx, false, dweight, dbias);
}

void layernorm_backward_accumulate(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& dx, const Tensor& dweight,
                                   const Tensor& dbias) {
  backward_impl("layernorm_backward_accumulate", dy, x, weight, mean, rstd, dx, true, dweight, dbias);
}

}  // namespace vt
