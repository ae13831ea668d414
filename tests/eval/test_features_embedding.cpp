// veval fid --features (eval/features_embedding.h): the embedding is the
// classifier's pre-logit feature (checked against the head: logits = W f + b
// in double, and against LayerNorm's closed form at init: zero mean, unit
// variance per row), statistics equal a double-precision reference built
// here from per-image features, FID of a set against itself is 0, and an
// .npz of the decoded pixels gives the same statistics as the folder.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/config.h"
#include "core/npz.h"
#include "core/safetensors.h"
#include "data_pipeline/decode.h"
#include "eval/features_embedding.h"
#include "eval/frechet.h"
#include "core/checkpoint_dir.h"
#include "vision/evaluate.h"
#include "vision/train_config.h"
#include "vision/vision_test_util.h"
#include "vision/vit.h"

using namespace vt;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kDim = 16;

class FeaturesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new vt_test::TmpDir();
    vt_test::make_cifar_subset(data(), 3, 6, 10);  // 18 train, 30 test images > kDim: full-rank covariances
    // crop_pct 0.875: 32 px images are resized to 36 and center-cropped.
    const std::string yaml = "name: f\nseed: 1\nthreads: 1\n"
                             "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 2, heads: 2,"
                             " num_classes: 5, norm: {scheme: siamese}}\n"
                             "data: {root: " + data() + ", val_split: test, crop_pct: 0.875}\n";
    Config cfg = Config::parse(yaml, vtrain_schema(), {}, "f.yaml", ".");
    fs::create_directories(run());
    cfg.save(run() + "/config.yaml");  // as vtrain writes it
    VisionTransformer m(train_options(cfg, "f.yaml").vit);
    m.init(21);
    CheckpointData d;
    d.model = m.params().state_dict();
    d.state = {{"step", 2}};
    save_checkpoint(run(), 2, d);
  }
  static void TearDownTestSuite() { delete tmp_; }
  static std::string data() { return tmp_->path() + "/data"; }
  static std::string run() { return tmp_->path() + "/runs/f"; }
  static std::string ckpt() { return run() + "/step_2"; }
  static vt_test::TmpDir* tmp_;
};
vt_test::TmpDir* FeaturesTest::tmp_ = nullptr;

// Per-image features in double, from the embedding's own preprocessing.
std::vector<std::vector<double>> per_image_features(const ClassifierEmbedding& emb, const std::vector<std::string>& files) {
  std::vector<std::vector<double>> out;
  Tensor x = Tensor::empty({1, 3, 32, 32}), f = Tensor::empty({1, kDim});
  for (const auto& p : files) {
    emb.preprocess_file(p, x.f32());
    emb.features(x, f);
    out.emplace_back(f.f32(), f.f32() + kDim);
  }
  return out;
}

}  // namespace

TEST_F(FeaturesTest, LoadsTheRunConfigByDefault) {
  EXPECT_EQ(run_config_of_checkpoint(ckpt()), run() + "/config.yaml");
  EXPECT_EQ(run_config_of_checkpoint(ckpt() + "/"), run() + "/config.yaml");
  EXPECT_EQ(run_config_of_checkpoint(ckpt() + "/model.safetensors"), run() + "/config.yaml");
  EXPECT_EQ(run_config_of_checkpoint(run()), run() + "/config.yaml");
  const ClassifierEmbedding emb = ClassifierEmbedding::load(ckpt(), "");
  EXPECT_EQ(emb.feature_dim(), kDim);
  EXPECT_EQ(emb.image_size(), 32);
  EXPECT_EQ(emb.transform().kind, ImagePipeline::DeitEval);
  EXPECT_DOUBLE_EQ(emb.transform().crop_pct, 0.875);
  // A checkpoint outside a run directory needs --config.
  const std::string lone = tmp_->path() + "/lone";
  fs::create_directories(lone);
  fs::copy_file(ckpt() + "/model.safetensors", lone + "/model.safetensors", fs::copy_options::overwrite_existing);
  try {
    ClassifierEmbedding::load(lone, "");
    FAIL() << "no error without a config";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("pass the training config with --config"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ClassifierEmbedding::load(lone, run() + "/config.yaml").feature_dim(), kDim);
}

// --features given a dittrain run: its config.yaml is no vtrain config, and
// the error says what the checkpoint is (it listed a dozen keys unknown to
// vtrain: diffusion.*, sample.*, ...).
TEST_F(FeaturesTest, ADittrainCheckpointIsNamedAsSuch) {
  const std::string dit = tmp_->path() + "/runs/dit";
  fs::create_directories(dit);
  fs::copy_file(std::string(VT_FIXTURES_DIR) + "/../../configs/cifar10_dit_siamese.yaml", dit + "/config.yaml");
  CheckpointData d;
  d.model = {{"x_embedder.proj.weight", Tensor::zeros({4, 3, 2, 2})}};
  d.state = {{"step", 1}};
  save_checkpoint(dit, 1, d);
  try {
    ClassifierEmbedding::load(dit, "");
    FAIL() << "no error for a DiT checkpoint";
  } catch (const ConfigError& e) {
    FAIL() << "config error instead of the checkpoint's kind: " << e.what();
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("holds a dittrain DiT model"), std::string::npos) << m;
    EXPECT_NE(m.find(dit + "/step_1/model.safetensors"), std::string::npos) << m;
    EXPECT_EQ(m.find("unknown key"), std::string::npos) << m;
  }
}

TEST_F(FeaturesTest, EmbeddingIsThePreLogitClassToken) {
  const ClassifierEmbedding emb = ClassifierEmbedding::load(ckpt(), "");
  const std::vector<std::string> files = list_images_recursive(data() + "/test");
  // The same preprocessing as the classifier's evaluation loader.
  ImageFolderDataset ds(data() + "/test", emb.transform());
  ASSERT_EQ(ds.name(3), files[3]);
  Tensor a = Tensor::empty({1, 3, 32, 32}), b = Tensor::empty({1, 3, 32, 32});
  Philox rng(0, 0);
  ds.load(3, rng, a.f32());
  emb.preprocess_file(files[3], b.f32());
  EXPECT_EQ(a.to_vector(), b.to_vector());

  Tensor f = Tensor::empty({1, kDim});
  emb.features(b, f);
  // The head applied to the feature in double reproduces a separately loaded model's logits.
  const auto sd = load_safetensors(ckpt() + "/model.safetensors");
  const std::vector<float> W = sd.at("head.weight").to_vector(), bias = sd.at("head.bias").to_vector();
  VitConfig vc = emb.classifier().options.vit;
  VisionTransformer m(vc);
  m.params().load(sd, true);
  Tensor logits = Tensor::empty({1, 5});
  m.forward(b, logits, false);
  const float* fv = f.f32();
  for (int k = 0; k < 5; ++k) {
    double z = bias[k];
    for (int j = 0; j < kDim; ++j) z += static_cast<double>(W[k * kDim + j]) * fv[j];
    EXPECT_NEAR(logits.f32()[k], z, 1e-5) << k;
  }
  // Untrained final LayerNorm (weight 1, bias 0): the feature row is standardised.
  double mean = 0, var = 0;
  for (int j = 0; j < kDim; ++j) mean += fv[j];
  mean /= kDim;
  for (int j = 0; j < kDim; ++j) var += (fv[j] - mean) * (fv[j] - mean);
  var /= kDim;
  EXPECT_NEAR(mean, 0.0, 1e-5);
  EXPECT_NEAR(var, 1.0, 1e-4);
}

TEST_F(FeaturesTest, StatisticsMatchDoubleReferenceAndSelfFidIsZero) {
  const ClassifierEmbedding emb = ClassifierEmbedding::load(ckpt(), "");
  const std::string dir = data() + "/test";
  const auto feats = per_image_features(emb, list_images_recursive(dir));
  const int64_t n = static_cast<int64_t>(feats.size());
  ASSERT_EQ(n, 30);
  std::vector<double> mu(kDim, 0.0);
  for (const auto& r : feats)
    for (int j = 0; j < kDim; ++j) mu[j] += r[j] / n;
  for (int64_t batch : {7, 50}) {  // a ragged last batch, and a single batch
    const FidSourceStats s = embedding_source_stats(dir, emb, batch);
    ASSERT_EQ(s.count, n);
    ASSERT_EQ(s.stats.dim(), kDim);
    for (int i = 0; i < kDim; ++i) {
      EXPECT_NEAR(s.stats.mu(i), mu[i], 1e-6) << i;
      for (int j = 0; j < kDim; ++j) {
        double c = 0;
        for (const auto& r : feats) c += (r[i] - mu[i]) * (r[j] - mu[j]);
        EXPECT_NEAR(s.stats.sigma(i, j), c / (n - 1), 1e-5) << i << "," << j;
      }
    }
    // 0 in closed form; the square roots of the covariance's rounding-level
    // eigenvalues leave ~sqrt(eps) relative to its trace.
    const FrechetResult self = frechet_distance(s.stats, s.stats);
    EXPECT_NEAR(self.fid, 0.0, 1e-6 * s.stats.sigma.trace()) << "batch " << batch;
  }
  // Different sets are apart.
  const FidSourceStats tr = embedding_source_stats(data() + "/train", emb, 50);
  EXPECT_GT(frechet_distance(embedding_source_stats(dir, emb, 50).stats, tr.stats).fid, 1e-3);
}

TEST_F(FeaturesTest, NpzOfDecodedPixelsMatchesFolder) {
  const ClassifierEmbedding emb = ClassifierEmbedding::load(ckpt(), "");
  const std::string dir = data() + "/test";
  const std::vector<std::string> files = list_images_recursive(dir);
  const int64_t n = static_cast<int64_t>(files.size());
  std::vector<uint8_t> px;
  for (const auto& p : files) {
    const std::vector<uint8_t> bytes = read_file_bytes(p);
    cv::Mat rgb = decode_image(bytes.data(), bytes.size(), p).rgb;
    ASSERT_EQ(rgb.rows, 32);
    if (!rgb.isContinuous()) rgb = rgb.clone();
    px.insert(px.end(), rgb.ptr<uint8_t>(0), rgb.ptr<uint8_t>(0) + 32 * 32 * 3);
  }
  const std::string npz = tmp_->path() + "/samples.npz";
  save_npz(npz, {{"arr_0", NpyArray::from(px, {n, 32, 32, 3})}});
  const FidSourceStats a = embedding_source_stats(dir, emb, 8), b = embedding_source_stats(npz, emb, 8);
  EXPECT_EQ(b.kind, FidSourceKind::ImageNpz);
  ASSERT_EQ(b.count, n);
  EXPECT_LT((a.stats.mu - b.stats.mu).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((a.stats.sigma - b.stats.sigma).cwiseAbs().maxCoeff(), 1e-12);
  // Statistics files are read as they are.
  const std::string st = tmp_->path() + "/stats.npz";
  save_stats_npz(st, a.stats);
  const FidSourceStats c = embedding_source_stats(st, emb, 8);
  EXPECT_EQ(c.kind, FidSourceKind::StatsNpz);
  EXPECT_LT((a.stats.sigma - c.stats.sigma).cwiseAbs().maxCoeff(), 1e-15);
}

TEST_F(FeaturesTest, BadInputsAreNamed) {
  const ClassifierEmbedding emb = ClassifierEmbedding::load(ckpt(), "");
  const std::string one = tmp_->path() + "/one/x";
  fs::create_directories(one);
  fs::copy_file(data() + "/test/airplane/0000.jpg", one + "/0000.jpg", fs::copy_options::overwrite_existing);
  try {
    embedding_source_stats(tmp_->path() + "/one", emb, 8);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2 images, found 1"), std::string::npos) << e.what();
  }
  const std::string bad = tmp_->path() + "/bad.npz";
  save_npz(bad, {{"arr_0", NpyArray::from(std::vector<float>(2 * 4 * 4 * 3), {2, 4, 4, 3})}});
  try {
    embedding_source_stats(bad, emb, 8);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected uint8 [N, H, W, 3]"), std::string::npos) << e.what();
  }
  try {
    ClassifierEmbedding::load(run() + "/step_99", run() + "/config.yaml");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("step_99' does not exist"), std::string::npos) << e.what();
  }
}
