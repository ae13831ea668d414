// CPU embedding kernels on raw pointers; see kernels/embedding.h. Ids are
// validated by the caller.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t B, int64_t D);
void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t B, int64_t D);
void timestep_embedding(const float* t, float* out, int64_t B, int64_t dim, double max_period);
void sincos_pos_embed_2d(float* out, int64_t grid_h, int64_t grid_w, int64_t D);

}  // namespace cpu
}  // namespace vt
