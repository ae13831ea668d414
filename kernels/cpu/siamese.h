// CPU SiameseNorm kernels on raw fp32 pointers (see kernels/siamese.h for the
// semantics and the Tensor API). The argument structs are plain data. The
// CUDA twin (kernels/cuda/siamese.h) has its own structs (SiameseInputArgs,
// ...), whose row pointers are untyped with an `io` dtype (F32 or BF16);
// cuda::f32_args() converts these CPU structs into them for fp32 tensors.
//
// Rows are contiguous [rows, d]. Statistics arrays mean/rstd are [3, rows]:
// slot 0 = post norm (of x), 1 = pre norm (of y), 2 = input norm (of s);
// slots of disabled norms are left untouched.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// One LayerNorm of the fused input kernel. weight/bias may be null
// (non-affine, e.g. DiT's norm_k).
struct SiameseNormPtrs {
  bool enabled = false;
  const float* weight = nullptr;
  const float* bias = nullptr;
};

// The forward definition, per row r with sample b = r / rows_per_sample:
//   u = post.enabled ? LN_post(x) : x          (0 when x == null)
//   v = pre.enabled  ? LN_pre(y)  : y          (0 when y == null)
//   s = u + v
//   n = input.enabled ? LN_in(s) : s
//   z = shift ? n * (1 + scale[b]) + shift[b] : n
struct SiameseInputRows {
  int64_t rows = 0, d = 0;
  float eps = 1e-6f;
  const float* x = nullptr;
  const float* y = nullptr;
  SiameseNormPtrs post, pre, input;
  const float* shift = nullptr;  // [B, mod_ld] rows; both null = no modulate
  const float* scale = nullptr;
  int64_t mod_ld = 0;
  int64_t rows_per_sample = 1;
};

// Writes z, u (when non-null) and, unless use_saved_stats, mean/rstd of the
// enabled norms; with use_saved_stats the given statistics are used (the
// backward's recompute of z).
void siamese_input_forward(const SiameseInputRows& a, float* u, float* z, float* mean, float* rstd,
                           bool use_saved_stats);

// Gradients of the input kernel. dz is required; du (extra gradient of u,
// e.g. from the residual x = u + o/c) and dy_pass (gradient reaching y by
// another path, e.g. the identity y + o) may be null.
//   dx, dy: OVERWRITTEN (required when x / y are given). dx must not alias
//           du; dy may alias dy_pass.
//   *_dw, *_db: ACCUMULATED, each may be null.
//   dshift, dscale: OVERWRITTEN [B, mod_ld] rows (sums over a sample's rows).
struct SiameseInputGradPtrs {
  const float* dz = nullptr;
  const float* du = nullptr;
  const float* dy_pass = nullptr;
  float* dx = nullptr;
  float* dy = nullptr;
  float *post_dw = nullptr, *post_db = nullptr;
  float *pre_dw = nullptr, *pre_db = nullptr;
  float *in_dw = nullptr, *in_db = nullptr;
  float *dshift = nullptr, *dscale = nullptr;
};
void siamese_input_backward(const SiameseInputRows& a, const float* mean, const float* rstd,
                            const SiameseInputGradPtrs& g);

// Residual update of one sublayer, per row r of sample b:
//   o     = drop_scale[b] * gate[b] * f        (each factor 1 when null)
//   x_out = u + o * inv_c                      (when u != null)
//   y_out = y + o                              (when y != null)
// x_out may alias u, y_out may alias y.
struct SiameseResidualRows {
  int64_t rows = 0, d = 0;
  const float* u = nullptr;
  const float* f = nullptr;
  const float* y = nullptr;
  const float* gate = nullptr;  // [B, gate_ld] rows
  int64_t gate_ld = 0;
  const float* drop_scale = nullptr;  // [B]
  int64_t rows_per_sample = 1;
  float inv_c = 1.0f;
};
void siamese_residual_forward(const SiameseResidualRows& a, float* x_out, float* y_out);

// siamese_residual_forward(res, x_out, y_out) and then
// siamese_input_forward(next, u, z, mean, rstd, false), row by row: next.x
// is x_out (or null), next.y y_out (or null); same rows and d. Results equal
// the two calls' bit for bit.
void siamese_residual_input_forward(const SiameseResidualRows& res, float* x_out, float* y_out,
                                    const SiameseInputRows& next, float* u, float* z, float* mean, float* rstd);

// Given dx_out / dy_out (either may be null = zero):
//   df    = drop_scale * gate * (dx_out * inv_c + dy_out)   (OVERWRITTEN)
//   dgate = sum over the sample's rows of drop_scale * f * (dx_out * inv_c + dy_out)
//           (OVERWRITTEN; skipped when null)
// The gradients of u and y are dx_out and dy_out themselves (no copy).
void siamese_residual_backward(const SiameseResidualRows& a, const float* dx_out, const float* dy_out,
                               float* df, float* dgate);

}  // namespace cpu
}  // namespace vt
