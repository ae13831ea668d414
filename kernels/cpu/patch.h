// CPU patch/token layout kernels on raw fp32 pointers; see kernels/patch.h.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void patchify(const float* image, float* patches, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p);
void patchify_backward(const float* dpatches, float* dimage, int64_t B, int64_t C, int64_t H, int64_t W,
                       int64_t p);
void unpatchify(const float* tokens, float* image, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p);
void unpatchify_backward(const float* dimage, float* dtokens, int64_t B, int64_t C, int64_t H, int64_t W,
                         int64_t p);

void cls_concat(const float* x, const float* cls, float* out, int64_t B, int64_t N, int64_t D);
void cls_concat_backward(const float* dout, float* dx, float* dcls, int64_t B, int64_t N, int64_t D);
void cls_select(const float* x, float* out, int64_t B, int64_t T, int64_t D);
void cls_select_backward(const float* dout, float* dx, int64_t B, int64_t T, int64_t D);

void pos_embed_add(const float* x, const float* pos, float* out, int64_t B, int64_t T, int64_t D);
void pos_embed_add_backward(const float* dout, float* dpos, int64_t B, int64_t T, int64_t D);

}  // namespace cpu
}  // namespace vt
