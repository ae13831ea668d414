// ADM evaluation-suite math against tools/adm_eval_fixture.py (a numpy
// reimplementation of openai/guided-diffusion's evaluations/evaluator.py
// and of TensorFlow 1's legacy resize_bilinear), TensorFlow's own resize,
// torch-fidelity's Inception Score, and closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "core/npz.h"
#include "eval/frechet.h"
#include "eval/inception_score.h"
#include "eval/manifold.h"
#include "eval/tf_resize.h"

namespace vt {
namespace {

const std::map<std::string, NpyArray>& fx() {
  static const auto m = load_npz(std::string(VT_FIXTURES_DIR) + "/eval/adm_suite.npz");
  return m;
}
double scalar(const std::string& k) { return fx().at(k).to_f64().at(0); }

TEST(Tf1Resize, MatchesFloat64ReferenceOnOddSizesUpAndDown) {
  for (int c = 0; c < 4; ++c) {
    const NpyArray& in = fx().at("resize" + std::to_string(c) + "_in");
    const NpyArray& want = fx().at("resize" + std::to_string(c) + "_out");  // [oh, ow, 3] float64
    const int64_t h = in.shape[0], w = in.shape[1], oh = want.shape[0], ow = want.shape[1];
    std::vector<uint8_t> px = in.as<uint8_t>();
    std::vector<double> ref = want.as<double>();
    std::vector<float> got(static_cast<size_t>(3 * oh * ow));
    tf1_resize_bilinear_u8(px.data(), h, w, got.data(), oh, ow);
    double err = 0;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int ch = 0; ch < 3; ++ch)
          err = std::max(err, std::fabs(got[(ch * oh + y) * ow + x] - ref[(y * ow + x) * 3 + ch]));
    // float32 arithmetic on [0, 255] values against float64.
    EXPECT_LT(err, 1e-4) << "case " << c << ": " << h << "x" << w << " -> " << oh << "x" << ow;
    // TensorFlow's own kernel (tf.compat.v1.image.resize_bilinear), float32.
    const NpyArray& tf = fx().at("resize" + std::to_string(c) + "_tf");
    std::vector<float> t = tf.as<float>();
    double et = 0;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int ch = 0; ch < 3; ++ch)
          et = std::max(et, double(std::fabs(got[(ch * oh + y) * ow + x] - t[(y * ow + x) * 3 + ch])));
    EXPECT_EQ(et, 0.0) << "case " << c << " vs TensorFlow (the same float32 operations)";
    std::printf("TF1 resize %lldx%lld -> %lldx%lld: max |diff| %.3g vs float64, %.3g vs TensorFlow\n", (long long)h,
                (long long)w, (long long)oh, (long long)ow, err, et);
  }
}

TEST(Tf1Resize, ClosedForms) {
  // Same size: identity. 2 -> 4 (no half-pixel offset): 0, 0.5, 1, 1 of the way.
  const uint8_t img[2 * 3] = {10, 20, 30, 110, 120, 130};  // 1 x 2 pixels
  std::vector<float> out(3 * 4);
  tf1_resize_bilinear_u8(img, 1, 2, out.data(), 1, 4);
  const float want_r[4] = {10, 60, 110, 110};
  for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(out[x], want_r[x]);
  std::vector<float> same(3 * 2);
  tf1_resize_bilinear_u8(img, 1, 2, same.data(), 1, 2);
  EXPECT_FLOAT_EQ(same[0], 10);
  EXPECT_FLOAT_EQ(same[1], 110);
  EXPECT_FLOAT_EQ(same[5], 130);
}

TEST(InceptionScoreTest, MatchesNumpyEvaluatorAndTorchFidelity) {
  for (const char* c : {"a", "b", "c"}) {
    const std::string p = std::string("is_") + c;
    const NpyArray& l = fx().at(p + "_logits");
    std::vector<float> logits = l.as<float>();
    const int64_t split = static_cast<int64_t>(scalar(p + "_split"));
    InceptionScore s = inception_score(logits.data(), l.shape[0], l.shape[1], split);
    const double want = scalar(p);
    EXPECT_NEAR(s.mean, want, 1e-9 * want) << p;
    std::vector<double> ws = fx().at(p + "_scores").as<double>();
    ASSERT_EQ(s.splits.size(), ws.size()) << p;  // a partial last split counts (case a: 4 x 15 + 4)
    for (size_t i = 0; i < ws.size(); ++i) EXPECT_NEAR(s.splits[i], ws[i], 1e-9 * ws[i]) << p << " split " << i;
    if (fx().count(p + "_torch_fidelity")) {
      const double tf = scalar(p + "_torch_fidelity");
      EXPECT_NEAR(s.mean, tf, 1e-9 * tf) << p << " vs torch-fidelity";
    }
  }
  EXPECT_TRUE(fx().count("is_b_torch_fidelity") && fx().count("is_c_torch_fidelity"));
}

TEST(InceptionScoreTest, ClosedForms) {
  // One-hot predictions spread evenly over K classes: IS = K. Identical
  // predictions: IS = 1.
  const int64_t k = 4, n = 8, c = 6;
  std::vector<float> onehot(n * c, -80.f), same(n * c);
  for (int64_t i = 0; i < n; ++i) onehot[i * c + (i % k)] = 80.f;
  for (int64_t i = 0; i < n * c; ++i) same[i] = static_cast<float>(i % c);
  EXPECT_NEAR(inception_score(onehot.data(), n, c, 4).mean, 4.0, 1e-9);
  EXPECT_NEAR(inception_score(same.data(), n, c, 4).mean, 1.0, 1e-12);
}

TEST(InceptionScoreTest, NeedsTwoSplits) {
  std::vector<float> l(9 * 3, 0.f);
  try {
    inception_score(l.data(), 9, 3, 5);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2 splits of 5 samples (10), got 9"), std::string::npos) << e.what();
  }
}

TEST(PrecisionRecallTest, MatchesNumpyFloat64ExactlyForAnyBlocking) {
  const NpyArray& r = fx().at("pr_ref");
  const NpyArray& s = fx().at("pr_samples");
  std::vector<float> ref = r.as<float>(), smp = s.as<float>();
  const int64_t d = r.shape[1];
  std::vector<double> want_rr = fx().at("pr_radii_ref").as<double>(), want_sr = fx().at("pr_radii_samples").as<double>();
  for (int64_t block : {7, 64, 4096}) {
    ManifoldOptions o;
    o.row_block = block, o.col_block = block + 3;
    std::vector<double> rr = manifold_radii(ref.data(), r.shape[0], d, o);
    for (size_t i = 0; i < rr.size(); ++i) ASSERT_NEAR(rr[i], want_rr[i], 1e-12 * want_rr[i]) << i;
    PrecisionRecall pr = precision_recall(ref.data(), r.shape[0], smp.data(), s.shape[0], d, o);
    EXPECT_EQ(pr.precision, scalar("pr_precision_fp64")) << "block " << block;
    EXPECT_EQ(pr.recall, scalar("pr_recall_fp64")) << "block " << block;
  }
  // The fixture's fp32 distances agree with fp64 here (fp16 moves recall).
  EXPECT_EQ(scalar("pr_precision_fp32"), scalar("pr_precision_fp64"));
  EXPECT_EQ(scalar("pr_recall_fp32"), scalar("pr_recall_fp64"));
}

TEST(PrecisionRecallTest, SelfIsOneDisjointClustersZero) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd;
  const int64_t n = 50, d = 16;
  std::vector<float> a(n * d), b(n * d);
  for (auto& v : a) v = nd(g);
  for (auto& v : b) v = nd(g) + 100.f;
  PrecisionRecall self = precision_recall(a.data(), n, a.data(), n, d);
  EXPECT_EQ(self.precision, 1.0);
  EXPECT_EQ(self.recall, 1.0);
  PrecisionRecall apart = precision_recall(a.data(), n, b.data(), n, d);
  EXPECT_EQ(apart.precision, 0.0);
  EXPECT_EQ(apart.recall, 0.0);
}

TEST(PrecisionRecallTest, RadiusIsKthNeighbourCountingSelf) {
  // Points on a line at 0, 1, 3, 6, 10: squared distances from 0 are
  // 0, 1, 9, 36, 100; index 3 (k = 3) is 36.
  const float x[5] = {0, 1, 3, 6, 10};
  std::vector<double> r = manifold_radii(x, 5, 1);
  EXPECT_EQ(r[0], 36.0);
  EXPECT_EQ(r[4], 81.0);  // from 10: 0, 16, 49, 81, 100
  EXPECT_THROW(manifold_radii(x, 3, 1), std::invalid_argument);
}

TEST(SpatialFrechet, MatchesNumpy) {
  const NpyArray& a = fx().at("sfid_feat1");
  const NpyArray& b = fx().at("sfid_feat2");
  StatsAccumulator sa(a.shape[1]), sb(b.shape[1]);
  sa.add(a.as<float>().data(), a.shape[0]);
  sb.add(b.as<float>().data(), b.shape[0]);
  const double want = scalar("sfid");
  EXPECT_NEAR(frechet_distance(sa.finish(), sb.finish()).fid, want, 1e-6 * want);
}

}  // namespace
}  // namespace vt
