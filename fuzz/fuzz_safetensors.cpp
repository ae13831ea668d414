// safetensors reader (core/safetensors.h) on arbitrary bytes. Every malformed
// file must be a std::runtime_error (anything else escaping is a finding);
// every accepted file must survive a write/read round trip unchanged.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/safetensors.h"
#include "fuzz/fuzz_util.h"

namespace {

using Named = std::vector<std::pair<std::string, vt::Tensor>>;

Named load_all(const std::string& path, vt::SafetensorsMetadata* meta) {
  vt::SafetensorsReader r(path);
  Named out;
  for (const auto& e : r.entries()) out.emplace_back(e.name, r.load(e.name));
  *meta = r.metadata();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = vt_fuzz::scratch_path("in.safetensors");
  static const std::string again = vt_fuzz::scratch_path("again.safetensors");
  vt_fuzz::write_scratch(path, data, size);
  Named tensors;
  vt::SafetensorsMetadata meta;
  try {
    tensors = load_all(path, &meta);
  } catch (const std::runtime_error&) {
    return 0;  // rejected with the documented error
  }
  for (const auto& [name, t] : tensors)
    if (name.empty()) return 0;  // the writer refuses empty names (as the Python library does)

  const std::string bytes = vt::serialize_safetensors(tensors, meta);
  vt_fuzz::write_scratch(again, bytes.data(), bytes.size());
  vt::SafetensorsMetadata meta2;
  const Named back = load_all(again, &meta2);
  if (back.size() != tensors.size() || meta2 != meta) vt_fuzz::fail("round trip changed names or metadata");
  std::map<std::string, const vt::Tensor*> by_name;
  for (const auto& [name, t] : back) by_name[name] = &t;
  for (const auto& [name, t] : tensors) {
    auto it = by_name.find(name);
    if (it == by_name.end()) vt_fuzz::fail("round trip lost tensor '" + name + "'");
    const vt::Tensor& u = *it->second;
    if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes() ||
        (t.nbytes() && std::memcmp(u.raw(), t.raw(), t.nbytes()) != 0))
      vt_fuzz::fail("round trip changed tensor '" + name + "'");
  }
  return 0;
}
