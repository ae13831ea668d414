#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/safetensors.h"
#include "test_fs.h"

using namespace vt;
using vt_test::error_of;
using vt_test::TmpDir;

namespace {

// Element i of a tensor holding value(i) in its dtype, set from raw bytes so
// the test does not depend on the Tensor conversion code.
Tensor make(DType dt, const Shape& shape, int seed) {
  Tensor t = Tensor::empty(shape, dt);
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t b = 0; b < t.nbytes(); ++b) p[b] = static_cast<unsigned char>((b * 131 + seed * 17 + 7) & 0xff);
  return t;
}

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

std::string file_with_header(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\x01');
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtypeAndMetadata) {
  TmpDir d;
  std::vector<std::pair<std::string, Tensor>> in;
  const DType dts[] = {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32, DType::U8};
  int seed = 0;
  for (DType dt : dts) in.emplace_back(std::string("t_") + dtype_name(dt), make(dt, {3, 5}, seed++));
  in.emplace_back("scalar", make(DType::F32, {}, 9));
  in.emplace_back("empty", Tensor::empty({0, 4}, DType::F32));
  const std::string path = d.file("rt.safetensors");
  save_safetensors(path, in, {{"format", "pt"}, {"note", "a \"quoted\" value"}});

  SafetensorsMetadata meta;
  auto out = load_safetensors(path, &meta);
  EXPECT_EQ(meta.size(), 2u);
  EXPECT_EQ(meta["note"], "a \"quoted\" value");
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    const Tensor& r = out.at(name);
    EXPECT_EQ(r.dtype(), t.dtype());
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_EQ(std::memcmp(r.raw(), t.raw(), t.nbytes()), 0);
  }
  // No temporary file left next to the target.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(d.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Safetensors, NonContiguousInputIsWrittenInLogicalOrder) {
  TmpDir d;
  Tensor base = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor tr = base.transpose(0, 1);  // [3, 2]: 0 3 1 4 2 5
  Tensor sl = base.slice(1, 1, 3);   // [2, 2]: 1 2 4 5
  save_safetensors(d.file("v.safetensors"), {{"tr", tr}, {"sl", sl}});
  auto out = load_safetensors(d.file("v.safetensors"));
  EXPECT_EQ(out["tr"].shape(), (Shape{3, 2}));
  EXPECT_EQ(out["tr"].to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(out["sl"].to_vector(), (std::vector<float>{1, 2, 4, 5}));
}

TEST(Safetensors, LayoutAlignedHeaderPaddedAndOrdered) {
  // The data region begins at a multiple of 8 and tensors follow the Python
  // order (dtype alignment, then name), so each is aligned to its size.
  std::string bytes = serialize_safetensors(
      {{"b_u8", make(DType::U8, {3}, 1)}, {"a_i64", make(DType::I64, {2}, 2)}, {"z_f32", make(DType::F32, {1}, 3)},
       {"c_f32", make(DType::F32, {1}, 4)}});
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  EXPECT_LT(header.find("\"a_i64\""), header.find("\"c_f32\""));
  EXPECT_LT(header.find("\"c_f32\""), header.find("\"z_f32\""));
  EXPECT_LT(header.find("\"z_f32\""), header.find("\"b_u8\""));
  EXPECT_EQ(bytes.size(), 8 + n + 16 + 4 + 4 + 3);
}

TEST(Safetensors, LazyReaderLoadsOneTensor) {
  TmpDir d;
  Tensor a = make(DType::F32, {4, 4}, 1), b = make(DType::I32, {7}, 2);
  save_safetensors(d.file("l.safetensors"), {{"a", a}, {"b", b}});
  SafetensorsReader r(d.file("l.safetensors"));
  EXPECT_EQ(r.names().size(), 2u);
  EXPECT_TRUE(r.contains("b"));
  EXPECT_EQ(r.entry("b").shape, (Shape{7}));
  Tensor got = r.load("b");
  EXPECT_EQ(std::memcmp(got.raw(), b.raw(), b.nbytes()), 0);
  std::string msg = error_of([&] { r.load("nope"); });
  EXPECT_NE(msg.find("no tensor 'nope'"), std::string::npos) << msg;
}

TEST(Safetensors, WriterRejectsBadInput) {
  TmpDir d;
  Tensor t = make(DType::F32, {2}, 0);
  EXPECT_NE(error_of([&] { save_safetensors(d.file("x"), {{"a", t}, {"a", t}}); }).find("duplicate tensor name 'a'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { save_safetensors(d.file("x"), {{"u", Tensor()}}); }).find("'u' is undefined"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(d.file("x")));
}

struct Malformed {
  const char* label;
  std::string bytes;
  const char* expect;
};

TEST(Safetensors, MalformedFilesGiveSpecificErrors) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Malformed> cases = {
      {"empty file", "", "file shorter than 8 bytes"},
      {"7 bytes", std::string(7, '\0'), "file shorter than 8 bytes"},
      {"header beyond file", le64(1000) + "{}", "exceeds the file size"},
      {"absurd header", le64(1ull << 40) + std::string(16, ' '), "larger than the 100 MB limit"},
      {"not json", file_with_header("{\"w\": [1, 2", 0), "header is not valid JSON"},
      {"not an object", file_with_header("[1,2,3]", 0), "header is not a JSON object"},
      {"unknown dtype", file_with_header(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'w': unknown dtype 'F64'"},
      {"begin > end", file_with_header(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 8),
       "tensor 'w': data_offsets begin 4 > end 2"},
      {"end outside data", file_with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       "tensor 'w': data_offsets [0, 16] outside the data region of 8 bytes"},
      {"shape mismatch", file_with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape [3] x F32 does not match the byte count 8"},
      {"shape overflow",
       file_with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape [4294967296, 4294967296, 16] overflows int64"},
      {"negative dim", file_with_header(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape entry is negative"},
      {"missing offsets", file_with_header(R"({"w":{"dtype":"F32","shape":[2]}})", 8),
       "tensor 'w': data_offsets must be an array"},
      {"missing dtype", file_with_header(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8),
       "tensor 'w': missing or non-string dtype"},
      {"entry not object", file_with_header(R"({"w":5})", 0), "tensor 'w': entry is not an object"},
      {"bad metadata", file_with_header(R"({"__metadata__":{"k":1},)" + ok_entry + "}", 8),
       "__metadata__ value of 'k' is not a string"},
      {"overlap",
       file_with_header("{" + ok_entry + R"(,"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       "tensor 'v': bytes overlap tensor 'w'"},
  };
  TmpDir d;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string path = d.write("bad.safetensors", c.bytes);
    std::string msg = error_of([&] { load_safetensors(path); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "message: " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << "message lacks the file: " << msg;
  }
  // A well-formed file built the same way loads (guards the table itself).
  const std::string good = d.write("good.safetensors", file_with_header("{" + ok_entry + "}", 8));
  EXPECT_EQ(load_safetensors(good).at("w").shape(), (Shape{2}));
}

TEST(Safetensors, MissingFileNamesPath) {
  std::string msg = error_of([] { load_safetensors("/nonexistent/dir/x.safetensors"); });
  EXPECT_NE(msg.find("/nonexistent/dir/x.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

TEST(AtomicFile, ReplacesWholeFileAndCleansUpOnAbandon) {
  TmpDir d;
  const std::string p = d.file("f.bin");
  write_file_atomic(p, std::string("first version"));
  write_file_atomic(p, std::string("second"));
  EXPECT_EQ(read_file(p), "second");
  {
    AtomicFileWriter w(p);
    w.write("partial");
    EXPECT_TRUE(std::filesystem::exists(w.temp_path()));
    // destroyed without commit: the old file stays, the temporary goes
  }
  EXPECT_EQ(read_file(p), "second");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(d.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  std::string msg = error_of([&] { write_file_atomic(d.file("no/such/dir/f"), std::string("x")); });
  EXPECT_NE(msg.find("no/such/dir/f"), std::string::npos) << msg;
}
