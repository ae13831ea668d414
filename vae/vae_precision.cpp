#include "vae/vae_precision.h"

#include <stdexcept>

namespace vt {

VaePrecision parse_vae_precision(const std::string& s) {
  if (s == "fp32") return VaePrecision::Fp32;
  if (s == "tf32") return VaePrecision::Tf32;
  if (s == "bf16") return VaePrecision::Bf16;
  throw std::invalid_argument("vae.precision: '" + s + "' is not one of fp32, tf32, bf16");
}

const char* vae_precision_name(VaePrecision p) {
  switch (p) {
    case VaePrecision::Tf32:
      return "tf32";
    case VaePrecision::Bf16:
      return "bf16";
    default:
      return "fp32";
  }
}

}  // namespace vt
