// The Inception taps and protocols behind ADM's suite and the suite's
// handling of inputs (eval/adm_suite.h), on the width/16 test network of
// tools/inception_fixture.py (pytorch-fid's network, random weights) with
// a seeded random fc.weight.
#include <gtest/gtest.h>

#include <filesystem>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/npz.h"
#include "core/safetensors.h"
#include "eval/adm_suite.h"
#include "eval/fid_protocol.h"
#include "eval/inception.h"
#include "eval/npz_members.h"
#include "eval/tf_resize.h"
#include "test_fs.h"

namespace vt {
namespace {

#ifdef VT_VEVAL_EXE
// Runs `cmd` (a veval command line); its exit status, stdout and stderr appended to `out`.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) *out += buf;
  const int st = p ? pclose(p) : -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif
namespace fs = std::filesystem;

std::map<std::string, Tensor> w16_state(bool fc) {
  auto sd = load_safetensors(std::string(VT_FIXTURES_DIR) + "/eval/inception_w16.safetensors");
  if (fc) {
    std::mt19937 g(1008);
    std::normal_distribution<float> nd(0.f, 1.f / std::sqrt(128.f));
    std::vector<float> w(1008 * 128);
    for (auto& v : w) v = nd(g);
    sd["fc.weight"] = Tensor::from_vector(w, {1008, 128});
  }
  return sd;
}

const InceptionFid& net() {
  static const InceptionFid n(w16_state(true), "inception_w16+fc");
  return n;
}

TEST(AdmTaps, PytorchFidProtocolGivesPytorchFidFeatures) {
  auto sd = w16_state(false);
  const Tensor im = sd.at("images"), want = sd.at("features");
  const int64_t n = im.size(0), h = im.size(1), w = im.size(2);
  Tensor x = Tensor::empty({n, 3, 299, 299});
  for (int64_t i = 0; i < n; ++i) preprocess_fid_image(im.u8() + i * h * w * 3, h, w, FidProtocol::PytorchFid, x, i);
  Tensor pool = Tensor::empty({n, 128}), sp = Tensor::empty({n, InceptionFid::spatial_dim()});
  net().forward(x, pool, sp);
  std::vector<float> g = pool.to_vector(), f = want.to_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) num = std::max(num, double(std::fabs(g[i] - f[i]))), den = std::max(den, double(std::fabs(f[i])));
  EXPECT_LT(num / den, 1e-4);
  // Logits: pool x fc.weight^T, no bias (float64 recomputation).
  Tensor lg = Tensor::empty({n, 1008});
  net().logits(pool, lg);
  const auto fc_state = w16_state(true);  // kept alive: fw refers into it
  const Tensor& fw = fc_state.at("fc.weight");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < 1008; c += 97) {
      double s = 0;
      for (int64_t k = 0; k < 128; ++k) s += double(pool.f32()[i * 128 + k]) * fw.f32()[c * 128 + k];
      EXPECT_NEAR(lg.f32()[i * 1008 + c], s, 1e-5 * (1 + std::fabs(s)));
    }
}

TEST(AdmTaps, SpatialIsMixed6dBranch1x1InHwcOrder) {
  // BatchNorm of Mixed_6d.branch1x1 with gamma 0 and beta c + 1 makes its
  // ReLU output the constant c + 1 in channel c: the tap must read exactly
  // those values, channel fastest.
  auto sd = w16_state(false);
  const int64_t co = sd.at("Mixed_6d.branch1x1.bn.weight").numel();
  std::vector<float> zero(co, 0.f), beta(co), one(co, 1.f);
  for (int64_t c = 0; c < co; ++c) beta[c] = float(c + 1);
  sd["Mixed_6d.branch1x1.bn.weight"] = Tensor::from_vector(zero, {co});
  sd["Mixed_6d.branch1x1.bn.bias"] = Tensor::from_vector(beta, {co});
  sd["Mixed_6d.branch1x1.bn.running_mean"] = Tensor::from_vector(zero, {co});
  sd["Mixed_6d.branch1x1.bn.running_var"] = Tensor::from_vector(one, {co});
  InceptionFid m(sd, "probe");
  Tensor x = Tensor::zeros({2, 3, 299, 299});
  Tensor pool = Tensor::empty({2, 128}), sp = Tensor::empty({2, 2023});
  m.forward(x, pool, sp);
  for (int64_t i = 0; i < 2 * 2023; ++i) ASSERT_EQ(sp.f32()[i], float(i % 7 + 1)) << i;
}

TEST(AdmTaps, AdmProtocolScaling) {
  // At 299x299 the TF1 resize is the identity, so the input is (v - 128) / 128.
  std::vector<uint8_t> px(299 * 299 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 7 % 256);
  Tensor x = Tensor::empty({1, 3, 299, 299});
  preprocess_fid_image(px.data(), 299, 299, FidProtocol::Adm, x, 0);
  for (int64_t y = 0; y < 299; y += 37)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(x.f32()[(c * 299 + y) * 299 + 5], (float(px[(y * 299 + 5) * 3 + c]) - 128.f) / 128.f);
  // 256 -> 299: the TF1 resize of the [0, 255] values, then the same map.
  std::vector<uint8_t> small(256 * 256 * 3);
  for (size_t i = 0; i < small.size(); ++i) small[i] = uint8_t(i * 13 % 251);
  std::vector<float> r(3 * 299 * 299);
  tf1_resize_bilinear_u8(small.data(), 256, 256, r.data(), 299, 299);
  preprocess_fid_image(small.data(), 256, 256, FidProtocol::Adm, x, 0);
  for (size_t i = 0; i < r.size(); i += 1013) EXPECT_EQ(x.f32()[i], (r[i] - 128.f) / 128.f);
}

// uint8 [n, s, s, 3] images: blocky random patterns plus `shift`.
NpyArray images(int64_t n, int64_t s, int shift, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(0, 255);
  std::vector<uint8_t> v(static_cast<size_t>(n * s * s * 3));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < 16; ++b) {
      const int col[3] = {u(g), u(g), u(g)};
      for (int64_t y = (b / 4) * s / 4; y < (b / 4 + 1) * s / 4; ++y)
        for (int64_t x = (b % 4) * s / 4; x < (b % 4 + 1) * s / 4; ++x)
          for (int c = 0; c < 3; ++c) v[((i * s + y) * s + x) * 3 + c] = uint8_t(std::min(255, col[c] + shift));
    }
  return NpyArray::from(v, {n, s, s, 3});
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(AdmSuite, AllMetricsAndAdmReferenceRoundTrip) {
  vt_test::TmpDir tmp;
  const std::string smp = tmp.file("samples.npz"), refi = tmp.file("ref_images.npz"), ref = tmp.file("ref.npz");
  save_npz(smp, {{"arr_0", images(12, 32, 0, 1)}});
  save_npz(refi, {{"arr_0", images(10, 40, 30, 2)}});
  SuiteOptions o;
  o.batch = 7;
  o.is_split = 6;
  o.save_activations = tmp.file("acts.npz");
  // sFID (two 2023-d eigensolves, the slow part) is computed once, below.
  const SuiteReport a = run_adm_suite(smp, refi, &net(), parse_suite_metrics("fid,is,precision,recall"), o);
  for (const SuiteValue* v : {&a.fid, &a.is, &a.precision, &a.recall}) EXPECT_TRUE(v->available) << v->why;
  EXPECT_FALSE(a.sfid.available);
  EXPECT_TRUE(a.sfid.why.empty());  // not asked for
  EXPECT_GT(a.fid.value, 0);
  EXPECT_EQ(a.is_detail.splits.size(), 2u);
  EXPECT_EQ(a.samples.count, 12);
  // Activations file: the samples' arrays.
  auto acts = load_npz(o.save_activations);
  EXPECT_EQ(acts.at("pool").shape, (Shape{12, 128}));
  EXPECT_EQ(acts.at("spatial").shape, (Shape{12, 2023}));
  EXPECT_EQ(acts.at("logits").shape, (Shape{12, 1008}));
  std::vector<float> lg = acts.at("logits").as<float>();
  EXPECT_NEAR(inception_score(lg.data(), 12, 1008, 6).mean, a.is.value, 1e-12 * a.is.value);
  // A reference written by veval: ADM's keys, the same statistics, pool rows.
  EXPECT_EQ(write_adm_reference(refi, ref, net(), o), 10);
  const auto keys = npz_keys(ref);
  for (const char* k : {"mu", "sigma", "mu_s", "sigma_s", "pool", "arr_0", "count", "protocol"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  SuiteOptions o2 = o;
  o2.save_activations.clear();
  const SuiteReport b = run_adm_suite(smp, ref, &net(), SuiteMetrics{}, o2);
  EXPECT_NEAR(b.fid.value, a.fid.value, 1e-9 * a.fid.value);
  ASSERT_TRUE(b.sfid.available) << b.sfid.why;
  EXPECT_GT(b.sfid.value, 0);
  EXPECT_EQ(b.precision.value, a.precision.value);
  EXPECT_EQ(b.recall.value, a.recall.value);
  EXPECT_EQ(b.ref.count, 10);
  // The same without "pool": precision / recall from its arr_0 images (as ADM).
  auto full = load_npz(ref);
  full.erase("pool");
  save_npz(tmp.file("ref_arr0.npz"), full);
  const SuiteReport c = run_adm_suite(smp, tmp.file("ref_arr0.npz"), &net(), parse_suite_metrics("precision,recall"), o2);
  EXPECT_EQ(c.precision.value, a.precision.value);
  EXPECT_EQ(c.recall.value, a.recall.value);
}

TEST(AdmSuite, UnavailableMetricsAndErrorsNameFileAndKey) {
  vt_test::TmpDir tmp;
  const std::string smp = tmp.file("samples.npz"), refi = tmp.file("ref_images.npz"), ref = tmp.file("ref.npz");
  save_npz(smp, {{"arr_0", images(10, 32, 0, 3)}});
  save_npz(refi, {{"arr_0", images(8, 32, 20, 4)}});
  SuiteOptions o;
  o.is_split = 6;  // 10 samples < 2 splits
  write_adm_reference(refi, ref, net(), o);
  auto full = load_npz(ref);
  // Old-style statistics: mu and sigma only.
  save_npz(tmp.file("mu_only.npz"), {{"mu", full.at("mu")}, {"sigma", full.at("sigma")}});
  const SuiteReport r = run_adm_suite(smp, tmp.file("mu_only.npz"), &net(), SuiteMetrics{}, o);
  EXPECT_TRUE(r.fid.available);
  EXPECT_FALSE(r.sfid.available);
  EXPECT_NE(r.sfid.why.find("mu_only.npz' has no key 'mu_s'"), std::string::npos) << r.sfid.why;
  EXPECT_FALSE(r.is.available);
  EXPECT_NE(r.is.why.find("samples.npz' arr_0: the Inception Score needs at least 2 splits of 6 samples (12), found 10"),
            std::string::npos)
      << r.is.why;
  EXPECT_FALSE(r.precision.available);
  EXPECT_NE(r.precision.why.find("neither key 'arr_0' (images) nor key 'pool'"), std::string::npos) << r.precision.why;
  // Weights without fc.weight: IS unavailable, the rest computed.
  const InceptionFid nofc(w16_state(false), "w16");
  o.is_split = 5;
  const SuiteReport q = run_adm_suite(smp, ref, &nofc, parse_suite_metrics("fid,is,precision"), o);
  EXPECT_FALSE(q.is.available);
  EXPECT_NE(q.is.why.find("'fc.weight'"), std::string::npos) << q.is.why;
  EXPECT_TRUE(q.fid.available && q.precision.available);
  // Mismatched dimensions: mu_s of another size.
  auto bad = full;
  bad["mu_s"] = NpyArray::from(std::vector<double>(10, 0.0), {10});
  std::vector<double> eye(100, 0.0);
  for (int i = 0; i < 10; ++i) eye[i * 11] = 1;
  bad["sigma_s"] = NpyArray::from(eye, {10, 10});
  save_npz(tmp.file("bad_s.npz"), bad);
  const std::string e1 = what_of([&] { run_adm_suite(smp, tmp.file("bad_s.npz"), &net(), SuiteMetrics{}, o); });
  EXPECT_NE(e1.find("spatial feature dimensions differ"), std::string::npos) << e1;
  EXPECT_NE(e1.find("bad_s.npz' mu_s gives 10"), std::string::npos) << e1;
  // Pool rows of another width.
  bad = full;
  bad["pool"] = NpyArray::from(std::vector<float>(8 * 64, 0.5f), {8, 64});
  save_npz(tmp.file("bad_pool.npz"), bad);
  const std::string e2 = what_of([&] { run_adm_suite(smp, tmp.file("bad_pool.npz"), &net(), SuiteMetrics{}, o); });
  EXPECT_NE(e2.find("bad_pool.npz' pool gives 64"), std::string::npos) << e2;
  // A reference made with the other protocol.
  SuiteOptions pt = o;
  pt.protocol = FidProtocol::PytorchFid;
  const std::string e3 = what_of([&] { run_adm_suite(smp, ref, &net(), parse_suite_metrics("fid"), pt); });
  EXPECT_NE(e3.find("ref.npz': key 'protocol' says its statistics were made with the adm protocol, but --protocol is pytorch-fid"),
            std::string::npos) << e3;
  // Metric names.
  EXPECT_NE(what_of([] { parse_suite_metrics("fid,kid"); }).find("unknown metric 'kid'"), std::string::npos);
  SuiteMetrics m = parse_suite_metrics("is,recall");
  EXPECT_TRUE(m.is && m.recall && !m.fid && !m.precision && m.chosen);
}

// Network passes of the test below (the progress callback is called per batch).
int g_passes_progress = 0;

// Too few images for precision / recall (k = 3 needs 4 per side): both are
// unavailable with the counts, FID is still computed (it threw a usage
// error from the manifold code). A protocol or dimension mismatch of a
// statistics file is found before any network pass.
TEST(AdmSuite, TooFewImagesAndMismatchesBeforeAnyPass) {
  vt_test::TmpDir tmp;
  const std::string smp = tmp.file("samples.npz"), refi = tmp.file("ref3.npz");
  save_npz(smp, {{"arr_0", images(3, 32, 0, 7)}});
  save_npz(refi, {{"arr_0", images(3, 32, 30, 8)}});
  SuiteOptions o;
  o.is_split = 5000;
  SuiteMetrics all;    // as --metrics all (nothing chosen by name) ...
  all.sfid = false;    // ... but for sFID's slow 2023-d eigensolves
  const SuiteReport r = run_adm_suite(smp, refi, &net(), all, o);
  EXPECT_TRUE(r.fid.available);
  EXPECT_FALSE(r.is.available);
  EXPECT_FALSE(r.precision.available);
  EXPECT_FALSE(r.recall.available);
  EXPECT_NE(r.precision.why.find("precision / recall need more than k = 3 images on each side: '" + smp +
                                 "' arr_0 has 3, '" + refi + "' arr_0 has 3"),
            std::string::npos)
      << r.precision.why;
  // Statistics of the other protocol, or of another width: refused with no pass made.
  const std::string ref = tmp.file("ref.npz");
  save_npz(tmp.file("ref_images.npz"), {{"arr_0", images(6, 32, 10, 9)}});
  write_adm_reference(tmp.file("ref_images.npz"), ref, net(), o);
  SuiteOptions pt = o;
  pt.protocol = FidProtocol::PytorchFid;
  g_passes_progress = 0;
  pt.progress = [](int64_t, int64_t) { ++g_passes_progress; };
  const std::string e1 = what_of([&] { run_adm_suite(smp, ref, &net(), all, pt); });
  EXPECT_NE(e1.find("key 'protocol' says"), std::string::npos) << e1;
  auto full = load_npz(ref);
  full["mu"] = NpyArray::from(std::vector<double>(64, 0.0), {64});
  save_npz(tmp.file("w64.npz"), full);
  SuiteOptions counted = o;
  counted.progress = pt.progress;
  const std::string e2 = what_of([&] { run_adm_suite(smp, tmp.file("w64.npz"), &net(), all, counted); });
  EXPECT_NE(e2.find("pool feature dimensions differ: --samples '" + smp + "' arr_0 gives 128, --ref '" +
                    tmp.file("w64.npz") + "' mu gives 64"),
            std::string::npos)
      << e2;
  EXPECT_EQ(g_passes_progress, 0);
}

#ifdef VT_VEVAL_EXE
// `veval stats` writes an ADM-format reference from an ADM-format image
// batch; `veval fid` then prints all five metrics for an ADM-format sample
// batch against it (text and JSON).
TEST(AdmSuite, VevalPrintsAllFiveMetrics) {
  vt_test::TmpDir tmp;
  std::vector<std::pair<std::string, Tensor>> w;
  for (auto& [k, t] : w16_state(true))
    if (k != "images" && k != "features") w.emplace_back(k, t);
  const std::string weights = tmp.file("w16_fc.safetensors");
  save_safetensors(weights, w);
  save_npz(tmp.file("samples.npz"), {{"arr_0", images(12, 32, 0, 5)}});
  save_npz(tmp.file("ref_images.npz"), {{"arr_0", images(10, 32, 25, 6)}});
  const std::string exe = std::string(VT_VEVAL_EXE) + " ";
  std::string log;
  ASSERT_EQ(run(exe + "stats --images " + tmp.file("ref_images.npz") + " --out " + tmp.file("ref.npz") +
                    " --device cpu --inception " + weights,
                &log),
            0)
      << log;
  log.clear();
  ASSERT_EQ(run(exe + "fid --samples " + tmp.file("samples.npz") + " --ref " + tmp.file("ref.npz") +
                    " --device cpu --is-split 6 --inception " + weights + " --json " + tmp.file("r.json"),
                &log),
            0)
      << log;
  for (const char* line : {"\nFID: ", "\nsFID: ", "\nIS: ", "\nprecision: ", "\nrecall: ", "\nprotocol: adm"})
    EXPECT_NE(log.find(line), std::string::npos) << line << " in\n" << log;
  nlohmann::json j;
  std::ifstream(tmp.file("r.json")) >> j;
  for (const char* k : {"fid", "sfid", "inception_score", "precision", "recall"}) EXPECT_TRUE(j.at(k).is_number()) << k;
  EXPECT_TRUE(j.at("unavailable").empty());
  // The reference's statistics without mu_s: sFID unavailable, the rest there.
  auto full = load_npz(tmp.file("ref.npz"));
  full.erase("mu_s");
  save_npz(tmp.file("ref_no_s.npz"), full);
  log.clear();
  EXPECT_EQ(run(exe + "fid --samples " + tmp.file("samples.npz") + " --ref " + tmp.file("ref_no_s.npz") +
                    " --device cpu --is-split 6 --metrics fid,sfid,is --inception " + weights,
                &log),
            1)  // sFID asked for by name and unavailable
      << log;
  EXPECT_NE(log.find("sFID: unavailable ('" + tmp.file("ref_no_s.npz") + "' has no key 'mu_s')"), std::string::npos) << log;
  EXPECT_NE(log.find("\nFID: "), std::string::npos) << log;
  EXPECT_NE(log.find("\nIS: "), std::string::npos) << log;
  // 3 samples under the default --metrics all: FID printed and written, the
  // metrics 3 images cannot give reported unavailable, exit 0 (it was a
  // usage error naming no file, with no --json).
  save_npz(tmp.file("three.npz"), {{"arr_0", images(3, 32, 0, 11)}});
  log.clear();
  EXPECT_EQ(run(exe + "fid --samples " + tmp.file("three.npz") + " --ref " + tmp.file("ref.npz") +
                    " --device cpu --inception " + weights + " --json " + tmp.file("three.json"),
                &log),
            0)
      << log;
  EXPECT_NE(log.find("\nFID: "), std::string::npos) << log;
  EXPECT_NE(log.find("precision: unavailable (precision / recall need more than k = 3 images on each side"),
            std::string::npos)
      << log;
  nlohmann::json t;
  std::ifstream(tmp.file("three.json")) >> t;
  EXPECT_TRUE(t.at("fid").is_number());
  EXPECT_TRUE(t.at("precision").is_null());
  EXPECT_TRUE(t.at("unavailable").contains("recall"));
  EXPECT_TRUE(t.at("unavailable").contains("inception_score"));
}

// `veval stats --out`: the name given (.npz appended only when missing), a
// rerun with the same arguments is done, other arguments are refused naming
// the key, both values and the file unless --overwrite true (it replaced
// the file silently).
TEST(AdmSuite, VevalStatsOutputIsDoneOrRefusedUnlessOverwrite) {
  vt_test::TmpDir tmp;
  const std::string weights = tmp.file("w16.safetensors");
  {
    std::vector<std::pair<std::string, Tensor>> w;
    for (auto& [k, t] : w16_state(false))
      if (k != "images" && k != "features") w.emplace_back(k, t);
    save_safetensors(weights, w);
  }
  save_npz(tmp.file("imgs.npz"), {{"arr_0", images(6, 32, 0, 12)}});
  const std::string base = std::string(VT_VEVAL_EXE) + " stats --images " + tmp.file("imgs.npz") +
                           " --device cpu --inception " + weights + " --out ";
  std::string log;
  ASSERT_EQ(run(base + tmp.file("ref"), &log), 0) << log;  // no .npz given: ref.npz
  EXPECT_TRUE(fs::exists(tmp.file("ref.npz")));
  EXPECT_FALSE(fs::exists(tmp.file("ref.npz.npz")));
  const std::string first = vt_test::read_text(tmp.file("ref.npz"));
  log.clear();
  ASSERT_EQ(run(base + tmp.file("ref.npz"), &log), 0) << log;
  EXPECT_NE(log.find("veval stats: " + tmp.file("ref.npz") + " is done"), std::string::npos) << log;
  log.clear();
  EXPECT_EQ(run(base + tmp.file("ref.npz") + " --protocol pytorch-fid", &log), 1) << log;
  EXPECT_NE(log.find("veval stats: '" + tmp.file("ref.npz") +
                     "' was made with protocol = adm; this run has protocol = pytorch-fid: rerun with that run's "
                     "arguments (then it is done), give another --out, or --overwrite true to replace it"),
            std::string::npos)
      << log;
  EXPECT_EQ(vt_test::read_text(tmp.file("ref.npz")), first);
  log.clear();
  ASSERT_EQ(run(base + tmp.file("ref.npz") + " --protocol pytorch-fid --overwrite true", &log), 0) << log;
  EXPECT_NE(vt_test::read_text(tmp.file("ref.npz")), first);
  // A directory: <images>_stats.npz inside it.
  fs::create_directories(tmp.file("d"));
  log.clear();
  ASSERT_EQ(run(base + tmp.file("d"), &log), 0) << log;
  EXPECT_TRUE(fs::exists(tmp.file("d/imgs_stats.npz"))) << log;
}
#endif

}  // namespace
}  // namespace vt
