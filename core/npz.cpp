#include "core/npz.h"

#include <zip.h>

#include <cctype>
#include <cerrno>
#include <limits>
#include <memory>

#include "core/atomic_file.h"

namespace vt {

namespace {

std::runtime_error npy_error(const std::string& what, const std::string& msg) {
  return std::runtime_error("npy '" + what + "': " + msg);
}

size_t descr_itemsize(const std::string& d) {
  if (d == "|u1" || d == "|b1") return 1;
  if (d == "<f4" || d == "<i4") return 4;
  if (d == "<f8" || d == "<i8") return 8;
  return 0;
}

// numpy spells one-byte types with '|' but accepts '<'/'='; '=' is native
// order, which is little-endian on every machine this code targets.
std::string normalize_descr(const std::string& d, const std::string& what) {
  if (d.size() != 3) throw npy_error(what, "unsupported dtype '" + d + "'");
  if (d[0] == '>' && d[2] != '1') throw npy_error(what, "big-endian dtype '" + d + "' is not supported");
  std::string body = d.substr(1);
  std::string n = ((body == "u1" || body == "b1") ? "|" : "<") + body;
  if (descr_itemsize(n) == 0)
    throw npy_error(what, "unsupported dtype '" + d + "' (supported: |u1, |b1, <f4, <f8, <i4, <i8)");
  return n;
}

// Minimal parser for the header, a Python dict literal such as
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  void parse(std::string* descr, bool* fortran, Shape* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') fail("structured dtypes are not supported");
        *descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = parse_bool();
        have_fortran = true;
      } else if (key == "shape") {
        *shape = parse_tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape) fail("missing 'descr', 'fortran_order' or 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& msg) {
    throw npy_error(what_, "bad header (" + msg + " at offset " + std::to_string(pos_) + "): " + s_);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (s_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    fail("expected True or False");
  }
  Shape parse_tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skip_ws();
      if (peek() == ')') { ++pos_; return shape; }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a non-negative integer");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      shape.push_back(v);
      skip_ws();
      if (peek() == ',') ++pos_;
      else if (peek() != ')') fail("expected ',' or ')'");
    }
  }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

std::string zip_error_text(int code) {
  zip_error_t ze;
  zip_error_init_with_code(&ze, code);
  std::string msg = zip_error_strerror(&ze);
  zip_error_fini(&ze);
  return msg;
}

}  // namespace

size_t NpyArray::itemsize() const {
  size_t s = descr_itemsize(dtype);
  if (!s) throw std::invalid_argument("NpyArray: unsupported dtype '" + dtype + "'");
  return s;
}

std::vector<double> NpyArray::to_f64() const {
  const size_t n = static_cast<size_t>(numel());
  if (bytes.size() != n * itemsize())
    throw std::invalid_argument("NpyArray: " + std::to_string(bytes.size()) + " bytes for shape " + shape_str(shape) +
                                " of " + dtype);
  std::vector<double> out(n);
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < n; ++i) {
    if (dtype == "|u1" || dtype == "|b1") out[i] = p[i];
    else if (dtype == "<f4") { float v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; }
    else if (dtype == "<f8") { std::memcpy(&out[i], p + 8 * i, 8); }
    else if (dtype == "<i4") { int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; }
    else { int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<double>(v); }
  }
  return out;
}

NpyArray NpyArray::from_tensor(const Tensor& t) {
  Tensor c = t.to(Device::cpu()).contiguous();
  NpyArray a;
  switch (c.dtype()) {
    case DType::F32: a.dtype = "<f4"; break;
    case DType::U8: a.dtype = "|u1"; break;
    case DType::I32: a.dtype = "<i4"; break;
    case DType::I64: a.dtype = "<i8"; break;
    default:
      throw std::invalid_argument(std::string("NpyArray::from_tensor: no npy dtype for ") + t.str() +
                                  " (convert to F32 first)");
  }
  a.shape = c.shape();
  a.bytes.resize(c.nbytes());
  if (c.nbytes()) std::memcpy(a.bytes.data(), c.raw(), c.nbytes());
  return a;
}

Tensor NpyArray::to_tensor() const {
  if (bytes.size() != static_cast<size_t>(numel()) * itemsize())
    throw std::invalid_argument("NpyArray::to_tensor: " + std::to_string(bytes.size()) + " bytes for shape " +
                                shape_str(shape) + " of " + dtype);
  if (dtype == "<f8") {
    std::vector<double> d = to_f64();
    Tensor t = Tensor::empty(shape, DType::F32);
    for (size_t i = 0; i < d.size(); ++i) t.f32()[i] = static_cast<float>(d[i]);
    return t;
  }
  DType dt = dtype == "<f4" ? DType::F32 : dtype == "<i4" ? DType::I32 : dtype == "<i8" ? DType::I64 : DType::U8;
  Tensor t = Tensor::empty(shape, dt);
  if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

NpyHeader parse_npy_header(const void* data, size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(data);
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10) throw npy_error(what, "truncated: " + std::to_string(size) + " bytes, shorter than the npy preamble");
  if (std::memcmp(p, magic, 6) != 0) throw npy_error(what, "bad magic (not an .npy file)");
  const int major = p[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = p[8] | (static_cast<size_t>(p[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw npy_error(what, "truncated npy preamble");
    hlen = p[8] | (static_cast<size_t>(p[9]) << 8) | (static_cast<size_t>(p[10]) << 16) |
           (static_cast<size_t>(p[11]) << 24);
    hstart = 12;
  } else {
    throw npy_error(what, "unsupported npy format version " + std::to_string(major));
  }
  if (hlen > size - hstart)
    throw npy_error(what, "truncated header: header length " + std::to_string(hlen) + " but only " +
                              std::to_string(size - hstart) + " bytes follow");
  const std::string header(reinterpret_cast<const char*>(p + hstart), hlen);
  NpyHeader h;
  bool fortran = false;
  std::string descr;
  HeaderParser(header, what).parse(&descr, &fortran, &h.shape);
  h.dtype = normalize_descr(descr, what);
  if (fortran) throw npy_error(what, "fortran_order arrays are not supported (write C-order arrays)");
  // Also for zero-element arrays: the strides of the Tensor built from them
  // multiply the other dimensions, which must not overflow.
  try {
    check_shape_fits(h.shape, descr_itemsize(h.dtype));
  } catch (const std::invalid_argument& e) {
    throw npy_error(what, e.what());
  }
  h.data_offset = hstart + hlen;
  h.data_bytes = static_cast<uint64_t>(shape_numel(h.shape)) * descr_itemsize(h.dtype);
  return h;
}

size_t npy_header_size(const void* preamble, size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(preamble);
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10) throw npy_error(what, "truncated: " + std::to_string(size) + " bytes, shorter than the npy preamble");
  if (std::memcmp(p, magic, 6) != 0) throw npy_error(what, "bad magic (not an .npy file)");
  if (p[6] == 1) return 10 + (p[8] | (static_cast<size_t>(p[9]) << 8));
  if ((p[6] == 2 || p[6] == 3) && size >= 12)
    return 12 + (p[8] | (static_cast<size_t>(p[9]) << 8) | (static_cast<size_t>(p[10]) << 16) |
                 (static_cast<size_t>(p[11]) << 24));
  if (p[6] == 2 || p[6] == 3) throw npy_error(what, "truncated npy preamble");
  throw npy_error(what, "unsupported npy format version " + std::to_string(p[6]));
}

NpyArray parse_npy(const void* data, size_t size, const std::string& what) {
  const NpyHeader h = parse_npy_header(data, size, what);
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t avail = size - h.data_offset;
  if (h.data_bytes != avail)
    throw npy_error(what, "shape " + shape_str(h.shape) + " of " + h.dtype + " needs " + std::to_string(h.data_bytes) +
                              " data bytes, found " + std::to_string(avail));
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.bytes.assign(p + h.data_offset, p + size);
  return a;
}

std::string npy_header(const std::string& dtype, const Shape& shape) {
  std::string h = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) h += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) h += ",";
  h += "), }";
  // numpy pads with spaces and ends with '\n' so that the data start at a
  // multiple of 64 bytes.
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  if (h.size() > 65535) throw std::invalid_argument("serialize_npy: header too long for npy 1.0");
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  out += h;
  return out;
}

std::string serialize_npy(const NpyArray& a) {
  const size_t need = static_cast<size_t>(a.numel()) * a.itemsize();
  if (a.bytes.size() != need)
    throw std::invalid_argument("serialize_npy: " + std::to_string(a.bytes.size()) + " bytes for shape " +
                                shape_str(a.shape) + " of " + a.dtype + " (expected " + std::to_string(need) + ")");
  std::string out = npy_header(a.dtype, a.shape);
  out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  return out;
}

NpyArray load_npy(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const std::exception& e) {
    throw npy_error(path, e.what());
  }
  return parse_npy(bytes.data(), bytes.size(), path);
}

void save_npy(const std::string& path, const NpyArray& a) { write_file_atomic(path, serialize_npy(a)); }

std::map<std::string, NpyArray> load_npz(const std::string& path) {
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!za) throw std::runtime_error("npz '" + path + "': cannot open: " + zip_error_text(err));
  std::unique_ptr<zip_t, void (*)(zip_t*)> guard(za, [](zip_t* z) { zip_discard(z); });
  std::map<std::string, NpyArray> out;
  const zip_int64_t n = zip_get_num_entries(za, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      throw std::runtime_error("npz '" + path + "': cannot stat member " + std::to_string(i) + ": " +
                               zip_strerror(za));
    std::string name = st.name ? st.name : "";
    if (name.empty() || name.back() == '/') continue;
    const std::string what = path + ":" + name;
    zip_file_t* zf = zip_fopen_index(za, static_cast<zip_uint64_t>(i), 0);
    if (!zf) throw std::runtime_error("npz '" + what + "': cannot open member: " + zip_strerror(za));
    // Grown as data actually arrive, so a lying size field cannot force a
    // huge allocation; libzip checks the CRC and length at the end.
    std::string buf;
    char chunk[1 << 16];
    while (true) {
      zip_int64_t got = zip_fread(zf, chunk, sizeof(chunk));
      if (got < 0) {
        std::string msg = zip_error_strerror(zip_file_get_error(zf));
        zip_fclose(zf);
        throw std::runtime_error("npz '" + what + "': read failed: " + msg);
      }
      if (got == 0) break;
      buf.append(chunk, static_cast<size_t>(got));
    }
    zip_fclose(zf);
    if ((st.valid & ZIP_STAT_SIZE) && buf.size() != st.size)
      throw std::runtime_error("npz '" + what + "': member is " + std::to_string(buf.size()) +
                               " bytes, the archive says " + std::to_string(st.size));
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = parse_npy(buf.data(), buf.size(), what);
  }
  return out;
}

namespace {
// MS-DOS time and date fields: hours << 11 | minutes << 5 | seconds / 2, and
// (year - 1980) << 9 | month << 5 | day.
constexpr zip_uint16_t kZipEpochTime = 0, kZipEpochDate = (0 << 9) | (1 << 5) | 1;
}  // namespace

void save_npz(const std::string& path, const std::map<std::string, NpyArray>& arrays, bool compress) {
  if (arrays.empty()) {
    // libzip writes nothing for an empty archive; this is the 22-byte
    // end-of-central-directory record numpy writes for np.savez(f).
    std::string eocd = "PK\x05\x06";
    eocd.append(18, '\0');
    write_file_atomic(path, eocd);
    return;
  }
  std::vector<std::string> payloads;  // must outlive zip_close
  payloads.reserve(arrays.size());
  for (const auto& [key, a] : arrays) {
    if (key.empty()) throw std::invalid_argument("save_npz '" + path + "': empty array name");
    payloads.push_back(serialize_npy(a));
  }
  const std::string tmp = atomic_temp_path(path);
  int err = 0;
  zip_t* za = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!za) throw std::runtime_error("npz '" + path + "': cannot create '" + tmp + "': " + zip_error_text(err));
  auto fail = [&](const std::string& msg) {
    std::string full = "npz '" + path + "': " + msg + ": " + zip_strerror(za);
    zip_discard(za);
    std::remove(tmp.c_str());
    throw std::runtime_error(full);
  };
  size_t i = 0;
  for (const auto& kv : arrays) {
    const std::string& data = payloads[i++];
    zip_source_t* src = zip_source_buffer(za, data.data(), data.size(), 0);
    if (!src) fail("cannot create source for '" + kv.first + "'");
    zip_int64_t idx = zip_file_add(za, (kv.first + ".npy").c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (idx < 0) {
      zip_source_free(src);
      fail("cannot add '" + kv.first + "'");
    }
    if (zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0)
      fail("cannot set compression of '" + kv.first + "'");
    // A fixed member time (00:00:00 on 1980-01-01, the zip epoch) instead of
    // the time of writing: the same arrays give the same bytes, so a resumed
    // `dittrain sample` is `cmp`-identical to an uninterrupted one.
    if (zip_file_set_dostime(za, static_cast<zip_uint64_t>(idx), kZipEpochTime, kZipEpochDate, 0) != 0)
      fail("cannot set the time of '" + kv.first + "'");
  }
  if (zip_close(za) != 0) fail("writing the archive failed");
  commit_file_atomic(tmp, path);
}

}  // namespace vt
