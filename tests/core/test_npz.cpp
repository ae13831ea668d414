#include <gtest/gtest.h>

#include <cmath>

#include "core/atomic_file.h"
#include "core/npz.h"
#include "test_fs.h"

using namespace vt;
using vt_test::error_of;
using vt_test::TmpDir;

namespace {

std::map<std::string, NpyArray> sample_arrays() {
  std::vector<double> f64(12);
  for (int i = 0; i < 12; ++i) f64[i] = std::pow(-1.5, i) / 3.0;
  std::vector<uint8_t> u8(2 * 4 * 4 * 3);
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<uint8_t>((i * 37) & 0xff);
  std::vector<float> f32 = {0.f, -1.f, 3.25f, 1e-30f, -INFINITY};
  std::vector<int64_t> i64 = {-(1ll << 50), 1, 0};
  std::vector<int32_t> i32 = {7, -8};
  return {{"mu", NpyArray::from(f64, {3, 4})},
          {"arr_0", NpyArray::from(u8, {2, 4, 4, 3})},
          {"x", NpyArray::from(f32, {5})},
          {"ids", NpyArray::from(i64, {3})},
          {"small", NpyArray::from(i32, {1, 2})},
          {"scalar", NpyArray::from(std::vector<double>{2.5}, {})},
          {"none", NpyArray::from(std::vector<float>{}, {0, 3})}};
}

void expect_same(const std::map<std::string, NpyArray>& a, const std::map<std::string, NpyArray>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, v] : a) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(b.count(k));
    EXPECT_EQ(b.at(k).dtype, v.dtype);
    EXPECT_EQ(b.at(k).shape, v.shape);
    EXPECT_EQ(b.at(k).bytes, v.bytes);
  }
}

}  // namespace

TEST(Npz, RoundTripStoredAndDeflated) {
  TmpDir d;
  auto in = sample_arrays();
  save_npz(d.file("s.npz"), in, false);
  save_npz(d.file("c.npz"), in, true);
  expect_same(in, load_npz(d.file("s.npz")));
  expect_same(in, load_npz(d.file("c.npz")));
  // Compression is real: repetitive data shrinks.
  std::map<std::string, NpyArray> big = {{"z", NpyArray::from(std::vector<uint8_t>(20000, 3), {20000})}};
  save_npz(d.file("bs.npz"), big, false);
  save_npz(d.file("bc.npz"), big, true);
  EXPECT_GT(read_file(d.file("bs.npz")).size(), 20000u);
  EXPECT_LT(read_file(d.file("bc.npz")).size(), 2000u);
  expect_same(big, load_npz(d.file("bc.npz")));
}

// Every member's local header and central-directory entry carry the fixed
// MS-DOS time 0 and date (1980 - 1980) << 9 | 1 << 5 | 1 (PKWARE APPNOTE
// 4.3.7 / 4.3.12: time at offset 10 / 12, date at 12 / 14, little-endian),
// not the time of writing, so an npz written now and one written later from
// the same arrays are the same bytes (`dittrain sample`'s resume is checked
// with cmp).
TEST(Npz, MemberTimesAreFixedSoBytesAreReproducible) {
  TmpDir d;
  const auto in = sample_arrays();
  save_npz(d.file("a.npz"), in, false);
  const std::string a = read_file(d.file("a.npz"));
  auto u16 = [&](size_t at) { return static_cast<unsigned>(static_cast<uint8_t>(a[at])) |
                                     static_cast<unsigned>(static_cast<uint8_t>(a[at + 1])) << 8; };
  size_t local = 0, central = 0;
  for (size_t at = a.find("PK\x03\x04"); at != std::string::npos; at = a.find("PK\x03\x04", at + 4), ++local) {
    EXPECT_EQ(u16(at + 10), 0u) << "local header at " << at;
    EXPECT_EQ(u16(at + 12), 33u) << "local header at " << at;
  }
  for (size_t at = a.find("PK\x01\x02"); at != std::string::npos; at = a.find("PK\x01\x02", at + 4), ++central) {
    EXPECT_EQ(u16(at + 12), 0u) << "central entry at " << at;
    EXPECT_EQ(u16(at + 14), 33u) << "central entry at " << at;
  }
  EXPECT_EQ(local, in.size());
  EXPECT_EQ(central, in.size());
  save_npz(d.file("b.npz"), in, false);
  EXPECT_EQ(read_file(d.file("b.npz")), a);
}

TEST(Npz, EmptyArchiveRoundTrips) {
  TmpDir d;
  save_npz(d.file("e.npz"), {}, true);
  EXPECT_TRUE(load_npz(d.file("e.npz")).empty());
}

TEST(Npy, HeaderLayoutAndRoundTrip) {
  NpyArray a = NpyArray::from(std::vector<float>{1, 2, 3}, {3});
  std::string s = serialize_npy(a);
  EXPECT_EQ(s.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ((s.size() - 12) % 64, 0u);  // data start at a multiple of 64
  EXPECT_NE(s.find("'shape': (3,), }"), std::string::npos);
  EXPECT_EQ(s[s.size() - 13], '\n');
  NpyArray b = parse_npy(s.data(), s.size(), "mem");
  EXPECT_EQ(b.as<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(b.to_f64(), (std::vector<double>{1, 2, 3}));
  TmpDir d;
  save_npy(d.file("a.npy"), a);
  EXPECT_EQ(load_npy(d.file("a.npy")).bytes, a.bytes);
}

TEST(Npy, TensorConversion) {
  Tensor t = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3}).transpose(0, 1);
  NpyArray a = NpyArray::from_tensor(t);
  EXPECT_EQ(a.shape, (Shape{3, 2}));
  EXPECT_EQ(a.as<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor back = NpyArray::from(std::vector<double>{0.5, -2}, {2}).to_tensor();
  EXPECT_EQ(back.dtype(), DType::F32);
  EXPECT_EQ(back.to_vector(), (std::vector<float>{0.5f, -2.f}));
  EXPECT_NE(error_of([&] { a.as<double>(); }).find("dtype '<f4'"), std::string::npos);
}

namespace {
std::string npy_with_header(const std::string& header, size_t data_bytes, int version = 1) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(version);
  s += '\0';
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  if (version >= 2) s += std::string(2, '\0');
  return s + header + std::string(data_bytes, '\x02');
}
}  // namespace

TEST(Npy, MalformedInputsGiveSpecificErrors) {
  struct Case {
    const char* label;
    std::string bytes;
    const char* expect;
  };
  const std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n";
  std::string truncated_header = npy_with_header(h, 0);
  truncated_header.resize(30);
  std::vector<Case> cases = {
      {"too short", "\x93NUM", "truncated"},
      {"bad magic", "PK\x03\x04xxxxxxxxxxxxxxxx", "bad magic"},
      {"bad version", npy_with_header(h, 48, 9), "unsupported npy format version 9"},
      {"truncated header", truncated_header, "truncated header"},
      {"data short", npy_with_header(h, 40), "shape [2, 3] of <f8 needs 48 data bytes, found 40"},
      {"data long", npy_with_header(h, 56), "needs 48 data bytes, found 56"},
      {"fortran", npy_with_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48),
       "fortran_order arrays are not supported"},
      {"big endian", npy_with_header("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", 16),
       "big-endian dtype '>f8'"},
      {"unsupported dtype", npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16),
       "unsupported dtype '<c8'"},
      {"structured", npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
       "structured dtypes are not supported"},
      {"garbage header", npy_with_header("{'descr' '<f8'}", 0), "bad header"},
      {"missing shape", npy_with_header("{'descr': '<f8', 'fortran_order': False}", 0),
       "missing 'descr', 'fortran_order' or 'shape'"},
      {"huge shape", npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 8),
       "shape [4294967296, 4294967296] overflows int64"},
  };
  TmpDir d;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string p = d.write("bad.npy", c.bytes);
    std::string msg = error_of([&] { load_npy(p); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "message: " << msg;
    EXPECT_NE(msg.find(p), std::string::npos) << "message lacks the file: " << msg;
  }
  // The well-formed twin of the table's header parses (guards the table).
  std::string good = npy_with_header(h, 48);
  EXPECT_EQ(parse_npy(good.data(), good.size(), "good").shape, (Shape{2, 3}));
  std::string v2 = npy_with_header(h, 48, 2);
  EXPECT_EQ(parse_npy(v2.data(), v2.size(), "v2").shape, (Shape{2, 3}));
}

TEST(Npz, MalformedArchivesNameTheFile) {
  TmpDir d;
  std::string msg = error_of([&] { load_npz(d.file("missing.npz")); });
  EXPECT_NE(msg.find("missing.npz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;

  const std::string junk = d.write("junk.npz", std::string(200, 'x'));
  msg = error_of([&] { load_npz(junk); });
  EXPECT_NE(msg.find("junk.npz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Not a zip archive"), std::string::npos) << msg;

  // A valid archive whose member is not an npy: error names file and member.
  save_npz(d.file("ok.npz"), {{"a", NpyArray::from(std::vector<float>{1, 2}, {2})}}, false);
  std::string bytes = read_file(d.file("ok.npz"));
  size_t magic = bytes.find("\x93NUMPY");
  ASSERT_NE(magic, std::string::npos);
  std::string bad_member = bytes;
  bad_member[magic + 1] = 'X';
  const std::string p = d.write("badmember.npz", bad_member);
  msg = error_of([&] { load_npz(p); });
  // Stored members carry a CRC, so libzip may report the corruption first;
  // either way the message names the archive and the member.
  EXPECT_NE(msg.find("badmember.npz:a.npy"), std::string::npos) << msg;

  // Truncated archive.
  const std::string cut = d.write("cut.npz", bytes.substr(0, bytes.size() / 2));
  msg = error_of([&] { load_npz(cut); });
  EXPECT_NE(msg.find("cut.npz"), std::string::npos) << msg;
  EXPECT_FALSE(msg.empty());
}
