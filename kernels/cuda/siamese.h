// CUDA twins of the fused SiameseNorm kernels (kernels/siamese.h, docs/design.md
// §3; arXiv 2602.08064 as released in Qwen-Applications/SiameseNorm).
// Same definitions as kernels/cpu/siamese.h, on raw device pointers:
//   u = post.enabled ? LN_post(x) : x          (0 when x == null)
//   v = pre.enabled  ? LN_pre(y)  : y          (0 when y == null)
//   s = u + v;  n = input.enabled ? LN_in(s) : s
//   z = shift ? n * (1 + scale[b]) + shift[b] : n,  b = r / rows_per_sample
// and the residual x_out = u + o * inv_c, y_out = y + o, o = drop_scale[b] *
// gate[b] * f, with their backward passes.
//
// dtypes: the stream tensors (x, y, u, x_out, y_out, shift, scale, gate and
// every gradient except df) are in `io` (F32 or BF16); the activations the
// sublayer F reads or writes (z, f, df) in `act` (F32 or BF16): bf16 training
// keeps the streams fp32 and hands F bf16 (README, precision table). Set both
// for an all-bf16 call. Norm weights/biases, statistics
// mean/rstd [3, rows] (slot 0 post, 1 pre, 2 input; disabled slots
// untouched), parameter gradients and drop_scale [B] are fp32. Arithmetic and
// statistics are fp32. shift/scale/gate and dshift/dscale/dgate are [B, ld]
// row-strided (column slices of the adaLN output).
//
// Kernels: the input kernels keep each row in registers (row_warp.cuh): one
// warp per row for d <= 1024 (4 rows per block), a block of ceil(d / 1024)
// warps per row for wider rows (d <= 32768; DiT-XL's 1152 takes 2 warps);
// 128-bit loads when d is a multiple of 4 (fp32 streams) / 8 (bf16) and the
// pointers are aligned, else scalar; shuffle statistics. The residual
// kernels are elementwise with 128-bit accesses under the same conditions.
// siamese_residual_input_forward runs a residual and the next sublayer's
// input map in one row kernel, so the streams are read once per sublayer.
// Parameter gradients accumulate and dshift/dscale/dgate are written through
// deterministic column sums (each thread a strip of up to 4 columns read with
// vector loads; fixed 64-row chunks added in order; per-sample sums in row
// order), so repeated runs give identical bits. Aliasing as on the CPU: u may
// alias x, x_out u, y_out y, dy dy_pass; dx must not alias du.
// Errors: std::invalid_argument (bad dtype, d too large, mismatched fused
// arguments), std::runtime_error
// (CUDA errors). All work is queued on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/siamese.h"

namespace vt {
namespace cuda {

struct SiameseNormArgs {
  bool enabled = false;
  const float* weight = nullptr;
  const float* bias = nullptr;
};

struct SiameseInputArgs {
  int64_t rows = 0, d = 0;
  float eps = 1e-6f;
  DType io = DType::F32;
  DType act = DType::F32;  // z
  const void* x = nullptr;
  const void* y = nullptr;
  SiameseNormArgs post, pre, input;
  const void* shift = nullptr;  // [B, mod_ld] rows; both null = no modulate
  const void* scale = nullptr;
  int64_t mod_ld = 0;
  int64_t rows_per_sample = 1;
};

// Writes z, u (when non-null) and, unless use_saved_stats, the statistics of
// the enabled norms.
void siamese_input_forward(const SiameseInputArgs& a, void* u, void* z, float* mean, float* rstd,
                           bool use_saved_stats, cudaStream_t stream = 0);

struct SiameseInputGradArgs {
  const void* dz = nullptr;       // required
  const void* du = nullptr;       // optional
  const void* dy_pass = nullptr;  // optional
  void* dx = nullptr;             // OVERWRITTEN (required when x is given)
  void* dy = nullptr;             // OVERWRITTEN (required when y is given)
  float *post_dw = nullptr, *post_db = nullptr;  // ACCUMULATED, optional
  float *pre_dw = nullptr, *pre_db = nullptr;
  float *in_dw = nullptr, *in_db = nullptr;
  void *dshift = nullptr, *dscale = nullptr;  // OVERWRITTEN [B, mod_ld], optional
};
void siamese_input_backward(const SiameseInputArgs& a, const float* mean, const float* rstd,
                            const SiameseInputGradArgs& g, cudaStream_t stream = 0);

struct SiameseResidualArgs {
  int64_t rows = 0, d = 0;
  DType io = DType::F32;
  DType act = DType::F32;  // f and df
  const void* u = nullptr;
  const void* f = nullptr;
  const void* y = nullptr;
  const void* gate = nullptr;  // [B, gate_ld] rows
  int64_t gate_ld = 0;
  const float* drop_scale = nullptr;  // [B]
  int64_t rows_per_sample = 1;
  float inv_c = 1.0f;
};
void siamese_residual_forward(const SiameseResidualArgs& a, void* x_out, void* y_out, cudaStream_t stream = 0);
// df = drop_scale * gate * (dx_out * inv_c + dy_out) (OVERWRITTEN); dgate
// (OVERWRITTEN, optional) = per-sample column sums of drop_scale * f * (same).
void siamese_residual_backward(const SiameseResidualArgs& a, const void* dx_out, const void* dy_out, void* df,
                               void* dgate, cudaStream_t stream = 0);

// Sublayer k's residual (x_out, y_out from res, as siamese_residual_forward)
// followed by sublayer k+1's input map of the new streams (u, z, statistics,
// as siamese_input_forward without saved statistics) in one kernel. next.x
// must be x_out or null (the input does not read x), next.y y_out or null;
// res and next have the same rows, d, io and act. u may alias res.u, x_out
// res.u and y_out res.y (in place).
void siamese_residual_input_forward(const SiameseResidualArgs& res, void* x_out, void* y_out,
                                    const SiameseInputArgs& next, void* u, void* z, float* mean, float* rstd,
                                    cudaStream_t stream = 0);

// The fp32 CUDA arguments equal to the CPU argument structs (the Tensor API
// in kernels/siamese.cpp builds the CPU structs and hands device pointers on).
inline SiameseNormArgs f32_args(const cpu::SiameseNormPtrs& n) { return {n.enabled, n.weight, n.bias}; }
inline SiameseInputArgs f32_args(const cpu::SiameseInputRows& r) {
  SiameseInputArgs a;
  a.rows = r.rows, a.d = r.d, a.eps = r.eps, a.io = DType::F32, a.x = r.x, a.y = r.y;
  a.post = f32_args(r.post), a.pre = f32_args(r.pre), a.input = f32_args(r.input);
  a.shift = r.shift, a.scale = r.scale, a.mod_ld = r.mod_ld, a.rows_per_sample = r.rows_per_sample;
  return a;
}
inline SiameseInputGradArgs f32_args(const cpu::SiameseInputGradPtrs& p) {
  SiameseInputGradArgs g;
  g.dz = p.dz, g.du = p.du, g.dy_pass = p.dy_pass, g.dx = p.dx, g.dy = p.dy;
  g.post_dw = p.post_dw, g.post_db = p.post_db, g.pre_dw = p.pre_dw, g.pre_db = p.pre_db;
  g.in_dw = p.in_dw, g.in_db = p.in_db, g.dshift = p.dshift, g.dscale = p.dscale;
  return g;
}
inline SiameseResidualArgs f32_args(const cpu::SiameseResidualRows& r) {
  SiameseResidualArgs a;
  a.rows = r.rows, a.d = r.d, a.io = DType::F32, a.u = r.u, a.f = r.f, a.y = r.y, a.gate = r.gate;
  a.gate_ld = r.gate_ld, a.drop_scale = r.drop_scale, a.rows_per_sample = r.rows_per_sample, a.inv_c = r.inv_c;
  return a;
}

}  // namespace cuda
}  // namespace vt
