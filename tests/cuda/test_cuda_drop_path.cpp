// Drop-path on CUDA against the CPU op: the device-drawn mask equals the
// host-drawn one bit for bit (same Philox keys), and the scaled/fused-add
// maps match the CPU twin (F32 exactly up to fp32 contraction, BF16 within
// one output rounding).
#include <gtest/gtest.h>

#include "core/philox.h"
#include "cuda_test_util.h"
#include "kernels/drop_path.h"

namespace vt {
namespace {

using namespace cudatest;

TEST(CudaDropPath, DeviceMaskEqualsHostMask) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 300;  // more than one 128-thread block
  // stride 3: a data-parallel rank's interleaved rows (kernels/drop_path.h).
  for (int64_t stride : {1, 3})
  for (float rate : {0.0f, 0.1f, 0.5f, 0.9f}) {
    const uint64_t stream = philox_stream(17, 3, 1);
    Tensor host = Tensor::empty({B});
    drop_path_scales(rate, 1234, stream, host, 40, stride);
    Tensor dev = Tensor::full({B}, -7.0f, Device::cuda(0));
    drop_path_scales(rate, 1234, stream, dev, 40, stride);
    const std::vector<float> want = host.to_vector(), got = dev.to_vector();
    EXPECT_EQ(got, want) << "rate " << rate << " stride " << stride;
    // The host op itself is vt::Philox's first draw per sample (an independent formula).
    for (int64_t b = 0; b < B; ++b) {
      Philox rng(1234, stream, static_cast<uint64_t>(40 + b * stride));
      const double keep = 1.0 - static_cast<double>(rate);
      const float expect = rate == 0.0f ? 1.0f : (rng.uniform_double() < keep ? static_cast<float>(1.0 / keep) : 0.0f);
      ASSERT_EQ(want[static_cast<size_t>(b)], expect) << "rate " << rate << " sample " << b;
    }
  }
}

// drop_path_scales_at forms the stream philox_stream(step, block, sublayer)
// from a step number in device memory (CUDA Graph steps): the masks of
// drop_path_scales with that stream formed on the host, for several steps
// written into the same buffer, and the CPU twin's.
TEST(CudaDropPath, StepReadOnTheDeviceGivesTheHostKeyedMask) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 300;
  Tensor step_dev = Tensor::zeros({1}, DType::I64, Device::cuda(0));
  for (int64_t step : {1, 2, 977}) {
    Tensor step_host = Tensor::empty({1}, DType::I64);
    static_cast<int64_t*>(step_host.raw())[0] = step;
    step_dev.copy_from(step_host);
    Tensor want = Tensor::empty({B}), cpu = Tensor::empty({B});
    drop_path_scales(0.3f, 99, philox_stream(static_cast<uint64_t>(step), 5, 1), want, 2, 3);
    drop_path_scales_at(0.3f, 99, step_host, 5, 1, cpu, 2, 3);
    Tensor dev = Tensor::full({B}, -7.0f, Device::cuda(0));
    drop_path_scales_at(0.3f, 99, step_dev, 5, 1, dev, 2, 3);
    EXPECT_EQ(dev.to_vector(), want.to_vector()) << "step " << step;
    EXPECT_EQ(cpu.to_vector(), want.to_vector()) << "step " << step;
  }
}

TEST(CudaDropPath, ForwardBackwardAndAddMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 6, T = 5, D = 12;
  Tensor scales = Tensor::empty({B});
  drop_path_scales(0.5f, 99, 7, scales);
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::vector<float> xv = representable(randn(B * T * D, 1), dt), rv = representable(randn(B * T * D, 2), dt);
    Tensor x = Tensor::from_vector(xv, {B, T, D}), r = Tensor::from_vector(rv, {B, T, D});
    Tensor out = Tensor::empty(x.shape());
    drop_path_forward(x, scales, out);
    Tensor r_cpu = r.clone();
    drop_path_add(x, scales, r_cpu);
    auto to_dev = [&](const Tensor& t) { return t.to(dt).to(Device::cuda(0)); };
    Tensor gx = to_dev(x), gs = scales.to(Device::cuda(0)), gout = to_dev(Tensor::zeros(x.shape()));
    drop_path_forward(gx, gs, gout);
    expect_close(gout.to_vector(), out.to_vector(), out_tol(dt), "forward");
    Tensor gdx = to_dev(Tensor::zeros(x.shape()));
    drop_path_backward(gx, gs, gdx);
    expect_close(gdx.to_vector(), out.to_vector(), out_tol(dt), "backward");
    Tensor gr = to_dev(r);
    drop_path_add(gx, gs, gr);
    expect_close(gr.to_vector(), r_cpu.to_vector(), out_tol(dt), "add");
  }
}

}  // namespace
}  // namespace vt
