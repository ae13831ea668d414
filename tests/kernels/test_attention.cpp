// Attention forward against a naive double-precision triple loop, backward
// against central finite differences of that double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "gradcheck.h"
#include "kernels/attention.h"

namespace vt {
namespace {

std::vector<float> random_vec(size_t n, uint64_t stream, double scale = 1.0) {
  Philox rng(1234, stream);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal() * scale);
  return v;
}

// out[b,t,h,:] = sum_s softmax_s(q.k / sqrt(Dh)) v, straight from the definition.
std::vector<double> ref_attention(const std::vector<double>& qkv, int B, int T, int H, int Dh,
                                  std::vector<double>* probs = nullptr) {
  const int D = H * Dh;
  std::vector<double> out(static_cast<size_t>(B) * T * D, 0.0);
  if (probs) probs->assign(static_cast<size_t>(B) * H * T * T, 0.0);
  auto at = [&](int b, int t, int which, int h, int d) { return qkv[((b * T + t) * 3 + which) * D + h * Dh + d]; };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        std::vector<double> s(T);
        double mx = -1e300;
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int d = 0; d < Dh; ++d) dot += at(b, i, 0, h, d) * at(b, j, 1, h, d);
          s[j] = dot / std::sqrt(static_cast<double>(Dh));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int j = 0; j < T; ++j) {
          s[j] /= sum;
          if (probs) (*probs)[((b * H + h) * T + i) * T + j] = s[j];
          for (int d = 0; d < Dh; ++d) out[(b * T + i) * D + h * Dh + d] += s[j] * at(b, j, 2, h, d);
        }
      }
  return out;
}

void check_forward(int B, int T, int H, int Dh, double tol) {
  const int D = H * Dh;
  std::vector<float> q = random_vec(static_cast<size_t>(B) * T * 3 * D, 1);
  Tensor qkv = Tensor::from_vector(q, {B, T, 3 * D});
  Tensor out = Tensor::empty({B, T, D}), probs = Tensor::empty({B, H, T, T});
  attention_forward(qkv, H, out, probs);
  std::vector<double> pref;
  std::vector<double> ref = ref_attention(std::vector<double>(q.begin(), q.end()), B, T, H, Dh, &pref);
  std::vector<float> o = out.to_vector(), p = probs.to_vector();
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(o[i], ref[i], tol) << "out[" << i << "]";
  for (size_t i = 0; i < pref.size(); ++i) ASSERT_NEAR(p[i], pref[i], tol) << "probs[" << i << "]";

  // Inference path (no saved probabilities) computes the same output.
  Tensor out2 = Tensor::empty({B, T, D});
  attention_forward(qkv, H, out2, Tensor());
  std::vector<float> o2 = out2.to_vector();
  for (size_t i = 0; i < o.size(); ++i) ASSERT_EQ(o2[i], o[i]);
}

TEST(Attention, ForwardMatchesNaiveReference) { check_forward(2, 5, 2, 4, 2e-6); }

TEST(Attention, ForwardMatchesNaiveReferenceLargerShape) { check_forward(2, 37, 3, 16, 1e-5); }

TEST(Attention, SoftmaxIsStableForLargeLogits) {
  // Logits of order 1e3 overflow exp without the max subtraction.
  const int B = 1, T = 4, H = 1, Dh = 2;
  std::vector<float> q = random_vec(static_cast<size_t>(B) * T * 3 * H * Dh, 2, 40.0);
  Tensor qkv = Tensor::from_vector(q, {B, T, 3 * H * Dh});
  Tensor out = Tensor::empty({B, T, H * Dh}), probs = Tensor::empty({B, H, T, T});
  attention_forward(qkv, H, out, probs);
  std::vector<double> ref = ref_attention(std::vector<double>(q.begin(), q.end()), B, T, H, Dh);
  std::vector<float> o = out.to_vector();
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_TRUE(std::isfinite(o[i]));
    ASSERT_NEAR(o[i], ref[i], 1e-4 * (1 + std::abs(ref[i])));
  }
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  const int B = 2, T = 5, H = 2, Dh = 4, D = H * Dh;
  std::vector<float> q = random_vec(static_cast<size_t>(B) * T * 3 * D, 3);
  std::vector<float> r = random_vec(static_cast<size_t>(B) * T * D, 4);  // L = sum(out * r)
  Tensor qkv = Tensor::from_vector(q, {B, T, 3 * D});
  Tensor out = Tensor::empty({B, T, D}), probs = Tensor::empty({B, H, T, T});
  attention_forward(qkv, H, out, probs);
  Tensor dqkv = Tensor::full({B, T, 3 * D}, 7.0f);  // garbage: backward must overwrite
  attention_backward(qkv, probs, Tensor::from_vector(r, {B, T, D}), H, dqkv);
  std::vector<float> g = dqkv.to_vector();

  std::vector<double> x(q.begin(), q.end());
  auto loss = [&](const std::vector<double>& v) {
    std::vector<double> o = ref_attention(v, B, T, H, Dh);
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * r[i];
    return s;
  };
  const std::vector<double> fd = gradcheck::central_differences(x, loss, 1e-5);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(g[i], fd[i], 2e-5) << "dqkv[" << i << "]";
}

TEST(Attention, SavedBytes) { EXPECT_EQ(attention_saved_bytes(32, 197, 6), 32LL * 6 * 197 * 197 * 4); }

// The CPU saves probabilities (what keeps CPU training bitwise as before);
// the logsumexp form is CUDA-only and rejected here with a message saying so.
TEST(Attention, CpuSavesProbabilities) {
  const AttentionSavedSpec spec = attention_saved_spec(Device::cpu(), 2, 5, 2, 4);
  EXPECT_FALSE(spec.lse);
  EXPECT_EQ(spec.shape, (Shape{2, 2, 5, 5}));
  EXPECT_EQ(spec.dtype, DType::F32);
  Tensor qkv = Tensor::zeros({2, 5, 3 * 8}), out = Tensor::empty({2, 5, 8}), lse = Tensor::empty({2, 2, 5});
  try {
    attention_forward(qkv, 2, out, lse);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA-only"), std::string::npos) << e.what();
  }
}

// The backward overload taking out gives the probs-only overload's result
// (out is not read for probs).
TEST(Attention, BackwardOverloadsAgree) {
  const int64_t B = 2, T = 7, H = 2, Dh = 4, D = H * Dh;
  Philox rng(9, 1);
  Tensor qkv = Tensor::empty({B, T, 3 * D}), dout = Tensor::empty({B, T, D});
  for (int64_t i = 0; i < qkv.numel(); ++i) qkv.f32()[i] = static_cast<float>(rng.normal());
  for (int64_t i = 0; i < dout.numel(); ++i) dout.f32()[i] = static_cast<float>(rng.normal());
  Tensor out = Tensor::empty({B, T, D}), probs = Tensor::empty({B, H, T, T});
  attention_forward(qkv, H, out, probs);
  Tensor d1 = Tensor::empty(qkv.shape()), d2 = Tensor::empty(qkv.shape());
  attention_backward(qkv, probs, dout, H, d1);
  attention_backward(qkv, out, probs, dout, H, d2);
  EXPECT_EQ(d1.to_vector(), d2.to_vector());
}

TEST(Attention, RejectsBadShapes) {
  Tensor qkv = Tensor::zeros({2, 5, 3 * 8});
  Tensor out = Tensor::empty({2, 5, 8}), probs = Tensor::empty({2, 3, 5, 5});
  EXPECT_THROW(attention_forward(qkv, 3, out, probs), std::invalid_argument);  // 8 % 3 != 0
  EXPECT_THROW(attention_forward(qkv, 2, Tensor::empty({2, 5, 9}), Tensor()), std::invalid_argument);
  EXPECT_THROW(attention_forward(Tensor::zeros({2, 5, 23}), 2, out, Tensor()), std::invalid_argument);
  try {
    attention_forward(qkv, 2, out, probs);  // probs must be [2, 2, 5, 5]
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("probs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vt
