// Embedding lookup (DiT LabelEmbedder's embedding_table), sinusoidal
// timestep embedding (DiT TimestepEmbedder.timestep_embedding) and the frozen
// 2D sin-cos position embedding table (DiT/MAE get_2d_sincos_pos_embed).
// All float tensors F32 contiguous; ids I32. CPU: kernels/cpu/embedding.h;
// CUDA: kernels/cuda/embedding.h (the same sums in the same order; CUDA ids
// are copied back to be range-checked); the 2D sin-cos table is computed on
// the host and uploaded (a frozen buffer, built once).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

// out[b, :] = table[ids[b], :]. table [V, D], ids [B] I32, out [B, D].
// An id outside [0, V) throws std::out_of_range naming the id and V.
void embedding_forward(const Tensor& table, const Tensor& ids, const Tensor& out);
// dtable[ids[b], :] += dout[b, :], duplicates summed in batch order
// (deterministic). dtable [V, D] is a parameter gradient: ACCUMULATED.
void embedding_backward(const Tensor& dout, const Tensor& ids, const Tensor& dtable);

// DiT's timestep_embedding: half = dim/2, freq_k = exp(-ln(max_period) k /
// half), out[b] = [cos(t_b freq_0..half-1), sin(t_b freq_0..half-1)] (cos
// first), and a zero last column when dim is odd. t [B] F32 (timesteps as
// floats, may be fractional), out [B, dim]. Like DiT (float32 torch), freq_k
// and t*freq_k are rounded to float32 before cos/sin (each function itself is
// evaluated in double), so the table matches DiT's at t ~ 1000 too, where an
// all-double argument would differ by up to ~6e-5.
void timestep_embedding(const Tensor& t, const Tensor& out, double max_period = 10000.0);

// get_2d_sincos_pos_embed for a grid_h x grid_w grid of tokens (row-major:
// token i*grid_w + j at row i, column j), embed dim D (multiple of 4):
// channels [0, D/2) encode the column j, channels [D/2, D) the row i; each
// half is [sin(pos w_k), cos(pos w_k)] for k < D/4 with w_k = 10000^(-k/(D/4)).
// out [grid_h*grid_w, D] (or [1, grid_h*grid_w, D]). Computed in double.
void sincos_pos_embed_2d(int64_t grid_h, int64_t grid_w, const Tensor& out);

}  // namespace vt
