// The shared device/precision parser (train/device_choice.h): accepted
// values resolve as documented; refused ones name the key, the value and
// what to use instead. On a machine without a GPU, cuda is refused and auto
// is the CPU.
#include <gtest/gtest.h>

#include <string>

#include "core/allocator.h"
#include "train/device_choice.h"

namespace vt {
namespace {

std::string error_of(const std::string& device, const std::string& precision) {
  try {
    choose_device(device, precision, "device (test)", "precision (test)");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceChoice, CpuIsFp32) {
  const DeviceChoice c = choose_device("cpu", "auto", "device", "precision");
  EXPECT_TRUE(c.device.is_cpu());
  EXPECT_EQ(c.precision, Precision::FP32);
  EXPECT_EQ(c.describe(), "cpu, precision fp32");
  EXPECT_EQ(choose_device("cpu", "fp32", "device", "precision").precision, Precision::FP32);
}

TEST(DeviceChoice, RefusalsNameTheKeyAndValue) {
  std::string m = error_of("cpu", "bf16");
  EXPECT_EQ(m.rfind("precision (test)", 0), 0u) << m;
  EXPECT_NE(m.find("fp32 only"), std::string::npos) << m;
  EXPECT_NE(error_of("cpu", "tf32").find("needs a CUDA device"), std::string::npos);
  m = error_of("cpu", "fp16");
  EXPECT_EQ(m.rfind("precision (test)", 0), 0u) << m;
  EXPECT_NE(m.find("'fp16'"), std::string::npos) << m;
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", ""}) {
    m = error_of(bad, "auto");
    EXPECT_EQ(m.rfind("device (test)", 0), 0u) << bad << " -> " << m;
    EXPECT_NE(m.find("auto | cpu | cuda | cuda:N"), std::string::npos) << bad << " -> " << m;
  }
  m = error_of("cuda:999", "auto");
  EXPECT_EQ(m.rfind("device (test)", 0), 0u) << m;
}

TEST(DeviceChoice, WithoutAGpu) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is visible";
  const DeviceChoice c = choose_device("auto", "auto", "device", "precision");
  EXPECT_TRUE(c.device.is_cpu());
  EXPECT_EQ(c.precision, Precision::FP32);
  for (const char* d : {"cuda", "cuda:0"}) {
    const std::string m = error_of(d, "auto");
    EXPECT_EQ(m.rfind("device (test)", 0), 0u) << m;
#ifdef VT_CUDA
    EXPECT_NE(m.find("no CUDA device is visible"), std::string::npos) << m;
#else
    EXPECT_NE(m.find("no CUDA support"), std::string::npos) << m;
#endif
  }
  // auto resolved to the CPU: a GPU precision is refused, not ignored.
  EXPECT_NE(error_of("auto", "bf16").find("device resolved to cpu"), std::string::npos);
}

}  // namespace
}  // namespace vt
