// CUDA LayerNorm against the CPU kernels (kernels/cpu/layernorm.h) on the
// same inputs, fp32 and bf16 I/O, affine and non-affine.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cuda/layernorm.h"

namespace vt {
namespace {

using namespace cudatest;

struct LnCase {
  int64_t rows, d;
  bool weight, bias;
  DType io;
};

std::string name_of(const LnCase& c) {
  return std::string(dtype_name(c.io)) + " rows=" + std::to_string(c.rows) + " d=" + std::to_string(c.d) +
         (c.weight ? " w" : "") + (c.bias ? " b" : "");
}

void run_case(const LnCase& c, uint64_t seed) {
  SCOPED_TRACE(name_of(c));
  const size_t n = static_cast<size_t>(c.rows * c.d), d = static_cast<size_t>(c.d);
  // Offset mean: the two-pass variance must survive |mean| >> std.
  const auto x = representable(randn(n, seed, 2.0, 3.0), c.io);
  const auto dy = representable(randn(n, seed + 1), c.io);
  const auto w = randn(d, seed + 2, 0.5, 1.0), b = randn(d, seed + 3, 0.5);
  const auto dx0 = representable(randn(n, seed + 4), c.io);
  const auto dw0 = randn(d, seed + 5), db0 = randn(d, seed + 6);
  const float eps = 1e-6f;
  const float* wp = c.weight ? w.data() : nullptr;
  const float* bp = c.bias ? b.data() : nullptr;

  // CPU reference.
  std::vector<float> y(n), mean(c.rows), rstd(c.rows);
  cpu::layernorm_forward(x.data(), wp, bp, eps, c.rows, c.d, y.data(), mean.data(), rstd.data());
  std::vector<float> dx_over(n), dx_acc = dx0, dw = dw0, db = db0;
  cpu::layernorm_backward(dy.data(), x.data(), wp, mean.data(), rstd.data(), c.rows, c.d, dx_over.data(), false,
                          c.weight ? dw.data() : nullptr, db.data());
  cpu::layernorm_backward(dy.data(), x.data(), wp, mean.data(), rstd.data(), c.rows, c.d, dx_acc.data(), true,
                          nullptr, nullptr);

  // CUDA.
  Tensor gx = to_device(x, c.io), gdy = to_device(dy, c.io), gw = to_device(w, DType::F32),
         gb = to_device(b, DType::F32);
  Tensor gy = device_filled(n, c.io, {}), gmean = device_filled(c.rows, DType::F32, {}),
         grstd = device_filled(c.rows, DType::F32, {});
  const float* gwp = c.weight ? gw.f32() : nullptr;
  const float* gbp = c.bias ? gb.f32() : nullptr;
  cuda::layernorm_forward(gx.raw(), gwp, gbp, eps, c.rows, c.d, gy.raw(), gmean.f32(), grstd.f32(), c.io);
  expect_close(to_host(gy), y, out_tol(c.io), "y");
  expect_close(to_host(gmean), mean, 1e-5, "mean");
  expect_close(to_host(grstd), rstd, 1e-5, "rstd");

  // Backward from the CPU's statistics so both sides normalise identically.
  Tensor smean = to_device(mean, DType::F32), srstd = to_device(rstd, DType::F32);
  Tensor gdx = device_filled(n, c.io, dx0), gdw = to_device(dw0, DType::F32), gdb = to_device(db0, DType::F32);
  cuda::layernorm_backward(gdy.raw(), gx.raw(), gwp, smean.f32(), srstd.f32(), c.rows, c.d, gdx.raw(), false,
                           c.weight ? gdw.f32() : nullptr, gdb.f32(), c.io);
  expect_close(to_host(gdx), dx_over, out_tol(c.io), "dx (overwrite)");
  expect_close(to_host(gdw), dw, 1e-5, "dweight (accumulated)");
  expect_close(to_host(gdb), db, 1e-5, "dbias (accumulated)");

  // Parameter gradients alone (no dx): the column-strip kernel, which rows
  // of d <= 1024 otherwise skip (their dx kernel sums the partials).
  Tensor gdw2 = to_device(dw0, DType::F32), gdb2 = to_device(db0, DType::F32);
  cuda::layernorm_backward(gdy.raw(), gx.raw(), gwp, smean.f32(), srstd.f32(), c.rows, c.d, nullptr, false,
                           c.weight ? gdw2.f32() : nullptr, gdb2.f32(), c.io);
  expect_close(to_host(gdw2), dw, 1e-5, "dweight (no dx)");
  expect_close(to_host(gdb2), db, 1e-5, "dbias (no dx)");

  Tensor gdx2 = device_filled(n, c.io, dx0);
  cuda::layernorm_backward(gdy.raw(), gx.raw(), gwp, smean.f32(), srstd.f32(), c.rows, c.d, gdx2.raw(), true,
                           nullptr, nullptr, c.io);
  expect_close(to_host(gdx2), dx_acc, out_tol(c.io), "dx (accumulate)");

  // dx aliasing dy (allowed when overwriting).
  Tensor galias = to_device(dy, c.io);
  cuda::layernorm_backward(galias.raw(), gx.raw(), gwp, smean.f32(), srstd.f32(), c.rows, c.d, galias.raw(), false,
                           nullptr, nullptr, c.io);
  expect_close(to_host(galias), dx_over, out_tol(c.io), "dx aliasing dy");
}

TEST(CudaLayerNorm, MatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  run_case({37, 384, true, true, DType::F32}, 10);
  run_case({130, 100, true, false, DType::F32}, 20);  // d not a multiple of 32; 3 row chunks
  run_case({65, 2000, false, false, DType::F32}, 30); // several elements per thread
  run_case({3, 1, true, true, DType::F32}, 40);       // d = 1: x_hat = 0
  // Rows up to 1024 take one warp per row: 128-bit loads when d is a
  // multiple of 4 (fp32) or 8 (bf16), scalar loads otherwise; wider rows a
  // block of ceil(d / 1024) warps per row (2000 above, 1030, 1152, 2048, 3001).
  run_case({9, 1024, true, true, DType::F32}, 41);    // vector, the widest one-warp row
  run_case({11, 96, true, true, DType::F32}, 42);     // vector, 1 chunk per lane
  run_case({7, 37, true, true, DType::F32}, 43);      // scalar
  run_case({5, 1030, true, true, DType::F32}, 44);    // two warps, vector
  run_case({70, 1152, true, true, DType::F32}, 45);   // DiT-XL: two warps, 2 row chunks for dweight
  run_case({4, 2048, true, false, DType::F32}, 46);   // two warps, 32 columns per thread
  run_case({3, 3001, false, true, DType::F32}, 47);   // three warps, scalar
}

TEST(CudaLayerNorm, MatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  run_case({37, 384, true, true, DType::BF16}, 50);
  run_case({130, 100, false, true, DType::BF16}, 60);  // 100: scalar in bf16
  run_case({9, 1024, true, true, DType::BF16}, 61);
  run_case({11, 96, true, true, DType::BF16}, 62);
  run_case({7, 37, true, true, DType::BF16}, 63);
  run_case({6, 1152, true, true, DType::BF16}, 64);  // DiT-XL: two warps, vector
  run_case({4, 2048, true, true, DType::BF16}, 65);
}

// Rows starting one element past a 16-byte boundary cannot take 128-bit
// loads: the launch must fall back to scalar loads and still match the CPU.
TEST(CudaLayerNorm, MisalignedRowsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  for (DType io : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(io));
    const int64_t rows = 9, d = 384;
    const size_t n = static_cast<size_t>(rows * d);
    const auto x = representable(randn(n + 1, 70, 2.0, 3.0), io), dy = representable(randn(n + 1, 71), io);
    const auto w = randn(d, 72, 0.5, 1.0), b = randn(d, 73, 0.5);
    std::vector<float> y(n), mean(rows), rstd(rows), dx(n);
    cpu::layernorm_forward(x.data() + 1, w.data(), b.data(), 1e-6f, rows, d, y.data(), mean.data(), rstd.data());
    cpu::layernorm_backward(dy.data() + 1, x.data() + 1, w.data(), mean.data(), rstd.data(), rows, d, dx.data(),
                            false, nullptr, nullptr);
    Tensor gx = to_device(x, io), gdy = to_device(dy, io), gw = to_device(w, DType::F32),
           gb = to_device(b, DType::F32);
    Tensor gy = device_filled(n + 1, io, {}), gdx = device_filled(n + 1, io, {}),
           gmean = device_filled(rows, DType::F32, {}), grstd = device_filled(rows, DType::F32, {});
    auto plus1 = [&](const Tensor& t) { return static_cast<void*>(static_cast<char*>(t.raw()) + dtype_size(io)); };
    cuda::layernorm_forward(plus1(gx), gw.f32(), gb.f32(), 1e-6f, rows, d, plus1(gy), gmean.f32(), grstd.f32(), io);
    cuda::layernorm_backward(plus1(gdy), plus1(gx), gw.f32(), gmean.f32(), grstd.f32(), rows, d, plus1(gdx), false,
                             nullptr, nullptr, io);
    const auto hy = to_host(gy), hdx = to_host(gdx);
    expect_close(std::vector<float>(hy.begin() + 1, hy.end()), y, out_tol(io), "y");
    expect_close(to_host(gmean), mean, 1e-5, "mean");
    expect_close(std::vector<float>(hdx.begin() + 1, hdx.end()), dx, out_tol(io), "dx");
  }
}

// dweight/dbias from the fused dx kernel (d <= 1024) and from the column-strip
// kernel (wider rows) are the same bits on every run: fixed summation orders.
TEST(CudaLayerNorm, ParameterGradientsAreDeterministic) {
  VT_SKIP_WITHOUT_GPU();
  for (const int64_t d : {int64_t{384}, int64_t{1152}}) {
    SCOPED_TRACE(d);
    const int64_t rows = 300;
    const size_t n = static_cast<size_t>(rows * d);
    Tensor gx = to_device(randn(n, 80), DType::F32), gdy = to_device(randn(n, 81), DType::F32);
    Tensor gw = to_device(randn(static_cast<size_t>(d), 82), DType::F32);
    Tensor y = device_filled(n, DType::F32, {}), mean = device_filled(rows, DType::F32, {}),
           rstd = device_filled(rows, DType::F32, {});
    cuda::layernorm_forward(gx.raw(), gw.f32(), nullptr, 1e-6f, rows, d, y.raw(), mean.f32(), rstd.f32(), DType::F32);
    std::vector<float> first_w, first_b;
    for (int rep = 0; rep < 2; ++rep) {
      Tensor dx = device_filled(n, DType::F32, {}), dw = device_filled(d, DType::F32, {}),
             db = device_filled(d, DType::F32, {});
      cuda::layernorm_backward(gdy.raw(), gx.raw(), gw.f32(), mean.f32(), rstd.f32(), rows, d, dx.raw(), false,
                               dw.f32(), db.f32(), DType::F32);
      if (rep == 0) {
        first_w = to_host(dw), first_b = to_host(db);
      } else {
        EXPECT_EQ(to_host(dw), first_w);
        EXPECT_EQ(to_host(db), first_b);
      }
    }
  }
}

TEST(CudaLayerNorm, RejectsTooWideRows) {
  VT_SKIP_WITHOUT_GPU();
  EXPECT_THROW(cuda::layernorm_forward(nullptr, nullptr, nullptr, 1e-6f, 1, 1 << 20, nullptr, nullptr, nullptr,
                                       DType::F32),
               std::invalid_argument);
  EXPECT_THROW(cuda::layernorm_forward(nullptr, nullptr, nullptr, 1e-6f, 1, 8, nullptr, nullptr, nullptr,
                                       DType::I32),
               std::invalid_argument);
}

}  // namespace
}  // namespace vt
