// CUDA SiameseNorm kernels against the CPU kernels (kernels/cpu/siamese.h),
// which are themselves tested against the unfused LayerNorm oracle, for every
// optional part: absent streams, disabled and non-affine norms, DiT modulate
// with row-strided shift/scale, du/dy_pass, use_saved_stats, gate,
// drop_scale and inv_c; fp32 and bf16 I/O, and the mixed form bf16 training
// uses (fp32 streams, bf16 z, f and df).
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cpu/siamese.h"
#include "kernels/cuda/siamese.h"

namespace vt {
namespace {

using namespace cudatest;

const void* at(const Tensor& t, int64_t elems) {
  return static_cast<const char*>(t.raw()) + elems * static_cast<int64_t>(dtype_size(t.dtype()));
}
void* at_mut(const Tensor& t, int64_t elems) { return const_cast<void*>(at(t, elems)); }

struct NormCfg {
  bool enabled = false, weight = false, bias = false;
};

struct InputCase {
  const char* name;
  int64_t samples, rows_per_sample, d;
  bool has_x, has_y;
  NormCfg post, pre, input;
  bool modulate, du, dy_pass;
};

// The parameters of one norm on both devices.
struct NormData {
  std::vector<float> w, b;
  Tensor gw, gb;
};

// The three norms (post, pre, input) of a case with random parameters, as
// CPU and CUDA arguments.
void make_norms(const NormCfg* const (&cfg)[3], int64_t d, uint64_t seed, NormData (&nd)[3],
                cpu::SiameseNormPtrs (&cn)[3], cuda::SiameseNormArgs (&gn)[3]) {
  for (int k = 0; k < 3; ++k) {
    nd[k].w = randn(static_cast<size_t>(d), seed + 10 + k, 0.3, 1.0);
    nd[k].b = randn(static_cast<size_t>(d), seed + 20 + k, 0.3);
    nd[k].gw = to_device(nd[k].w, DType::F32);
    nd[k].gb = to_device(nd[k].b, DType::F32);
    cn[k].enabled = gn[k].enabled = cfg[k]->enabled;
    cn[k].weight = cfg[k]->weight ? nd[k].w.data() : nullptr;
    cn[k].bias = cfg[k]->bias ? nd[k].b.data() : nullptr;
    gn[k].weight = cfg[k]->weight ? nd[k].gw.f32() : nullptr;
    gn[k].bias = cfg[k]->bias ? nd[k].gb.f32() : nullptr;
  }
}

// io: the streams' dtype; act: z's (kernels/cuda/siamese.h).
void run_input_case(const InputCase& c, DType io, uint64_t seed, DType act) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(io) + " act " + dtype_name(act));
  const int64_t rows = c.samples * c.rows_per_sample, d = c.d, ld = 6 * d;
  const size_t n = static_cast<size_t>(rows * d), nmod = static_cast<size_t>(c.samples * ld);
  const auto x = representable(randn(n, seed, 1.5, 0.5), io);
  const auto y = representable(randn(n, seed + 1, 3.0, -1.0), io);
  const auto mod = representable(randn(nmod, seed + 2, 0.3), io);  // adaLN output [B, 6D]
  const auto dz = representable(randn(n, seed + 3), io);
  const auto du = representable(randn(n, seed + 4), io);
  const auto dpass = representable(randn(n, seed + 5), io);
  const auto dmod0 = representable(randn(nmod, seed + 6), io);
  const auto stats0 = randn(static_cast<size_t>(3 * rows), seed + 7);

  NormData nd[3];
  const NormCfg* cfg[3] = {&c.post, &c.pre, &c.input};
  cpu::SiameseNormPtrs cn[3];
  cuda::SiameseNormArgs gn[3];
  make_norms(cfg, d, seed, nd, cn, gn);

  cpu::SiameseInputRows ca;
  ca.rows = rows, ca.d = d, ca.eps = 1e-6f;
  ca.x = c.has_x ? x.data() : nullptr;
  ca.y = c.has_y ? y.data() : nullptr;
  ca.post = cn[0], ca.pre = cn[1], ca.input = cn[2];
  if (c.modulate) ca.shift = mod.data() + 3 * d, ca.scale = mod.data() + 4 * d;  // strided column slices
  ca.mod_ld = ld, ca.rows_per_sample = c.rows_per_sample;

  Tensor gx = to_device(x, io), gy = to_device(y, io), gmod = to_device(mod, io);
  cuda::SiameseInputArgs ga;
  ga.rows = rows, ga.d = d, ga.eps = 1e-6f, ga.io = io, ga.act = act;
  ga.x = c.has_x ? gx.raw() : nullptr;
  ga.y = c.has_y ? gy.raw() : nullptr;
  ga.post = gn[0], ga.pre = gn[1], ga.input = gn[2];
  if (c.modulate) ga.shift = at(gmod, 3 * d), ga.scale = at(gmod, 4 * d);
  ga.mod_ld = ld, ga.rows_per_sample = c.rows_per_sample;

  // Forward. Disabled statistic slots must stay untouched: both start equal.
  std::vector<float> u(n), z(n), mean = stats0, rstd = stats0;
  cpu::siamese_input_forward(ca, u.data(), z.data(), mean.data(), rstd.data(), false);
  Tensor gu = device_filled(n, io, {}), gz = device_filled(n, act, {});
  Tensor gmean = to_device(stats0, DType::F32), grstd = to_device(stats0, DType::F32);
  cuda::siamese_input_forward(ga, gu.raw(), gz.raw(), gmean.f32(), grstd.f32(), false);
  expect_close(to_host(gu), u, out_tol(io), "u");
  expect_close(to_host(gz), z, out_tol(act), "z");
  expect_close(to_host(gmean), mean, 1e-5, "mean");
  expect_close(to_host(grstd), rstd, 1e-5, "rstd");

  // Recompute with the CPU's saved statistics, without u.
  Tensor smean = to_device(mean, DType::F32), srstd = to_device(rstd, DType::F32);
  Tensor gz2 = device_filled(n, act, {});
  cuda::siamese_input_forward(ga, nullptr, gz2.raw(), smean.f32(), srstd.f32(), true);
  expect_close(to_host(gz2), z, out_tol(act), "z (use_saved_stats)");

  // Backward; parameter gradients accumulate onto nonzero values.
  std::vector<std::vector<float>> pg0(6);
  for (int k = 0; k < 6; ++k) pg0[k] = randn(static_cast<size_t>(d), seed + 30 + k);
  std::vector<std::vector<float>> pg = pg0;
  std::vector<float> dx(n), dy(n), dmod = dmod0;
  cpu::SiameseInputGradPtrs cg;
  cg.dz = dz.data();
  cg.du = c.du ? du.data() : nullptr;
  cg.dy_pass = c.dy_pass ? dpass.data() : nullptr;
  cg.dx = c.has_x ? dx.data() : nullptr;
  cg.dy = c.has_y ? dy.data() : nullptr;
  float** cpg[6] = {&cg.post_dw, &cg.post_db, &cg.pre_dw, &cg.pre_db, &cg.in_dw, &cg.in_db};
  for (int k = 0; k < 6; ++k) {
    const NormCfg& nc = *cfg[k / 2];
    const bool want = nc.enabled && (k % 2 == 0 ? nc.weight : nc.bias) && (k / 2 != 0 || c.has_x) &&
                      (k / 2 != 1 || c.has_y);
    *cpg[k] = want ? pg[k].data() : nullptr;
  }
  if (c.modulate) cg.dshift = dmod.data() + 3 * d, cg.dscale = dmod.data() + 4 * d;
  cpu::siamese_input_backward(ca, mean.data(), rstd.data(), cg);

  Tensor gdz = to_device(dz, io), gdu = to_device(du, io), gdpass = to_device(dpass, io);
  Tensor gdx = device_filled(n, io, dpass), gdy = device_filled(n, io, du), gdmod = to_device(dmod0, io);
  std::vector<Tensor> gpg(6);
  cuda::SiameseInputGradArgs gg;
  gg.dz = gdz.raw();
  gg.du = c.du ? gdu.raw() : nullptr;
  gg.dy_pass = c.dy_pass ? gdpass.raw() : nullptr;
  gg.dx = c.has_x ? gdx.raw() : nullptr;
  // dy aliasing dy_pass is allowed: exercise it whenever dy_pass is given.
  gg.dy = c.has_y ? (c.dy_pass ? gdpass.raw() : gdy.raw()) : nullptr;
  float** gpp[6] = {&gg.post_dw, &gg.post_db, &gg.pre_dw, &gg.pre_db, &gg.in_dw, &gg.in_db};
  for (int k = 0; k < 6; ++k) {
    gpg[k] = to_device(pg0[k], DType::F32);
    *gpp[k] = *cpg[k] ? gpg[k].f32() : nullptr;
  }
  if (c.modulate) gg.dshift = at_mut(gdmod, 3 * d), gg.dscale = at_mut(gdmod, 4 * d);
  cuda::siamese_input_backward(ga, smean.f32(), srstd.f32(), gg);

  if (c.has_x) expect_close(to_host(gdx), dx, out_tol(io), "dx");
  if (c.has_y) expect_close(to_host(c.dy_pass ? gdpass : gdy), dy, out_tol(io), "dy");
  const char* pnames[6] = {"post_dw", "post_db", "pre_dw", "pre_db", "in_dw", "in_db"};
  for (int k = 0; k < 6; ++k) expect_close(to_host(gpg[k]), pg[k], 1e-5, pnames[k]);
  // The whole [B, 6D] buffer: the other column slices must be untouched.
  expect_close(to_host(gdmod), dmod, out_tol(io), "dshift/dscale");
}

const NormCfg kAffine{true, true, true};
const NormCfg kPlain{true, false, false};
const NormCfg kOff{false, false, false};

const InputCase kInputCases[] = {
    // name, samples, rows/sample, d, x, y, post, pre, input, modulate, du, dy_pass
    {"deit", 3, 7, 384, true, true, kAffine, kAffine, kAffine, false, true, true},
    {"dit", 4, 9, 96, true, true, kAffine, kAffine, kPlain, true, true, true},
    {"no_normalized_input", 2, 40, 100, true, true, kAffine, kAffine, kOff, false, true, false},
    {"pre_norm_y_only", 2, 5, 64, false, true, kOff, kAffine, kOff, false, false, true},
    {"pre_norm_dit", 3, 4, 64, false, true, kOff, kPlain, kOff, true, false, false},
    {"post_norm_x_only", 2, 5, 64, true, false, kOff, kOff, kOff, false, true, false},
    // Widths: 384, 96, 1024 take one warp per row with 128-bit loads (fp32
    // and bf16), 100 in fp32 only, 37 scalar loads; wider rows a block of
    // warps per row: 1100 and DiT-XL's 1152 two warps, 2048 two warps with
    // 32 columns per thread, 2100 three warps with scalar loads.
    {"dit_wide", 2, 3, 1024, true, true, kAffine, kAffine, kPlain, true, true, true},
    {"odd_width", 3, 5, 37, true, true, kAffine, kAffine, kAffine, true, true, true},
    {"weight_only_norms", 1, 70, 1100, true, true, {true, true, false}, {true, false, true}, {true, true, false},
     false, false, false},
    {"dit_xl", 2, 3, 1152, true, true, kAffine, kAffine, kPlain, true, true, true},
    {"deit_2048", 1, 3, 2048, true, true, kAffine, kAffine, kAffine, false, true, true},
    {"pre_norm_2100", 1, 2, 2100, false, true, kOff, kAffine, kOff, false, false, true},
};

TEST(CudaSiamese, InputMatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (const auto& c : kInputCases) run_input_case(c, DType::F32, seed += 100, DType::F32);
}

TEST(CudaSiamese, InputMatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 5100;
  for (const auto& c : kInputCases) run_input_case(c, DType::BF16, seed += 100, DType::BF16);
}

// bf16 training: fp32 streams in, z written in bf16 (statistics fp32).
TEST(CudaSiamese, InputMatchesCpuFp32StreamsBf16Z) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 15100;
  for (const auto& c : kInputCases) run_input_case(c, DType::F32, seed += 100, DType::BF16);
}

// The fused residual + next input (siamese_residual_input_forward) against
// the CPU residual, the streams rounded to io as stored, then the CPU input
// map (the CPU twin equals that composition bit for bit, tests/kernels).
struct FusedCase {
  const char* name;
  int64_t samples, rows_per_sample, d;
  bool has_x, has_y;
  NormCfg post, pre, input;
  bool modulate, gate, drop;
  float inv_c;
};

void run_fused_case(const FusedCase& c, DType io, uint64_t seed, DType act) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(io) + " act " + dtype_name(act));
  const int64_t rows = c.samples * c.rows_per_sample, d = c.d, ld = 6 * d;
  const size_t n = static_cast<size_t>(rows * d), nmod = static_cast<size_t>(c.samples * ld);
  const auto base = representable(randn(n, seed, 1.5, 0.5), io);  // the x residual's base u
  const auto f = representable(randn(n, seed + 1), act);
  const auto y = representable(randn(n, seed + 2, 3.0, -1.0), io);
  const auto mod = representable(randn(nmod, seed + 3, 0.3), io);
  const auto stats0 = randn(static_cast<size_t>(3 * rows), seed + 7);
  std::vector<float> drop(static_cast<size_t>(c.samples));
  for (size_t b = 0; b < drop.size(); ++b) drop[b] = b % 2 ? 0.0f : 1.0f / 0.9f;
  NormData nd[3];
  const NormCfg* cfg[3] = {&c.post, &c.pre, &c.input};
  cpu::SiameseNormPtrs cn[3];
  cuda::SiameseNormArgs gn[3];
  make_norms(cfg, d, seed, nd, cn, gn);

  cpu::SiameseResidualRows cr;
  cr.rows = rows, cr.d = d, cr.u = c.has_x ? base.data() : nullptr, cr.f = f.data();
  cr.y = c.has_y ? y.data() : nullptr;
  cr.gate = c.gate ? mod.data() + 5 * d : nullptr, cr.gate_ld = ld;
  cr.drop_scale = c.drop ? drop.data() : nullptr, cr.rows_per_sample = c.rows_per_sample, cr.inv_c = c.inv_c;
  std::vector<float> xo(n), yo(n);
  cpu::siamese_residual_forward(cr, xo.data(), yo.data());
  xo = representable(xo, io), yo = representable(yo, io);
  cpu::SiameseInputRows ca;
  ca.rows = rows, ca.d = d, ca.eps = 1e-6f;
  ca.x = c.has_x ? xo.data() : nullptr;
  ca.y = c.has_y ? yo.data() : nullptr;
  ca.post = cn[0], ca.pre = cn[1], ca.input = cn[2];
  if (c.modulate) ca.shift = mod.data() + 3 * d, ca.scale = mod.data() + 4 * d;
  ca.mod_ld = ld, ca.rows_per_sample = c.rows_per_sample;
  std::vector<float> u(n), z(n), mean = stats0, rstd = stats0;
  cpu::siamese_input_forward(ca, u.data(), z.data(), mean.data(), rstd.data(), false);

  // CUDA, in place as Block::forward runs it: u over the residual's base, y_out over y.
  Tensor gbase = to_device(base, io), gf = to_device(f, act), gy = to_device(y, io), gmod = to_device(mod, io),
         gdrop = to_device(drop, DType::F32), gx = device_filled(n, io, {}), gz = device_filled(n, act, {});
  Tensor gmean = to_device(stats0, DType::F32), grstd = to_device(stats0, DType::F32);
  cuda::SiameseResidualArgs gr;
  gr.rows = rows, gr.d = d, gr.io = io, gr.act = act, gr.u = c.has_x ? gbase.raw() : nullptr, gr.f = gf.raw();
  gr.y = c.has_y ? gy.raw() : nullptr;
  gr.gate = c.gate ? at(gmod, 5 * d) : nullptr, gr.gate_ld = ld;
  gr.drop_scale = c.drop ? gdrop.f32() : nullptr, gr.rows_per_sample = c.rows_per_sample, gr.inv_c = c.inv_c;
  cuda::SiameseInputArgs ga;
  ga.rows = rows, ga.d = d, ga.eps = 1e-6f, ga.io = io, ga.act = act;
  ga.x = c.has_x ? gx.raw() : nullptr;
  ga.y = c.has_y ? gy.raw() : nullptr;
  ga.post = gn[0], ga.pre = gn[1], ga.input = gn[2];
  if (c.modulate) ga.shift = at(gmod, 3 * d), ga.scale = at(gmod, 4 * d);
  ga.mod_ld = ld, ga.rows_per_sample = c.rows_per_sample;
  cuda::siamese_residual_input_forward(gr, c.has_x ? gx.raw() : nullptr, c.has_y ? gy.raw() : nullptr, ga,
                                       c.has_x ? gbase.raw() : nullptr, gz.raw(), gmean.f32(), grstd.f32());
  if (c.has_x) {
    expect_close(to_host(gx), xo, out_tol(io), "x_out");
    expect_close(to_host(gbase), u, out_tol(io), "u");
  }
  if (c.has_y) expect_close(to_host(gy), yo, out_tol(io), "y_out");
  expect_close(to_host(gz), z, out_tol(act), "z");
  expect_close(to_host(gmean), mean, 1e-5, "mean");
  expect_close(to_host(grstd), rstd, 1e-5, "rstd");
}

const FusedCase kFusedCases[] = {
    // name, samples, rows/sample, d, x, y, post, pre, input, modulate, gate, drop, inv_c
    {"deit_siamese", 3, 7, 384, true, true, kAffine, kAffine, kAffine, false, false, true, 0.70710678f},
    {"dit_siamese", 4, 9, 96, true, true, kAffine, kAffine, kPlain, true, true, true, 0.5f},
    {"dit_xl_siamese", 2, 3, 1152, true, true, kAffine, kAffine, kPlain, true, true, true, 0.5f},
    {"deit_pre_norm", 2, 5, 64, false, true, kOff, kOff, kAffine, false, false, true, 1.0f},
    {"hybrid_x_only", 2, 5, 100, true, false, kAffine, kOff, kOff, false, false, false, 1.0f},
    {"odd_width", 3, 5, 37, true, true, kAffine, kAffine, kAffine, true, true, true, 0.5f},
};

TEST(CudaSiamese, ResidualInputMatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 21100;
  for (const auto& c : kFusedCases) run_fused_case(c, DType::F32, seed += 100, DType::F32);
}

TEST(CudaSiamese, ResidualInputMatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 22100;
  for (const auto& c : kFusedCases) run_fused_case(c, DType::BF16, seed += 100, DType::BF16);
}

TEST(CudaSiamese, ResidualInputMatchesCpuFp32StreamsBf16Activations) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 23100;
  for (const auto& c : kFusedCases) run_fused_case(c, DType::F32, seed += 100, DType::BF16);
}

TEST(CudaSiamese, ResidualInputRejectsMismatchedArguments) {
  VT_SKIP_WITHOUT_GPU();
  Tensor buf = to_device(std::vector<float>(64, 0.0f), DType::F32);
  cuda::SiameseResidualArgs r;
  r.rows = 4, r.d = 8, r.u = buf.raw(), r.f = buf.raw();
  cuda::SiameseInputArgs a;
  a.rows = 4, a.d = 8, a.x = buf.raw();
  Tensor other = buf.clone();
  EXPECT_THROW(cuda::siamese_residual_input_forward(r, other.raw(), nullptr, a, nullptr, buf.raw(), nullptr, nullptr),
               std::invalid_argument);  // the input's x is not x_out
  a.x = other.raw();
  a.d = 4;
  EXPECT_THROW(cuda::siamese_residual_input_forward(r, other.raw(), nullptr, a, nullptr, buf.raw(), nullptr, nullptr),
               std::invalid_argument);  // rows x d differ
}

struct ResidualCase {
  const char* name;
  int64_t samples, rows_per_sample, d;
  bool has_u, has_y, gate, drop;
  float inv_c;
};

// io: the streams' dtype; act: f's and df's (kernels/cuda/siamese.h).
void run_residual_case(const ResidualCase& c, DType io, uint64_t seed, DType act) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(io) + " act " + dtype_name(act));
  const int64_t rows = c.samples * c.rows_per_sample, d = c.d, ld = 6 * d;
  const size_t n = static_cast<size_t>(rows * d), nmod = static_cast<size_t>(c.samples * ld);
  const auto u = representable(randn(n, seed), io), f = representable(randn(n, seed + 1), act),
             y = representable(randn(n, seed + 2), io), mod = representable(randn(nmod, seed + 3), io),
             dxo = representable(randn(n, seed + 4), io), dyo = representable(randn(n, seed + 5), io),
             dmod0 = representable(randn(nmod, seed + 6), io);
  std::vector<float> drop(static_cast<size_t>(c.samples));
  for (size_t b = 0; b < drop.size(); ++b) drop[b] = b % 2 ? 0.0f : 1.0f / 0.9f;  // dropped / kept samples

  cpu::SiameseResidualRows ca;
  ca.rows = rows, ca.d = d, ca.u = c.has_u ? u.data() : nullptr, ca.f = f.data();
  ca.y = c.has_y ? y.data() : nullptr;
  ca.gate = c.gate ? mod.data() + 5 * d : nullptr, ca.gate_ld = ld;
  ca.drop_scale = c.drop ? drop.data() : nullptr, ca.rows_per_sample = c.rows_per_sample, ca.inv_c = c.inv_c;
  std::vector<float> xo(n), yo(n), df(n), dmod = dmod0;
  cpu::siamese_residual_forward(ca, c.has_u ? xo.data() : nullptr, c.has_y ? yo.data() : nullptr);
  cpu::siamese_residual_backward(ca, c.has_u ? dxo.data() : nullptr, c.has_y ? dyo.data() : nullptr, df.data(),
                                 c.gate ? dmod.data() + 5 * d : nullptr);

  // In place (x_out aliasing u, y_out aliasing y), as the block uses it.
  Tensor gu = to_device(u, io), gf = to_device(f, act), gy = to_device(y, io), gmod = to_device(mod, io),
         gdrop = to_device(drop, DType::F32);
  cuda::SiameseResidualArgs ga;
  ga.rows = rows, ga.d = d, ga.io = io, ga.act = act, ga.u = c.has_u ? gu.raw() : nullptr, ga.f = gf.raw();
  ga.y = c.has_y ? gy.raw() : nullptr;
  ga.gate = c.gate ? at(gmod, 5 * d) : nullptr, ga.gate_ld = ld;
  ga.drop_scale = c.drop ? gdrop.f32() : nullptr, ga.rows_per_sample = c.rows_per_sample, ga.inv_c = c.inv_c;
  // The backward reads u/y only through f, so run it before the in-place forward.
  Tensor gdxo = to_device(dxo, io), gdyo = to_device(dyo, io), gdf = device_filled(n, act, dxo),
         gdmod = to_device(dmod0, io);
  cuda::siamese_residual_backward(ga, c.has_u ? gdxo.raw() : nullptr, c.has_y ? gdyo.raw() : nullptr, gdf.raw(),
                                  c.gate ? at_mut(gdmod, 5 * d) : nullptr);
  cuda::siamese_residual_forward(ga, c.has_u ? gu.raw() : nullptr, c.has_y ? gy.raw() : nullptr);
  if (c.has_u) expect_close(to_host(gu), xo, out_tol(io), "x_out");
  if (c.has_y) expect_close(to_host(gy), yo, out_tol(io), "y_out");
  expect_close(to_host(gdf), df, out_tol(act), "df");
  expect_close(to_host(gdmod), dmod, out_tol(io), "dgate");
}

const ResidualCase kResidualCases[] = {
    {"deit", 3, 7, 384, true, true, false, true, 0.70710678f},
    {"dit", 4, 9, 96, true, true, true, true, 0.5f},
    {"dit_no_drop", 2, 33, 130, true, true, true, false, 1.0f},
    {"pre_norm_y_only", 2, 5, 64, false, true, true, false, 1.0f},
    {"post_norm_x_only", 2, 5, 64, true, false, false, false, 1.0f},
    // 1024: 128-bit accesses; 37 (and 130 in bf16): scalar.
    {"dit_wide", 2, 3, 1024, true, true, true, true, 0.5f},
    {"odd_width", 3, 5, 37, true, true, true, true, 0.5f},
};

TEST(CudaSiamese, ResidualMatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 9100;
  for (const auto& c : kResidualCases) run_residual_case(c, DType::F32, seed += 100, DType::F32);
}

TEST(CudaSiamese, ResidualMatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 12100;
  for (const auto& c : kResidualCases) run_residual_case(c, DType::BF16, seed += 100, DType::BF16);
}

// bf16 training: a bf16 f added to fp32 streams in fp32, df written in bf16.
TEST(CudaSiamese, ResidualMatchesCpuFp32StreamsBf16F) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 18100;
  for (const auto& c : kResidualCases) run_residual_case(c, DType::F32, seed += 100, DType::BF16);
}

TEST(CudaSiamese, BackwardIsDeterministic) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t rows = 300, d = 256;
  const size_t n = static_cast<size_t>(rows * d);
  Tensor gx = to_device(randn(n, 1), DType::F32), gy = to_device(randn(n, 2), DType::F32),
         gdz = to_device(randn(n, 3), DType::F32);
  Tensor w = to_device(std::vector<float>(d, 1.0f), DType::F32);
  cuda::SiameseInputArgs a;
  a.rows = rows, a.d = d, a.x = gx.raw(), a.y = gy.raw();
  a.post = {true, w.f32(), w.f32()}, a.pre = {true, w.f32(), w.f32()}, a.input = {true, w.f32(), w.f32()};
  Tensor z = Tensor::empty({rows, d}, DType::F32, Device::cuda(0)), u = z.clone();
  Tensor mean = Tensor::empty({3, rows}, DType::F32, Device::cuda(0)), rstd = mean.clone();
  cuda::siamese_input_forward(a, u.raw(), z.raw(), mean.f32(), rstd.f32(), false);
  std::vector<float> first;
  for (int rep = 0; rep < 2; ++rep) {
    Tensor dx = z.clone(), dy = z.clone(), dw = to_device(std::vector<float>(d, 0.0f), DType::F32);
    cuda::SiameseInputGradArgs g;
    g.dz = gdz.raw(), g.dx = dx.raw(), g.dy = dy.raw(), g.in_dw = dw.f32();
    cuda::siamese_input_backward(a, mean.f32(), rstd.f32(), g);
    if (rep == 0) first = to_host(dw);
    else EXPECT_EQ(to_host(dw), first);
  }
}

}  // namespace
}  // namespace vt
