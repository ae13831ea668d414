// Drop-path (stochastic depth), timm semantics (timm.layers.drop_path): per
// sample b of the batch, keep with probability keep_prob = 1 - rate; a kept
// sample is scaled by 1/keep_prob, a dropped one is zeroed. The scale factors
// are drawn once per forward with drop_path_scales() and reused by backward.
//
// Randomness: sample b's draw is the first uniform of vt::Philox(seed, stream,
// first_block = sample_offset + b * sample_stride), so the mask is a pure
// function of (seed, stream, global sample index): identical across thread
// counts, devices and resumes. Data-parallel ranks pass where their rows sit
// in the global batch: rank r of W with the DistributedSampler interleave
// has offset r, stride W (row b is global row b * W + r).
// Callers build stream from purpose tags, e.g. philox_stream(step, layer, sublayer).
// On CUDA the mask is drawn by a kernel from the same keys
// (core/philox_block.h, kernels/cuda/drop_path.h): identical masks.
//
// Dtypes: scales F32 always; x/out/residual/dout/dx F32, or BF16 (all the
// same) on CUDA. Errors: std::invalid_argument naming the op and tensor.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

// Fills scales [B] (F32, CPU or CUDA) with 0 or 1/keep_prob. rate must be in
// [0, 1); rate 0 (or inference) gives all ones. sample_offset >= 0 and
// sample_stride >= 1, else std::invalid_argument.
void drop_path_scales(float rate, uint64_t seed, uint64_t stream, const Tensor& scales,
                      int64_t sample_offset = 0, int64_t sample_stride = 1);
// The same masks with stream = philox_stream(step[0], block, sublayer) (the
// backbone's key) formed where they are drawn, from step: I64 [1] on the
// scales' device. A CUDA Graph replays one captured launch with each step's
// number written there (train/step_graph.h).
void drop_path_scales_at(float rate, uint64_t seed, const Tensor& step, uint64_t block, uint64_t sublayer,
                         const Tensor& scales, int64_t sample_offset = 0, int64_t sample_stride = 1);

// out[b, ...] = x[b, ...] * scales[b]; x, out [B, ...] contiguous, same
// shape (out may be x). Backward is the same map: dx = dout * scales
// (overwritten), so drop_path_backward is drop_path_forward applied to dout.
void drop_path_forward(const Tensor& x, const Tensor& scales, const Tensor& out);
void drop_path_backward(const Tensor& dout, const Tensor& scales, const Tensor& dx);

// Fused residual form: residual[b, ...] += x[b, ...] * scales[b].
void drop_path_add(const Tensor& x, const Tensor& scales, const Tensor& residual);

}  // namespace vt
