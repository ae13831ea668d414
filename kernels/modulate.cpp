#include "kernels/modulate.h"

#include <string>

#include "kernels/cpu/modulate.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/modulate.h"
#endif

namespace vt {
namespace {

struct Btd {
  int64_t B, T, D;
};

// x [B, T, D]: F32, or BF16 on CUDA.
Btd check_x(const char* op, const char* name, const Tensor& x) {
  opcheck::io_dtype(op, name, x);
  opcheck::contiguous(op, name, x);
  if (x.dim() != 3) opcheck::fail(op, opcheck::desc(name, x) + " must be [B, T, D]");
#ifndef VT_CUDA
  if (!x.device().is_cpu()) opcheck::no_cuda(op);
#endif
  return {x.size(0), x.size(1), x.size(2)};
}

// [B, D] with unit stride along D and any row stride (a column slice of the
// adaLN output). Returns the row stride. An undefined optional gives 0.
int64_t check_vec(const char* op, const char* name, const Tensor& v, const Btd& s, const Device& dev,
                  bool optional = false) {
  if (optional && !v.defined()) return 0;
  opcheck::dtype(op, name, v, DType::F32);
  if (v.dim() != 2 || v.size(0) != s.B || v.size(1) != s.D)
    opcheck::fail(op, opcheck::desc(name, v) + " must be [B, D] = " + shape_str({s.B, s.D}));
  if (s.D > 1 && v.strides()[1] != 1) opcheck::fail(op, opcheck::desc(name, v) + " must have unit stride along D");
  if (v.device() != dev) opcheck::fail(op, opcheck::desc(name, v) + " is not on " + dev.str());
  return s.B > 1 ? v.strides()[0] : s.D;
}

float* opt_ptr(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }

}  // namespace

void modulate_forward(const Tensor& x, const Tensor& shift, const Tensor& scale, const Tensor& out) {
  const char* op = "modulate_forward";
  const Btd s = check_x(op, "x", x);
  const int64_t ld_sh = check_vec(op, "shift", shift, s, x.device());
  const int64_t ld_sc = check_vec(op, "scale", scale, s, x.device());
  opcheck::like(op, "out", out, x.shape(), x.dtype());
  opcheck::same_device(op, x.device(), {{"out", &out}});
  if (x.device().is_cuda())
    VT_CUDA_CALL(cuda::modulate_forward(x.raw(), shift.f32(), ld_sh, scale.f32(), ld_sc, out.raw(), s.B, s.T, s.D,
                                        x.dtype()));
  cpu::modulate_forward(x.f32(), shift.f32(), ld_sh, scale.f32(), ld_sc, out.f32(), s.B, s.T, s.D);
}

void modulate_backward(const Tensor& dout, const Tensor& x, const Tensor& scale, const Tensor& dx,
                       const Tensor& dshift, const Tensor& dscale) {
  const char* op = "modulate_backward";
  const Btd s = check_x(op, "x", x);
  opcheck::like(op, "dout", dout, x.shape(), x.dtype());
  if (dx.defined()) opcheck::like(op, "dx", dx, x.shape(), x.dtype());
  opcheck::same_device(op, x.device(), {{"dout", &dout}, {"dx", &dx}});
  const int64_t ld_sc = check_vec(op, "scale", scale, s, x.device());
  const int64_t ld_dsh = check_vec(op, "dshift", dshift, s, x.device(), true);
  const int64_t ld_dsc = check_vec(op, "dscale", dscale, s, x.device(), true);
  if (x.device().is_cuda())
    VT_CUDA_CALL(cuda::modulate_backward(dout.raw(), x.raw(), scale.f32(), ld_sc, dx.defined() ? dx.raw() : nullptr,
                                         opt_ptr(dshift), ld_dsh, opt_ptr(dscale), ld_dsc, s.B, s.T, s.D,
                                         x.dtype()));
  cpu::modulate_backward(dout.f32(), x.f32(), scale.f32(), ld_sc, opt_ptr(dx), opt_ptr(dshift), ld_dsh,
                         opt_ptr(dscale), ld_dsc, s.B, s.T, s.D);
}

void gate_forward(const Tensor& x, const Tensor& gate, const Tensor& out) {
  const char* op = "gate_forward";
  const Btd s = check_x(op, "x", x);
  const int64_t ld_g = check_vec(op, "gate", gate, s, x.device());
  opcheck::like(op, "out", out, x.shape(), x.dtype());
  opcheck::same_device(op, x.device(), {{"out", &out}});
  if (x.device().is_cuda())
    VT_CUDA_CALL(cuda::gate_forward(x.raw(), gate.f32(), ld_g, out.raw(), s.B, s.T, s.D, x.dtype()));
  cpu::gate_forward(x.f32(), gate.f32(), ld_g, out.f32(), s.B, s.T, s.D);
}

void gate_backward(const Tensor& dout, const Tensor& x, const Tensor& gate, const Tensor& dx,
                   const Tensor& dgate) {
  const char* op = "gate_backward";
  const Btd s = check_x(op, "x", x);
  opcheck::like(op, "dout", dout, x.shape(), x.dtype());
  if (dx.defined()) opcheck::like(op, "dx", dx, x.shape(), x.dtype());
  opcheck::same_device(op, x.device(), {{"dout", &dout}, {"dx", &dx}});
  const int64_t ld_g = check_vec(op, "gate", gate, s, x.device());
  const int64_t ld_dg = check_vec(op, "dgate", dgate, s, x.device(), true);
  if (x.device().is_cuda())
    VT_CUDA_CALL(cuda::gate_backward(dout.raw(), x.raw(), gate.f32(), ld_g, dx.defined() ? dx.raw() : nullptr,
                                     opt_ptr(dgate), ld_dg, s.B, s.T, s.D, x.dtype()));
  cpu::gate_backward(dout.f32(), x.f32(), gate.f32(), ld_g, opt_ptr(dx), opt_ptr(dgate), ld_dg, s.B, s.T, s.D);
}

void gate_residual_add(const Tensor& x, const Tensor& gate, float alpha, const Tensor& residual) {
  const char* op = "gate_residual_add";
  const Btd s = check_x(op, "x", x);
  const int64_t ld_g = check_vec(op, "gate", gate, s, x.device());
  opcheck::f32_like(op, "residual", residual, x.shape());  // the residual stream stays fp32
  opcheck::same_device(op, x.device(), {{"residual", &residual}});
  if (x.device().is_cuda())
    VT_CUDA_CALL(cuda::gate_residual_add(x.raw(), gate.f32(), ld_g, alpha, residual.f32(), s.B, s.T, s.D, x.dtype()));
  cpu::gate_residual_add(x.f32(), gate.f32(), ld_g, alpha, residual.f32(), s.B, s.T, s.D);
}

}  // namespace vt
