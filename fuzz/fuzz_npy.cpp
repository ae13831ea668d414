// npy/npz reader (core/npz.h) on arbitrary bytes: a zip archive ("PK") goes
// through load_npz, anything else through parse_npy. Malformed input must be
// a std::runtime_error; an accepted array must convert to a Tensor and
// survive serialize_npy/parse_npy unchanged.
#include <cstdint>
#include <stdexcept>

#include "core/npz.h"
#include "fuzz/fuzz_util.h"

namespace {

void check_array(const vt::NpyArray& a, const std::string& what) {
  const vt::Tensor t = a.to_tensor();
  if (t.shape() != a.shape) vt_fuzz::fail(what + ": to_tensor changed the shape");
  if (a.to_f64().size() != static_cast<size_t>(a.numel())) vt_fuzz::fail(what + ": to_f64 size");
  const std::string bytes = vt::serialize_npy(a);
  const vt::NpyArray b = vt::parse_npy(bytes.data(), bytes.size(), what + " (rewritten)");
  if (b.dtype != a.dtype || b.shape != a.shape || b.bytes != a.bytes) vt_fuzz::fail(what + ": round trip changed it");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = vt_fuzz::scratch_path("in.npz");
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    vt_fuzz::write_scratch(path, data, size);
    std::map<std::string, vt::NpyArray> arrays;
    try {
      arrays = vt::load_npz(path);
    } catch (const std::runtime_error&) {
      return 0;
    }
    for (const auto& [key, a] : arrays) check_array(a, key);
    return 0;
  }
  vt::NpyArray a;
  try {
    a = vt::parse_npy(data, size, "fuzz.npy");
  } catch (const std::runtime_error&) {
    return 0;
  }
  check_array(a, "fuzz.npy");
  return 0;
}
