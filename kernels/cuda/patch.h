// CUDA twins of kernels/cpu/patch.h (patch embedding layout changes, class
// token and position embedding), behind kernels/patch.h. Activations
// (image, patches, tokens, x, out and their gradients) contiguous in `io`
// (F32 or BF16); cls, pos, dcls, dpos fp32. The layout changes are pure
// permutations (exact in any dtype). The parameter gradients dcls/dpos add
// the batch in order b = 0, 1, ... per element, as the CPU: bitwise equal.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

// Layout of the per-token features: patchify's c*p*p + a*p + b (Conv2d
// weight order) or unpatchify's (a*p + b)*C + c (DiT's unpatchify).
enum class PatchLayout { Conv, DiT };

// image [B, C, H, W] <-> tokens [B, (H/p)(W/p), C*p*p]: to_tokens copies the
// image into the tokens, else the tokens into the image (each overwritten).
void patch_permute(void* image, void* tokens, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p,
                   PatchLayout layout, bool to_tokens, DType io, cudaStream_t stream = 0);

void cls_concat(const void* x, const float* cls, void* out, int64_t B, int64_t N, int64_t D, DType io,
                cudaStream_t stream = 0);
void cls_concat_backward(const void* dout, void* dx, float* dcls, int64_t B, int64_t N, int64_t D, DType io,
                         cudaStream_t stream = 0);
// out[b] = x[b, 0]; dx[b, 0] = dout[b], dx[b, t > 0] = 0.
void cls_select(const void* x, void* out, int64_t B, int64_t T, int64_t D, DType io, cudaStream_t stream = 0);
void cls_select_backward(const void* dout, void* dx, int64_t B, int64_t T, int64_t D, DType io,
                         cudaStream_t stream = 0);
void pos_embed_add(const void* x, const float* pos, void* out, int64_t B, int64_t T, int64_t D, DType io,
                   cudaStream_t stream = 0);
void pos_embed_add_backward(const void* dout, float* dpos, int64_t B, int64_t T, int64_t D, DType io,
                            cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
