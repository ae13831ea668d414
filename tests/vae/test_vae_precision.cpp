// vae.precision's parser and the choices the CPU refuses (tf32 and bf16
// without a CUDA device), each error naming the key.
#include <gtest/gtest.h>

#include "test_fs.h"
#include "vae/autoencoder_kl.h"
#include "vae/vae_precision.h"

namespace vt {
namespace {

using vt_test::error_of;

const std::string kNarrow = std::string(VT_FIXTURES_DIR) + "/vae/narrow";

TEST(VaePrecision, ParsesTheThreeNames) {
  EXPECT_EQ(parse_vae_precision("fp32"), VaePrecision::Fp32);
  EXPECT_EQ(parse_vae_precision("tf32"), VaePrecision::Tf32);
  EXPECT_EQ(parse_vae_precision("bf16"), VaePrecision::Bf16);
  for (VaePrecision p : {VaePrecision::Fp32, VaePrecision::Tf32, VaePrecision::Bf16})
    EXPECT_EQ(parse_vae_precision(vae_precision_name(p)), p);
  for (const char* bad : {"fp16", "FP32", "", "auto"}) {
    const std::string m = error_of([&] { parse_vae_precision(bad); });
    EXPECT_NE(m.find("vae.precision"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
  }
}

TEST(VaePrecision, CpuRefusesTf32AndBf16) {
  const std::string tf32 = error_of([] { AutoencoderKL::load(kNarrow, Device::cpu(), VaePrecision::Tf32); });
  EXPECT_NE(tf32.find("vae.precision"), std::string::npos) << tf32;
  EXPECT_NE(tf32.find("tf32"), std::string::npos) << tf32;
  const std::string bf16 = error_of([] { AutoencoderKL::load(kNarrow, Device::cpu(), VaePrecision::Bf16); });
  EXPECT_NE(bf16.find("vae.precision"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("bf16"), std::string::npos) << bf16;
  AutoencoderKL vae = AutoencoderKL::load(kNarrow);
  EXPECT_EQ(vae.precision(), VaePrecision::Fp32);
  EXPECT_EQ(vae.device(), Device::cpu());
  EXPECT_THROW(vae.set_precision(VaePrecision::Tf32), std::invalid_argument);
  EXPECT_THROW(vae.set_precision(VaePrecision::Bf16), std::invalid_argument);
  EXPECT_EQ(vae.precision(), VaePrecision::Fp32) << "a refused setting leaves the model as it was";
}

}  // namespace
}  // namespace vt
