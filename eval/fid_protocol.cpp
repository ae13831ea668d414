#include "eval/fid_protocol.h"

#include <stdexcept>

#include "eval/inception.h"
#include "eval/tf_resize.h"
#include "kernels/resize.h"

namespace vt {

FidProtocol fid_protocol_from_name(const std::string& name) {
  if (name == "adm") return FidProtocol::Adm;
  if (name == "pytorch-fid") return FidProtocol::PytorchFid;
  throw std::invalid_argument("--protocol must be adm or pytorch-fid, got '" + name + "'");
}

const char* fid_protocol_name(FidProtocol p) { return p == FidProtocol::Adm ? "adm" : "pytorch-fid"; }

void preprocess_fid_image(const uint8_t* hwc, int64_t h, int64_t w, FidProtocol p, const Tensor& batch, int64_t i) {
  constexpr int64_t kSize = 299;
  if (batch.dtype() != DType::F32 || batch.dim() != 4 || batch.size(1) != 3 || batch.size(2) != kSize ||
      batch.size(3) != kSize || !batch.is_contiguous() || !batch.device().is_cpu() || i < 0 || i >= batch.size(0))
    throw std::invalid_argument("preprocess_fid_image: batch " + batch.str() + " must be contiguous host F32 [B, 3, 299, 299] (slot " +
                                std::to_string(i) + ")");
  float* dst = batch.f32() + i * 3 * kSize * kSize;
  const int64_t n = 3 * kSize * kSize;
  if (p == FidProtocol::Adm) {
    tf1_resize_bilinear_u8(hwc, h, w, dst, kSize, kSize);
    for (int64_t k = 0; k < n; ++k) dst[k] = (dst[k] - 128.f) * 0.0078125f;  // Sub 128, Mul 1/128 (exact)
    return;
  }
  // pytorch-fid: the float operations of InceptionFid::features on the host.
  Tensor u8 = Tensor::wrap(const_cast<uint8_t*>(hwc), {1, h, w, 3}, DType::U8);
  Tensor unit = u8_nhwc_to_unit_nchw(u8);
  Tensor slot = batch.slice(0, i, i + 1);
  if (h == kSize && w == kSize) slot.copy_from(unit);
  else resize_bilinear(unit, slot);
  for (int64_t k = 0; k < n; ++k) dst[k] = 2.f * dst[k] - 1.f;
}

}  // namespace vt
