// veval top1 (eval/top1.h) and the shared classifier evaluation
// (vision/evaluate.h): counting is checked against a closed form (a head that
// always predicts one class) and against a per-image reference computed
// here, one image at a time, with double-precision softmax; the ragged last
// batch, batch-size and world-size independence, EMA selection and the
// error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/config.h"
#include "core/safetensors.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/shard_pack.h"
#include "eval/classifier_checkpoint.h"
#include "eval/top1.h"
#include "core/checkpoint_dir.h"
#include "vision/evaluate.h"
#include "vision/train_config.h"
#include "vision/vision_test_util.h"
#include "vision/vit.h"

using namespace vt;
namespace fs = std::filesystem;

namespace {

constexpr int kClasses = 3, kTestPerClass = 7;  // 21 test images: batch 4 leaves a last batch of 1
constexpr int64_t kHead = 10;                   // head wider than the data, so top-5 is not trivially 100%

struct Counts {
  int64_t images = 0, c1 = 0, c5 = 0;
  double loss_sum = 0;
};

class Top1Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new vt_test::TmpDir();
    vt_test::make_cifar_subset(data(), kClasses, 1, kTestPerClass);
    std::ofstream(config()) << "name: t\nout_dir: " << tmp_->path() << "/runs\nseed: 1\nthreads: 1\n"
                            << "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 2, heads: 2,"
                               " num_classes: " << kHead << ", norm: {scheme: siamese}}\n"
                            << "data: {root: " << data() << ", val_split: test, workers: 2, crop_pct: 0.875}\n"
                            << "eval: {batch_size: 4}\n";
    // step_5: random weights in the model, other random weights as EMA.
    const TrainOptions o = options();
    VisionTransformer m(o.vit), e(o.vit);
    m.init(11);
    e.init(12);
    CheckpointData d;
    d.model = m.params().state_dict();
    d.ema = e.params().state_dict();
    d.state = {{"step", 5}};
    save_checkpoint(run(), 5, d);
    // step_6: no EMA; weight 0 and bias 10 on class 1 only: always predicts 1.
    VisionTransformer c(o.vit);
    c.init(13);
    CheckpointData d6;
    d6.model = c.params().state_dict();
    d6.model.at("head.weight").fill(0.0f);
    std::vector<float> bias(kHead, 0.0f);
    bias[1] = 10.0f;
    d6.model.at("head.bias").copy_from(Tensor::from_vector(bias, {kHead}));
    d6.state = {{"step", 6}};
    save_checkpoint(run(), 6, d6);
  }
  static void TearDownTestSuite() { delete tmp_; }

  static std::string data() { return tmp_->path() + "/data"; }
  static std::string config() { return tmp_->path() + "/t.yaml"; }
  static std::string run() { return tmp_->path() + "/runs/t"; }
  static TrainOptions options(const std::vector<std::string>& ov = {}) {
    return train_options(Config::load(config(), vtrain_schema(), ov), config());
  }

  // The reference: each test image alone through the eval transform and the
  // model; softmax cross-entropy and ranks in double.
  // active_depth < 0: all blocks.
  static Counts reference(const std::string& weights, int64_t active_depth = -1) {
    const TrainOptions o = options();
    VisionTransformer m(o.vit);
    m.params().load(load_safetensors(weights), true);
    if (active_depth >= 0) m.backbone().set_active_depth(active_depth);
    ImageFolderDataset ds(data() + "/test", deit_eval_pipeline(o));
    Counts c;
    Tensor x = Tensor::empty({1, 3, 32, 32}), logits = Tensor::empty({1, kHead});
    for (int64_t i = 0; i < ds.size(); ++i) {
      Philox rng(0, 0);
      ds.load(i, rng, x.f32());
      m.forward(x, logits, false);
      const float* l = logits.f32();
      const int y = ds.label(i);
      int arg = 0, above = 0;
      double mx = l[0];
      for (int k = 0; k < kHead; ++k) {
        if (l[k] > l[arg]) arg = k;
        above += l[k] > l[y];
        mx = std::max(mx, static_cast<double>(l[k]));
      }
      double z = 0;
      for (int k = 0; k < kHead; ++k) z += std::exp(static_cast<double>(l[k]) - mx);
      c.loss_sum += std::log(z) + mx - l[y];
      c.c1 += arg == y;
      c.c5 += above < 5;
      ++c.images;
    }
    return c;
  }

  static Top1Request request(const std::string& ckpt, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{config(), "ckpt=" + ckpt};
    args.insert(args.end(), extra.begin(), extra.end());
    return parse_top1_args(args);
  }

  static vt_test::TmpDir* tmp_;
};
vt_test::TmpDir* Top1Test::tmp_ = nullptr;

}  // namespace

TEST_F(Top1Test, ConstantPredictionMatchesClosedForm) {
  const Top1Report r = run_top1(request(run() + "/step_6"), {"configs"});
  const int64_t n = kClasses * kTestPerClass;
  ASSERT_EQ(r.result.images, n);  // the ragged last batch (21 = 5 x 4 + 1) counted
  EXPECT_EQ(r.result.correct1, kTestPerClass);  // exactly the class-1 images
  EXPECT_NEAR(r.result.top1, 100.0 / 3.0, 1e-9);
  // Only class 1 scores above any other label: every label is in the top 5.
  EXPECT_EQ(r.result.correct5, n);
  // -log softmax with logits (10 at class 1, 0 elsewhere, 10 classes).
  const double z = std::exp(10.0) + 9.0;
  const double want = (kTestPerClass * std::log(z / std::exp(10.0)) + 2 * kTestPerClass * std::log(z)) / n;
  EXPECT_NEAR(r.result.loss, want, 1e-5);
  EXPECT_EQ(r.num_classes, kHead);
}

TEST_F(Top1Test, RandomWeightsMatchPerImageReference) {
  const Counts want = reference(run() + "/step_5/model.safetensors");
  // Not a degenerate case in which a miscount could hide.
  ASSERT_GT(want.c1, 0);
  ASSERT_LT(want.c1, want.images);
  ASSERT_LT(want.c5, want.images);
  for (const char* bs : {"eval.batch_size=4", "eval.batch_size=1", "eval.batch_size=21", "eval.batch_size=64"}) {
    const Top1Report r = run_top1(request(run() + "/step_5", {bs}), {"configs"});
    EXPECT_EQ(r.result.images, want.images) << bs;
    EXPECT_EQ(r.result.correct1, want.c1) << bs;
    EXPECT_EQ(r.result.correct5, want.c5) << bs;
    EXPECT_NEAR(r.result.loss_sum, want.loss_sum, 1e-4) << bs;
    EXPECT_NEAR(r.result.top1, 100.0 * want.c1 / want.images, 1e-9) << bs;
  }
}

TEST_F(Top1Test, EmaSelectsEmaWeights) {
  const Counts want = reference(run() + "/step_5/ema.safetensors");
  const Top1Report r = run_top1(request(run() + "/step_5", {"ema=true"}), {"configs"});
  EXPECT_NE(r.weights_file.find("ema.safetensors"), std::string::npos);
  EXPECT_EQ(r.result.correct1, want.c1);
  EXPECT_EQ(r.result.correct5, want.c5);
  EXPECT_NEAR(r.result.loss_sum, want.loss_sum, 1e-4);
}

TEST_F(Top1Test, RunDirectoryMeansNewestCheckpoint) {
  const Top1Report r = run_top1(request(run()), {"configs"});
  EXPECT_NE(r.weights_file.find("step_6"), std::string::npos);
  EXPECT_EQ(r.result.correct1, kTestPerClass);
}

TEST_F(Top1Test, ShardsCoverEverySampleOnceForAnyWorld) {
  const TrainOptions o = options();
  LoadedClassifier lc = load_classifier(Config::load(config(), vtrain_schema()), config(), run() + "/step_5", false);
  auto ds = std::make_shared<ImageFolderDataset>(data() + "/test", deit_eval_pipeline(o));
  EvalOptions eo = eval_options(o);
  const EvalResult one = evaluate_classifier(*lc.model, ds, eo);
  for (int world : {2, 3, 4, 25}) {
    std::vector<EvalResult> shards;
    std::multiset<int64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      eo.rank = rank, eo.world = world;
      for (int64_t i : eval_shard_order(ds->size(), eo).indices) seen.insert(i);
      shards.push_back(evaluate_classifier(*lc.model, ds, eo));
    }
    ASSERT_EQ(seen.size(), static_cast<size_t>(ds->size())) << world;
    for (int64_t i = 0; i < ds->size(); ++i) EXPECT_EQ(seen.count(i), 1u) << "world " << world << " index " << i;
    const EvalResult m = merge_eval_results(shards);
    EXPECT_EQ(m.images, one.images) << world;
    EXPECT_EQ(m.correct1, one.correct1) << world;
    EXPECT_EQ(m.correct5, one.correct5) << world;
    EXPECT_NEAR(m.loss, one.loss, 1e-6) << world;
  }
}

// data.on_corrupt=skip: an unreadable image is left out of the figures. The
// loader puts the next readable image (with its label) in its row, which
// was counted too, so that image counted twice. A folder with bad files
// must give the counts of the same folder without them, in one process or
// sharded, and the number skipped.
TEST_F(Top1Test, UnreadableImagesAreSkippedNotCountedTwice) {
  const TrainOptions o = options();
  LoadedClassifier lc = load_classifier(Config::load(config(), vtrain_schema()), config(), run() + "/step_5", false);
  const std::string bad = tmp_->path() + "/with_bad";
  fs::copy(data() + "/test", bad, fs::copy_options::recursive);
  // A bad file inside a class, and two in a row at the very end (the
  // replacement of the first is itself unreadable; the last wraps around).
  for (const char* f : {"/airplane/0000a.jpg", "/bird/zz1.jpg", "/bird/zz2.jpg"}) std::ofstream(bad + f) << "not a jpeg";
  auto clean_ds = std::make_shared<ImageFolderDataset>(data() + "/test", deit_eval_pipeline(o));
  auto bad_ds = std::make_shared<ImageFolderDataset>(bad, deit_eval_pipeline(o));
  ASSERT_EQ(bad_ds->size(), clean_ds->size() + 3);
  EvalOptions eo = eval_options(o);
  eo.on_corrupt = OnCorrupt::Skip;
  const EvalResult clean = evaluate_classifier(*lc.model, clean_ds, eo);
  for (int world : {1, 2}) {
    std::vector<EvalResult> shards;
    for (int rank = 0; rank < world; ++rank) {
      eo.rank = rank, eo.world = world;
      shards.push_back(evaluate_classifier(*lc.model, bad_ds, eo));
    }
    const EvalResult m = merge_eval_results(shards);
    EXPECT_EQ(m.images, kClasses * kTestPerClass) << world;
    EXPECT_EQ(m.skipped, 3) << world;
    EXPECT_EQ(m.correct1, clean.correct1) << world;
    EXPECT_EQ(m.correct5, clean.correct5) << world;
    EXPECT_NEAR(m.loss, clean.loss, 1e-5) << world;
    EXPECT_NEAR(m.top1, clean.top1, 1e-9) << world;
  }
}

TEST_F(Top1Test, MaxImagesTakesEvenlySpacedSubset) {
  EvalOptions eo;
  eo.max_images = 5;
  // i * 21 / 5: one sample from every class, not the first class only.
  EXPECT_EQ(eval_shard_order(21, eo).indices, (std::vector<int64_t>{0, 4, 8, 12, 16}));
  eo.world = 2, eo.rank = 1;
  EXPECT_EQ(eval_shard_order(21, eo).indices, (std::vector<int64_t>{4, 12}));
  const Top1Report r = run_top1(request(run() + "/step_6", {"eval.max_images=5"}), {"configs"});
  EXPECT_EQ(r.result.images, 5);
  EXPECT_EQ(r.result.correct1, 2);  // samples 8 and 12 are class 1 (7..13)
}

// data.format=shards (with data.root at the packed splits) reads the same
// images with the same labels: the per-image reference over the folder.
TEST_F(Top1Test, PackedShardsGiveTheFolderFigures) {
  const std::string shards = data() + "_shards";
  for (const char* split : {"train", "test"}) {
    PackOptions po;
    po.images_dir = data() + "/" + split;
    po.out_dir = shards + "/" + split;
    po.shard_size = 4;
    po.progress = false;
    pack_shards(po);
  }
  const Counts ref = reference(run() + "/step_5/model.safetensors");
  const Top1Report r =
      run_top1(request(run() + "/step_5", {"data.format=shards", "data.root=" + shards}), {"configs"});
  EXPECT_EQ(r.result.images, ref.images);
  EXPECT_EQ(r.result.correct1, ref.c1);
  EXPECT_EQ(r.result.correct5, ref.c5);
  EXPECT_NEAR(r.result.loss_sum, ref.loss_sum, 1e-4 * ref.images);
  EXPECT_EQ(r.split_dir, shards + "/test");
}

TEST_F(Top1Test, SplitTrainAndNamedFolder) {
  const Top1Report a = run_top1(request(run() + "/step_6", {"split=train"}), {"configs"});
  EXPECT_EQ(a.result.images, kClasses);  // one train image per class
  EXPECT_EQ(a.result.correct1, 1);
  const Top1Report b = run_top1(request(run() + "/step_6", {"split=test"}), {"configs"});
  EXPECT_EQ(b.result.images, kClasses * kTestPerClass);
}

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

// prune_last=k evaluates blocks [0, depth - k) then the final merge and head,
// as a per-image forward of the model with set_active_depth(depth - k).
TEST_F(Top1Test, PruneLastDropsTheLastBlocks) {
  const int64_t depth = options().vit.backbone.depth;  // 2
  const Top1Report full = run_top1(request(run() + "/step_5"), {"configs"});
  const Top1Report zero = run_top1(request(run() + "/step_5", {"prune_last=0"}), {"configs"});
  EXPECT_EQ(zero.result.correct1, full.result.correct1);
  EXPECT_EQ(zero.result.correct5, full.result.correct5);
  EXPECT_EQ(zero.result.loss_sum, full.result.loss_sum);
  EXPECT_EQ(zero.blocks_run, depth);
  EXPECT_EQ(zero.depth, depth);
  std::vector<double> losses;
  for (int64_t k = 0; k <= depth; ++k) {
    const Counts want = reference(run() + "/step_5/model.safetensors", depth - k);
    const Top1Report r = run_top1(request(run() + "/step_5", {"prune_last=" + std::to_string(k)}), {"configs"});
    EXPECT_EQ(r.blocks_run, depth - k);
    EXPECT_EQ(r.result.images, want.images) << k;
    EXPECT_EQ(r.result.correct1, want.c1) << k;
    EXPECT_EQ(r.result.correct5, want.c5) << k;
    EXPECT_NEAR(r.result.loss_sum, want.loss_sum, 1e-4) << k;
    losses.push_back(r.result.loss_sum);
  }
  EXPECT_NE(losses.front(), losses.back());  // pruning changed the model
  const std::string over = error_of([&] { run_top1(request(run() + "/step_5", {"prune_last=3"}), {"configs"}); });
  EXPECT_NE(over.find("prune_last=3"), std::string::npos) << over;
  EXPECT_NE(over.find("[0, 2]"), std::string::npos) << over;
  for (const char* bad : {"prune_last=-1", "prune_last=x", "prune_last=", "prune_last=1.5"})
    EXPECT_NE(error_of([&] { parse_top1_args({config(), "ckpt=x", bad}); }).find("prune_last"), std::string::npos) << bad;
}

TEST_F(Top1Test, ErrorsNameTheThing) {
  auto top1 = [&](const std::string& ckpt, std::vector<std::string> extra = {}) {
    return error_of([&] { run_top1(request(ckpt, extra), {"configs"}); });
  };
  EXPECT_NE(top1(tmp_->path() + "/nope").find("/nope' does not exist"), std::string::npos);
  fs::create_directories(tmp_->path() + "/empty_ckpt");
  EXPECT_NE(top1(tmp_->path() + "/empty_ckpt").find("has no model.safetensors"), std::string::npos);
  const std::string no_ema = top1(run() + "/step_6", {"ema=true"});
  EXPECT_NE(no_ema.find("step_6' has no ema.safetensors"), std::string::npos) << no_ema;
  const std::string shape = top1(run() + "/step_5", {"model.dim=32"});
  EXPECT_NE(shape.find("does not fit the model of config"), std::string::npos) << shape;
  EXPECT_NE(shape.find("patch_embed.proj.weight: file [16, 3, 8, 8] vs model [32, 3, 8, 8]"), std::string::npos)
      << shape;
  const std::string depth = top1(run() + "/step_5", {"model.depth=1"});
  EXPECT_NE(depth.find("unexpected: blocks.1."), std::string::npos) << depth;
  // The first 4 names of a long list, and how many there are (every
  // tensor of block 1 was listed).
  EXPECT_NE(depth.find(", ... ("), std::string::npos) << depth;
  EXPECT_LT(depth.size(), 1000u) << depth;
  // Other kinds of weights say what they are (tensor names), instead of a
  // list of missing tensors and a hint about num_classes.
  Tensor w = Tensor::empty({2, 2});
  w.fill(0.0f);
  fs::create_directories(tmp_->path() + "/dit_ckpt");
  save_safetensors(tmp_->path() + "/dit_ckpt/model.safetensors", {{"x_embedder.proj.weight", w}, {"pos_embed", w}});
  const std::string dit = top1(tmp_->path() + "/dit_ckpt");
  EXPECT_NE(dit.find("dit_ckpt/model.safetensors' holds a dittrain DiT model"), std::string::npos) << dit;
  save_safetensors(tmp_->path() + "/optimizer.safetensors", {{"exp_avg.head.weight", w}, {"exp_avg_sq.head.weight", w}});
  const std::string opt = top1(tmp_->path() + "/optimizer.safetensors");
  EXPECT_NE(opt.find("holds optimizer state"), std::string::npos) << opt;
  // A checkpoint of a run with its own config.yaml points to it.
  fs::create_directories(tmp_->path() + "/runs2/u");
  fs::copy(run() + "/step_5", tmp_->path() + "/runs2/u/step_5", fs::copy_options::recursive);
  std::ofstream(tmp_->path() + "/runs2/u/config.yaml") << "model: {dim: 16}\n";
  const std::string other = top1(tmp_->path() + "/runs2/u/step_5", {"model.dim=32"});
  EXPECT_NE(other.find("; it was trained with " + tmp_->path() + "/runs2/u/config.yaml: give that file as CONFIG"),
            std::string::npos) << other;
  EXPECT_NE(top1(run() + "/step_5", {"split=nope"}).find("split 'nope': folder"), std::string::npos);
  EXPECT_THROW(run_top1(request(run() + "/step_5", {"model.nope=1"}), {"configs"}), ConfigError);
  EXPECT_NE(error_of([&] { run_top1(request(run() + "/step_5", {"model.nope=1"}), {"configs"}); }).find("model.nope"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_top1_args({config()}); }).find("ckpt=DIR"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_top1_args({config(), "ckpt=x", "oops"}); }).find("'oops' is not key=value"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_top1_args({config(), "ckpt=x", "ema=maybe"}); }).find("ema must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of([&] { run_top1(parse_top1_args({"nope.yaml", "ckpt=x"}), {"configs"}); }).find("'nope.yaml' not found"),
            std::string::npos);
}

TEST_F(Top1Test, ForeignClassFoldersAreRefused) {
  // A split whose class folders differ from the training split's.
  const std::string other = data() + "/other";
  fs::create_directories(other + "/zebra");
  fs::copy_file(data() + "/test/airplane/0000.jpg", other + "/zebra/0000.jpg");
  const std::string e = error_of([&] { run_top1(request(run() + "/step_5", {"split=other"}), {"configs"}); });
  EXPECT_NE(e.find("other class folders than the training split"), std::string::npos) << e;
  fs::remove_all(other);
}
