// Untrusted shapes: the element count, every contiguous stride and the byte
// count must fit int64, also when a zero dimension makes the tensor empty.
// The two readers' regression inputs (found by fuzzing) live in
// tests/fixtures/regressions/.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/npz.h"
#include "core/safetensors.h"
#include "core/tensor.h"
#include "test_fs.h"

using namespace vt;
using vt_test::error_of;
using vt_test::TmpDir;

namespace {

const std::string kRegressions = std::string(VT_FIXTURES_DIR) + "/regressions/";

// prod(max(d, 1)) * itemsize <= INT64_MAX, in 128-bit arithmetic.
bool fits_closed_form(const Shape& s, size_t itemsize) {
  unsigned __int128 p = itemsize;
  for (int64_t d : s) {
    p *= static_cast<unsigned __int128>(d > 1 ? d : 1);
    if (p > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) return false;
  }
  return true;
}

TEST(ShapeFits, MatchesTheClosedFormAtTheInt64Boundary) {
  const int64_t big = int64_t{1} << 31;
  const std::vector<std::pair<Shape, size_t>> cases = {
      {{0, big, big}, 1},          // 2^62: fits
      {{0, big, big}, 2},          // 2^63: overflows
      {{big, big}, 1},             // numel 2^62
      {{0, 0, 3, 9223372036475875807}, 4},
      {{1, std::numeric_limits<int64_t>::max()}, 1},
      {{2, std::numeric_limits<int64_t>::max() / 2}, 1},
      {{3, std::numeric_limits<int64_t>::max() / 2}, 1},
      {{}, 8},
      {{0}, 8}};
  for (const auto& [shape, itemsize] : cases) {
    SCOPED_TRACE(shape_str(shape) + " x " + std::to_string(itemsize));
    if (fits_closed_form(shape, itemsize)) {
      EXPECT_NO_THROW(check_shape_fits(shape, itemsize));
    } else {
      const std::string msg = error_of([&] { check_shape_fits(shape, itemsize); });
      EXPECT_NE(msg.find(shape_str(shape)), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(fits_closed_form({0, big, big}, 1), true);
  EXPECT_EQ(fits_closed_form({0, big, big}, 2), false);
  EXPECT_THROW(check_shape_fits({2, -1}, 1), std::invalid_argument);
}

TEST(ShapeFits, TensorConstructionAndViewRefuseOverflowingShapes) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_THROW(Tensor::empty({0, big, big}, DType::F32), std::invalid_argument);
  EXPECT_THROW(Tensor::wrap(nullptr, {0, big, big}, DType::U8), std::invalid_argument);
  const Tensor e = Tensor::empty({0, 4}, DType::F32);
  EXPECT_THROW(e.view({0, big, big}), std::invalid_argument);
  EXPECT_THROW(e.view({big, big, 0}), std::invalid_argument);
  const Tensor ok = e.view({0, 1 << 20, 1 << 20});
  EXPECT_EQ(ok.strides(), (Shape{int64_t{1} << 40, 1 << 20, 1}));
}

TEST(ReaderRegressions, NpyZeroElementsWithHugeDimensionsNamesTheFile) {
  const std::string path = kRegressions + "npy_zero_elements_huge_dims.npy";
  const std::string msg = error_of([&] { load_npy(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("9223372036475875807"), std::string::npos) << msg;
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;

  // The same array as an npz member: the message names file and member.
  TmpDir tmp;
  NpyArray a;
  a.dtype = "<f4";
  a.shape = {0, 0, 3, 9223372036475875807};
  const std::string npz = tmp.file("huge.npz");
  save_npz(npz, {{"arr_0", a}});
  const std::string zmsg = error_of([&] { load_npz(npz); });
  EXPECT_NE(zmsg.find(npz + ":arr_0.npy"), std::string::npos) << zmsg;
  EXPECT_NE(zmsg.find("overflows"), std::string::npos) << zmsg;
}

TEST(ReaderRegressions, SafetensorsZeroElementsWithHugeDimensionsNamesFileAndTensor) {
  const std::string path = kRegressions + "safetensors_zero_elements_huge_dims.safetensors";
  const std::string msg = error_of([&] { SafetensorsReader r(path); });
  EXPECT_NE(msg.find("safetensors '" + path + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor 'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;

  // A dimension beyond int64 is refused too (not clamped).
  TmpDir tmp;
  std::string h = R"({"w":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}})";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  const std::string p2 = tmp.write("u64.safetensors", file + h);
  const std::string m2 = error_of([&] { SafetensorsReader r(p2); });
  EXPECT_NE(m2.find("tensor 'w'"), std::string::npos) << m2;
  EXPECT_NE(m2.find("18446744073709551615"), std::string::npos) << m2;
}

}  // namespace
