// The fused SiameseNorm kernels (docs/design.md §3; arXiv 2602.08064, as
// released in Qwen-Applications/SiameseNorm deit-/dit-model-siamesenorm.py).
//
// One residual sublayer k of a SiameseNorm block, x the Post-Norm stream and
// y the Pre-Norm stream, c = c_l = sqrt(2 (l + 1)) (or 1):
//   u = post_norm_k(x);  s = u + pre_norm_k(y)
//   z = input_norm_k(s)                      (DeiT)
//   z = modulate(norm_k(s), shift, scale)    (DiT; norm_k non-affine)
//   o = drop_path(gate * F_k(z));  x = u + o / c;  y = y + o
//
// siamese_input_* is the first line (kernel 1 of docs/design.md §3) and
// siamese_residual_* the last (kernel 2). Each of the three LayerNorms can be
// switched off, and either stream can be absent, so the same kernels also
// express Pre-Norm (y only: z = norm(y)), Post-Norm (x only, no norms:
// z = x), the ablation without normalized input, and the final merges
// (DeiT: final_norm(pre_norm(x) + post_norm(y)); DiT: postnorm(x) + prenorm(y)).
//
// Shapes: streams, u, z and gradients [..., D] F32 contiguous, R rows; on
// CUDA, F's activations z, f and df may be BF16 instead (df takes f's dtype)
// while the streams stay F32: bf16 training (README, precision table).
// mean/rstd [3, R] F32: row 0 post norm, 1 pre norm, 2 input norm (fp32
// statistics computed in double, as kernels/layernorm.h). Norm weight/bias
// [D] (undefined = non-affine). shift/scale/gate [B, D] with any row stride
// (column slices of the adaLN output [B, 6D]); B must divide R (rows of one
// sample are consecutive). drop_scale [B] (kernels/drop_path.h).
// The backward passes recompute the normalised values from the saved
// statistics instead of storing them.
//
// Errors: std::invalid_argument naming the op, the tensor and its shape.
// CPU: OpenMP over rows; parameter gradients over column blocks with double
// accumulators (results independent of the thread count). CUDA:
// kernels/cuda/siamese.h, each row in registers (one warp per row for
// d <= 1024, a block of warps per row beyond), deterministic column sums
// (all-bf16 I/O through the raw vt::cuda API).
#pragma once
#include "core/tensor.h"

namespace vt {

struct SiameseNorm {
  bool enabled = false;
  Tensor weight, bias;  // [D] or undefined (non-affine)
};

struct SiameseInputSpec {
  Tensor x, y;  // streams; either may be undefined
  SiameseNorm post, pre, input;
  Tensor shift, scale;  // [B, D] row-strided, both or neither (DiT modulate)
  float eps = 1e-6f;
};

// Writes z, u (skipped when undefined) and the statistics of the enabled
// norms into mean/rstd; with use_saved_stats the given statistics are used
// instead (recomputing z in a backward pass).
void siamese_input_forward(const SiameseInputSpec& s, const Tensor& u, const Tensor& z, const Tensor& mean,
                           const Tensor& rstd, bool use_saved_stats = false);

struct SiameseInputGrads {
  Tensor dz;       // required
  Tensor du;       // optional: extra gradient of u (the residual's dx_out)
  Tensor dy_pass;  // optional: gradient reaching y by the identity path
  Tensor dx, dy;   // OVERWRITTEN (dx must not alias du; dy may alias dy_pass)
  Tensor post_dw, post_db, pre_dw, pre_db, in_dw, in_db;  // ACCUMULATED, optional
  Tensor dshift, dscale;  // OVERWRITTEN [B, D] row-strided, optional
};
void siamese_input_backward(const SiameseInputSpec& s, const Tensor& mean, const Tensor& rstd,
                            const SiameseInputGrads& g);

struct SiameseResidualSpec {
  Tensor u;           // x base (undefined: no x stream)
  Tensor f;           // F_k(z), required
  Tensor y;           // y stream (undefined: none)
  Tensor gate;        // [B, D] row-strided or undefined
  Tensor drop_scale;  // [B] or undefined
  float inv_c = 1.0f;
};
// x_out = u + o * inv_c, y_out = y + o with o = drop_scale * gate * f;
// x_out may alias u and y_out y.
void siamese_residual_forward(const SiameseResidualSpec& s, const Tensor& x_out, const Tensor& y_out);
// df = drop_scale * gate * (dx_out * inv_c + dy_out) (OVERWRITTEN);
// dgate (OVERWRITTEN, optional) = per-sample sum of drop_scale * f * (same).
void siamese_residual_backward(const SiameseResidualSpec& s, const Tensor& dx_out, const Tensor& dy_out,
                               const Tensor& df, const Tensor& dgate);

// Sublayer k's residual and sublayer k+1's input map in one pass over the
// rows (docs/design.md §3): siamese_residual_forward(res, x_out, y_out), then
// siamese_input_forward(next, u, z, mean, rstd) of the new streams. next.x
// must be x_out or undefined, next.y y_out or undefined; z has f's dtype; u
// may alias res.u. CPU: the two maps row by row, bit-identical to the two
// calls. CUDA: one row kernel, so the streams are read once per sublayer
// (u, f, y read; x_out, y_out, u, z written, against 5 reads and 4 writes
// for the two kernels).
void siamese_residual_input_forward(const SiameseResidualSpec& res, const Tensor& x_out, const Tensor& y_out,
                                    const SiameseInputSpec& next, const Tensor& u, const Tensor& z,
                                    const Tensor& mean, const Tensor& rstd);

// Unfused oracles: the same maps composed of plain layernorm_forward /
// layernorm_backward calls and elementwise loops, with temporaries allocated
// per call. Used by tests and bench/bench_siamese.cpp; CPU only.
void siamese_input_forward_unfused(const SiameseInputSpec& s, const Tensor& u, const Tensor& z,
                                   const Tensor& mean, const Tensor& rstd);
void siamese_input_backward_unfused(const SiameseInputSpec& s, const Tensor& mean, const Tensor& rstd,
                                    const SiameseInputGrads& g);

}  // namespace vt
