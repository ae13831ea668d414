// Files written by Python (tools/make_core_fixtures.py: the `safetensors`
// library and numpy) read by the C++ readers, and the C++ writers
// reproducing the Python bytes. Expected values are the closed forms the
// script documents.
#include <gtest/gtest.h>

#include <cstring>

#include "core/atomic_file.h"
#include "core/npz.h"
#include "core/safetensors.h"
#include "test_fs.h"

using namespace vt;

static const std::string kDir = std::string(VT_FIXTURES_DIR) + "/core/";

TEST(PyFixtures, SafetensorsFromPythonLibrary) {
  SafetensorsMetadata meta;
  auto t = load_safetensors(kDir + "py_tensors.safetensors", &meta);
  EXPECT_EQ(meta, (SafetensorsMetadata{{"format", "pt"}}));
  ASSERT_EQ(t.size(), 7u);
  {
    const Tensor& x = t.at("f32");
    ASSERT_EQ(x.shape(), (Shape{2, 3}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(x.f32()[i], i / 2.0f - 1.0f);
  }
  {
    const Tensor& x = t.at("bf16");
    ASSERT_EQ(x.dtype(), DType::BF16);
    // i/4 is exact in bf16: sign 0, value bits of the float32 top half.
    for (int i = 0; i < 4; ++i) {
      float f = i / 4.0f;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      EXPECT_EQ(x.bf16()[i], static_cast<uint16_t>(bits >> 16));
    }
  }
  {
    const Tensor& x = t.at("f16");
    ASSERT_EQ(x.dtype(), DType::F16);
    // IEEE half bit patterns of -0.5, -0.25, 0, 0.25, 0.5.
    const uint16_t want[] = {0xB800, 0xB400, 0x0000, 0x3400, 0x3800};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(x.data<uint16_t>()[i], want[i]);
  }
  {
    const Tensor& x = t.at("i64");
    ASSERT_EQ(x.dtype(), DType::I64);
    EXPECT_EQ(x.data<int64_t>()[0], -1);
    EXPECT_EQ(x.data<int64_t>()[1], 0);
    EXPECT_EQ(x.data<int64_t>()[2], int64_t(1) << 40);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.at("i32").i32()[i], -7 * i);
  ASSERT_EQ(t.at("u8").shape(), (Shape{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.at("u8").u8()[i], 50 * i);
  EXPECT_EQ(t.at("empty").shape(), (Shape{0, 3}));

  // Writing the same tensors gives the Python library's bytes exactly.
  std::vector<std::pair<std::string, Tensor>> items(t.begin(), t.end());
  EXPECT_EQ(serialize_safetensors(items, meta), read_file(kDir + "py_tensors.safetensors"));
}

static void check_numpy_arrays(const std::map<std::string, NpyArray>& m) {
  ASSERT_EQ(m.size(), 6u);
  const NpyArray& a = m.at("a");
  EXPECT_EQ(a.dtype, "<f8");
  EXPECT_EQ(a.shape, (Shape{3, 4}));
  auto av = a.as<double>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(av[i], i / 8.0);
  auto b = m.at("b").as<uint8_t>();
  ASSERT_EQ(b.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b[i], 25 * i);
  auto c = m.at("c").as<float>();
  EXPECT_EQ(m.at("c").shape, (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c[i], i - 2.5f);
  EXPECT_EQ(m.at("d").as<int64_t>(), (std::vector<int64_t>{-(int64_t(1) << 40), 0, 7}));
  EXPECT_EQ(m.at("e").as<int32_t>(), (std::vector<int32_t>{0, 3, 6, 9}));
  EXPECT_EQ(m.at("s").shape, Shape{});
  EXPECT_EQ(m.at("s").as<double>(), (std::vector<double>{1.25}));
}

TEST(PyFixtures, NpzStoredFromNumpy) { check_numpy_arrays(load_npz(kDir + "py_stored.npz")); }

TEST(PyFixtures, NpzDeflatedFromNumpy) { check_numpy_arrays(load_npz(kDir + "py_deflated.npz")); }

TEST(PyFixtures, NpyBytesMatchNumpy) {
  NpyArray a = load_npy(kDir + "py_a.npy");
  EXPECT_EQ(serialize_npy(a), read_file(kDir + "py_a.npy"));
}

TEST(PyFixtures, FortranOrderRejected) {
  std::string msg = vt_test::error_of([] { load_npy(kDir + "py_fortran.npy"); });
  EXPECT_NE(msg.find("fortran_order arrays are not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("py_fortran.npy"), std::string::npos) << msg;
}
