#include "core/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "core/atomic_file.h"

namespace vt {

namespace {

constexpr uint64_t kMaxHeader = 100ull * 1000 * 1000;

std::runtime_error st_error(const std::string& path, const std::string& msg) {
  return std::runtime_error("safetensors '" + path + "': " + msg);
}

std::string tensor_ctx(const std::string& name) { return "tensor '" + name + "': "; }

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The Python library orders by its Dtype enum, descending; for our dtypes
// that is I64 > F32 > I32 > BF16 > F16 > U8.
int dtype_rank(DType dt) {
  switch (dt) {
    case DType::I64: return 5;
    case DType::F32: return 4;
    case DType::I32: return 3;
    case DType::BF16: return 2;
    case DType::F16: return 1;
    case DType::U8: return 0;
  }
  return 0;
}

uint64_t json_u64(const nlohmann::json& v, const std::string& path, const std::string& what) {
  if (!v.is_number_integer()) throw st_error(path, what + " is not an integer (" + v.dump() + ")");
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  int64_t s = v.get<int64_t>();
  if (s < 0) throw st_error(path, what + " is negative (" + v.dump() + ")");
  return static_cast<uint64_t>(s);
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw st_error(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) throw st_error(path, "file shorter than 8 bytes (" + std::to_string(file_size) + " bytes)");
  unsigned char lenbuf[8];
  in.read(reinterpret_cast<char*>(lenbuf), 8);
  const uint64_t n = read_le64(lenbuf);
  if (n > kMaxHeader)
    throw st_error(path, "header length " + std::to_string(n) + " is larger than the 100 MB limit");
  if (n > file_size - 8)
    throw st_error(path, "header length " + std::to_string(n) + " exceeds the file size " + std::to_string(file_size));
  std::string header(n, '\0');
  in.read(&header[0], static_cast<std::streamsize>(n));
  if (!in) throw st_error(path, "read of the header failed");
  data_start_ = 8 + n;
  const uint64_t data_size = file_size - data_start_;

  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    throw st_error(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw st_error(path, "header is not a JSON object");

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw st_error(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw st_error(path, "__metadata__ value of '" + m.key() + "' is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string ctx = tensor_ctx(name);
    if (!v.is_object()) throw st_error(path, ctx + "entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw st_error(path, ctx + "missing or non-string dtype");
    if (!v.contains("shape") || !v["shape"].is_array()) throw st_error(path, ctx + "missing or non-array shape");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw st_error(path, ctx + "data_offsets must be an array [begin, end]");
    SafetensorsEntry e;
    e.name = name;
    const std::string dt = v["dtype"].get<std::string>();
    try {
      e.dtype = dtype_from_name(dt);
    } catch (const std::exception&) {
      throw st_error(path, ctx + "unknown dtype '" + dt + "' (supported: F32, BF16, F16, I64, I32, U8)");
    }
    for (const auto& d : v["shape"]) {
      const uint64_t dim = json_u64(d, path, ctx + "shape entry");
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw st_error(path, ctx + "shape entry " + std::to_string(dim) + " does not fit int64");
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    // Also for zero-element tensors: their strides multiply the other
    // dimensions, which must not overflow when the Tensor is built.
    try {
      check_shape_fits(e.shape, dtype_size(e.dtype));
    } catch (const std::invalid_argument& err) {
      throw st_error(path, ctx + err.what());
    }
    const uint64_t numel = static_cast<uint64_t>(shape_numel(e.shape));
    e.begin = json_u64(v["data_offsets"][0], path, ctx + "data_offsets[0]");
    e.end = json_u64(v["data_offsets"][1], path, ctx + "data_offsets[1]");
    if (e.begin > e.end)
      throw st_error(path, ctx + "data_offsets begin " + std::to_string(e.begin) + " > end " + std::to_string(e.end));
    if (e.end > data_size)
      throw st_error(path, ctx + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                               "] outside the data region of " + std::to_string(data_size) + " bytes");
    const uint64_t es = dtype_size(e.dtype);
    if (numel * es != e.end - e.begin)
      throw st_error(path, ctx + "shape " + shape_str(e.shape) + " x " + dt + " does not match the byte count " +
                               std::to_string(e.end - e.begin));
    entries_.push_back(std::move(e));
  }
  std::sort(entries_.begin(), entries_.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 0; i < entries_.size(); ++i) {
    // Empty tensors occupy no bytes and may share an offset with anything.
    if (i > 0 && entries_[i].begin != entries_[i].end) {
      for (size_t k = i; k-- > 0;) {
        if (entries_[k].begin == entries_[k].end) continue;
        if (entries_[k].end > entries_[i].begin)
          throw st_error(path, tensor_ctx(entries_[i].name) + "bytes overlap tensor '" + entries_[k].name + "'");
        break;
      }
    }
    index_[entries_[i].name] = i;
  }
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

bool SafetensorsReader::contains(const std::string& name) const { return index_.count(name) != 0; }

const SafetensorsEntry& SafetensorsReader::entry(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw std::out_of_range("safetensors '" + path_ + "': no tensor '" + name + "'");
  return entries_[it->second];
}

Tensor SafetensorsReader::load(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  Tensor t = Tensor::empty(e.shape, e.dtype);
  const uint64_t bytes = e.end - e.begin;
  if (bytes == 0) return t;
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw st_error(path_, tensor_ctx(name) + "cannot reopen file: " + std::strerror(errno));
  in.seekg(static_cast<std::streamoff>(data_start_ + e.begin));
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(bytes));
  // The size was validated at open; a short read means the file changed since.
  if (static_cast<uint64_t>(in.gcount()) != bytes) throw st_error(path_, tensor_ctx(name) + "short read (file truncated?)");
  return t;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, SafetensorsMetadata* metadata) {
  SafetensorsReader r(path);
  std::map<std::string, Tensor> out;
  for (const auto& e : r.entries()) out.emplace(e.name, r.load(e.name));
  if (metadata) *metadata = r.metadata();
  return out;
}

namespace {

struct Prepared {
  std::string head;  // 8-byte length + padded JSON header
  std::vector<Tensor> data;  // contiguous CPU tensors in file order
};

Prepared prepare(const std::vector<std::pair<std::string, Tensor>>& tensors, const SafetensorsMetadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> items;
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw std::invalid_argument("save_safetensors: empty tensor name");
    if (name == "__metadata__") throw std::invalid_argument("save_safetensors: '__metadata__' is reserved");
    if (!t.defined()) throw std::invalid_argument("save_safetensors: tensor '" + name + "' is undefined");
    if (!seen.insert(name).second) throw std::invalid_argument("save_safetensors: duplicate tensor name '" + name + "'");
    items.emplace_back(name, t.to(Device::cpu()).contiguous());
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    int ra = dtype_rank(a.second.dtype()), rb = dtype_rank(b.second.dtype());
    return ra != rb ? ra > rb : a.first < b.first;
  });

  // Built by hand (not nlohmann's dump, which sorts keys) to keep the key
  // order of the Python library.
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      h += (first ? "" : ",") + nlohmann::json(k).dump() + ":" + nlohmann::json(v).dump();
      first = false;
    }
    h += "}";
  }
  uint64_t off = 0;
  Prepared p;
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i].second;
    if (!metadata.empty() || i > 0) h += ",";
    h += nlohmann::json(items[i].first).dump() + ":{\"dtype\":\"" + dtype_name(t.dtype()) + "\",\"shape\":[";
    for (int d = 0; d < t.dim(); ++d) h += (d ? "," : "") + std::to_string(t.shape()[d]);
    h += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + t.nbytes()) + "]}";
    off += t.nbytes();
    p.data.push_back(t);
  }
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');
  const uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) p.head.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  p.head += h;
  return p;
}

}  // namespace

std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const SafetensorsMetadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = p.head;
  for (const Tensor& t : p.data) out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const SafetensorsMetadata& metadata) {
  // Streamed tensor by tensor: optimizer states are too large to duplicate
  // into one string.
  Prepared p = prepare(tensors, metadata);
  AtomicFileWriter w(path);
  w.write(p.head);
  for (const Tensor& t : p.data) w.write(t.raw(), t.nbytes());
  w.commit();
}

}  // namespace vt
