#include <gtest/gtest.h>

#include "core/out_of_memory.h"
#include "core/tensor.h"

using namespace vt;

TEST(Tensor, EmptyIsAlignedAndContiguous) {
  Tensor t = Tensor::empty({3, 5, 7});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 105);
  EXPECT_EQ(t.strides(), (Shape{35, 7, 1}));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor row = t.select(0, 1);
  EXPECT_EQ(row.to_vector(), (std::vector<float>{3, 4, 5}));
  row.f32()[0] = 9;
  EXPECT_EQ(t.to_vector()[3], 9);
  Tensor tr = t.transpose(0, 1);
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.contiguous().to_vector(), (std::vector<float>{0, 9, 1, 4, 2, 5}));
  EXPECT_EQ(t.slice(1, 1, 3).contiguous().to_vector(), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(t.view({3, -1}).shape(), (Shape{3, 2}));
  EXPECT_THROW(t.view({4, -1}), std::invalid_argument);
  EXPECT_THROW(tr.view({6}), std::invalid_argument);
  EXPECT_THROW(t.slice(1, 2, 4), std::invalid_argument);
}

TEST(Tensor, DtypeConversionRoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
  Tensor t = Tensor::from_vector({1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f}, {3});
  Tensor b = t.to(DType::BF16);
  std::vector<float> back = b.to(DType::F32).to_vector();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f + 4.0f / 256);
  EXPECT_EQ(back[2], -2.5f);
  Tensor h = t.to(DType::F16).to(DType::F32);
  EXPECT_EQ(h.to_vector()[2], -2.5f);
  EXPECT_NEAR(h.to_vector()[0], 1.0f + 1.0f / 256, 1e-3);
}

TEST(Tensor, FillZeroClone) {
  Tensor t = Tensor::full({4}, 2.5f);
  Tensor c = t.clone();
  t.zero();
  EXPECT_EQ(c.to_vector(), (std::vector<float>(4, 2.5f)));
  EXPECT_EQ(t.to_vector(), (std::vector<float>(4, 0.f)));
  EXPECT_THROW(Tensor::from_vector({1, 2}, {3}), std::invalid_argument);
}

// A host allocation that fails says what was asked for (a bare
// "std::bad_alloc" named neither the size nor the tensor). 2^47 bytes is
// more than a 47-bit user address space holds, so the failure is certain.
TEST(Tensor, FailedAllocationNamesShapeAndSize) {
  const int64_t n = int64_t{1} << 45;  // F32: 2^47 bytes = 128 TiB
  try {
    vt::Tensor::empty({n});
    FAIL() << "allocated 128 TiB";
  } catch (const std::bad_alloc& e) {  // still a bad_alloc for callers that catch one
    const std::string m = e.what();
    EXPECT_NE(m.find("out of host memory: cannot allocate 140737488355328 bytes (128.0 TiB)"), std::string::npos) << m;
    EXPECT_NE(m.find("for a F32 tensor of shape [35184372088832] on cpu"), std::string::npos) << m;
  }
  EXPECT_EQ(vt::bytes_text(1000), "1000 bytes");
  EXPECT_EQ(vt::bytes_text(1536), "1536 bytes (1.5 KiB)");
}
