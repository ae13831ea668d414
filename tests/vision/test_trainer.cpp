// Trainer end to end on a tiny model and a few real CIFAR-10 images:
// stop/resume gives bitwise the same losses and weights as an uninterrupted
// run; non-finite loss stops with the step named and the last checkpoint
// intact; bad input fails before a run directory exists.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>
#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include "core/allocator.h"
#include "core/safetensors.h"
#include "core/checkpoint_dir.h"
#include "core/log.h"
#include "core/run_control.h"
#include "core/stop_request.h"
#include "data_pipeline/shard_pack.h"
#include "vision/trainer.h"
#include "vision_test_util.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

// 4 classes x 8 train images, batch 8: 4 steps per epoch. One compute
// thread keeps the tests fast (the resume test also passes with 2 threads,
// in ~6 s on a loaded 2-core machine). The whole DeiT
// recipe is on except repeated augmentation (RASampler keeps n // 256 * 256
// samples, 0 here).
std::string tiny_yaml(const std::string& root, const std::string& out) {
  return "name: t\nout_dir: " + out + "\nseed: 5\nthreads: 1\n" +
         "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 2, heads: 2, drop_path: 0.2}\n"
         "data: {root: " + root + ", val_split: test, workers: 2, repeated_aug: 1}\n"
         "train: {epochs: 3, batch_size: 8, lr: 1.0e-3, warmup_epochs: 1, clip_grad: 5.0, ema_decay: 0.9}\n"
         "eval: {batch_size: 5}\n"
         "ckpt: {every_steps: 1, keep_last: 50}\n";
}

Config parse(const std::string& yaml, const std::vector<std::string>& ov = {}) {
  return Config::parse(yaml, vtrain_schema(), ov, "test.yaml", ".");
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::make_cifar_subset(data(), 4, 8, 4); }
  std::string data() const { return tmp_.path() + "/data"; }
  std::string out(const std::string& n) const { return tmp_.path() + "/" + n; }
  vt_test::TmpDir tmp_;
};

std::vector<double> run(const Config& c, TrainSummary* s = nullptr) {
  Trainer t(c, "test.yaml");
  TrainSummary r = t.run();
  if (s) *s = r;
  return t.losses();
}

TEST_F(TrainerTest, ResumeReproducesUninterruptedRunBitwise) {
  const std::string yaml_a = tiny_yaml(data(), out("a")), yaml_b = tiny_yaml(data(), out("b"));
  TrainSummary full_sum;
  const std::vector<double> full = run(parse(yaml_a), &full_sum);
  ASSERT_EQ(full.size(), 12u);
  EXPECT_EQ(full_sum.steps, 12);
  // Stopped mid-epoch (step 5 = epoch 1, batch 1), then at an epoch boundary
  // (step 8), then run to the end; each run resumes from the newest checkpoint.
  std::vector<double> pieced = run(parse(yaml_b, {"train.max_steps=5"}));
  ASSERT_EQ(pieced.size(), 5u);
  for (const auto& l : run(parse(yaml_b, {"train.max_steps=8"}))) pieced.push_back(l);
  ASSERT_EQ(pieced.size(), 8u);
  for (const auto& l : run(parse(yaml_b))) pieced.push_back(l);
  ASSERT_EQ(pieced.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(pieced[i], full[i]) << "loss of step " << i + 1;
  // Model, EMA and moments at the end, bitwise.
  for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
    auto a = load_safetensors(out("a") + "/t/step_12/" + f), b = load_safetensors(out("b") + "/t/step_12/" + f);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, t] : a)
      ASSERT_EQ(0, std::memcmp(t.f32(), b.at(name).f32(), t.numel() * 4)) << f << " " << name;
  }
  // Training did something: the loss moved and the weights left their init.
  EXPECT_NE(full.front(), full.back());
}

// train.activation_checkpointing=blocks recomputes each block in the
// backward pass (drop-path on: the recomputed masks must be the forward's)
// and changes nothing else: the losses and the checkpoints of steps 3 and 5
// (model, EMA, optimizer moments, state.json but for the run's own digest) are
// bitwise those of none, and a run checkpointed under blocks resumes under
// none (step 5 crosses an epoch boundary and an evaluation at batch 5).
TEST_F(TrainerTest, ActivationCheckpointingGivesTheSameCheckpoints) {
  const std::vector<double> none = run(parse(tiny_yaml(data(), out("an")), {"train.max_steps=5"}));
  std::vector<double> blocks =
      run(parse(tiny_yaml(data(), out("ab")), {"train.max_steps=3", "train.activation_checkpointing=blocks"}));
  for (double l : run(parse(tiny_yaml(data(), out("ab")), {"train.max_steps=5"}))) blocks.push_back(l);
  ASSERT_EQ(none.size(), 5u);
  EXPECT_EQ(blocks, none);
  for (const char* step : {"step_3", "step_5"}) {
    const std::string a = out("an") + "/t/" + step + "/", b = out("ab") + "/t/" + step + "/";
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      auto ta = load_safetensors(a + f), tb = load_safetensors(b + f);
      ASSERT_EQ(ta.size(), tb.size());
      for (const auto& [name, t] : ta)
        ASSERT_EQ(0, std::memcmp(t.f32(), tb.at(name).f32(), t.numel() * 4)) << step << " " << f << " " << name;
    }
    // The run directories differ, so do their digests; the rest of state.json may not.
    nlohmann::json sa = load_checkpoint(a).state, sb = load_checkpoint(b).state;
    sa.erase("config_digest"), sb.erase("config_digest");
    EXPECT_EQ(sa, sb) << step;
  }
  // The key is left out of the digest: step 3 (blocks) and step 5 (none) of one run record the same.
  EXPECT_EQ(load_checkpoint(out("ab") + "/t/step_3").state.at("config_digest"),
            load_checkpoint(out("ab") + "/t/step_5").state.at("config_digest"));
}

// data.format: shards on the splits `vtrain pack` wrote (bytes stored as
// they are) trains bitwise as the folder run: the same losses and the same
// model, EMA and optimizer files at every checkpoint, with the whole DeiT
// train pipeline (RandomResizedCrop at the DCT scale it picks, RandAugment,
// RandomErasing, Mixup/CutMix) and an evaluation inside.
TEST_F(TrainerTest, PackedShardsTrainBitwiseAsTheFolder) {
  for (const char* split : {"train", "test"}) {
    PackOptions po;
    po.images_dir = data() + "/" + split;
    po.out_dir = out("shards") + "/" + split;
    po.shard_size = 7;  // shards end mid-batch and mid-class
    po.progress = false;
    ASSERT_EQ(pack_shards(po).images, std::string(split) == "train" ? 32 : 16);
  }
  const std::vector<std::string> ov{"train.max_steps=6", "eval.every_epochs=1", "log.tensorboard=false"};
  const std::vector<double> folder = run(parse(tiny_yaml(data(), out("f")), ov));
  std::vector<std::string> sov = ov;
  sov.push_back("data.format=shards");
  const std::vector<double> shards = run(parse(tiny_yaml(out("shards"), out("s")), sov));
  ASSERT_EQ(folder.size(), 6u);
  EXPECT_EQ(shards, folder);
  for (const char* step : {"step_1", "step_4", "step_6"})
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      const std::string a = out("f") + "/t/" + step + "/" + f, b = out("s") + "/t/" + step + "/" + f;
      std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
      const std::string ba((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
      const std::string bb((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
      ASSERT_FALSE(ba.empty()) << a;
      EXPECT_TRUE(ba == bb) << step << " " << f;
    }
  // The folder layout given data.format=shards (and the reverse) names the setting.
  std::string e = vt_test::error_of([&] { run(parse(tiny_yaml(data(), out("x")), {"data.format=shards"})); });
  EXPECT_NE(e.find("manifest.json"), std::string::npos) << e;
  e = vt_test::error_of([&] { run(parse(tiny_yaml(out("shards"), out("y")))); });
  EXPECT_NE(e.find("data.format=shards"), std::string::npos) << e;
}

// data.augment_on=device on a CPU run: the loader hands over uint8 crops and
// their plans, the step applies them with the batched CPU twins before
// Mixup/CutMix. Packed shards read that way train bitwise as the folder
// read with host augmentation (losses; model, EMA and optimizer files at
// every checkpoint), also when the device run is stopped at step 2 and
// resumed (mid-epoch: the batches after the stop are the same), and the
// first log line names where augmentation runs.
TEST_F(TrainerTest, AugmentOnDeviceTrainsBitwiseAsTheHost) {
  for (const char* split : {"train", "test"}) {
    PackOptions po;
    po.images_dir = data() + "/" + split;
    po.out_dir = out("shards") + "/" + split;
    po.progress = false;
    ASSERT_GT(pack_shards(po).images, 0);
  }
  const std::vector<std::string> ov{"train.max_steps=6", "eval.every_epochs=1", "log.tensorboard=false",
                                    "data.random_erasing=0.5", "device=cpu"};
  const std::vector<double> host = run(parse(tiny_yaml(data(), out("h")), ov));
  std::vector<std::string> dov = ov;
  dov.push_back("data.format=shards");
  dov.push_back("data.augment_on=device");
  std::vector<std::string> first = dov;
  first[0] = "train.max_steps=2";
  std::vector<double> device = run(parse(tiny_yaml(out("shards"), out("d")), first));
  for (double l : run(parse(tiny_yaml(out("shards"), out("d")), dov))) device.push_back(l);
  ASSERT_EQ(host.size(), 6u);
  EXPECT_EQ(device, host);
  for (const char* step : {"step_1", "step_2", "step_4", "step_6"})
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      const std::string a = out("h") + "/t/" + step + "/" + f, b = out("d") + "/t/" + step + "/" + f;
      std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
      const std::string ba((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
      const std::string bb((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
      ASSERT_FALSE(ba.empty()) << a;
      EXPECT_TRUE(ba == bb) << step << " " << f;
    }
  std::ifstream lh(out("h") + "/t/log.txt"), ld(out("d") + "/t/log.txt");
  const std::string th((std::istreambuf_iterator<char>(lh)), std::istreambuf_iterator<char>());
  const std::string td((std::istreambuf_iterator<char>(ld)), std::istreambuf_iterator<char>());
  EXPECT_NE(th.find("augmentation on the host"), std::string::npos) << th;
  EXPECT_NE(td.find("augmentation on the device path (uint8 crops + plans, its CPU twins on cpu)"), std::string::npos) << td;
  EXPECT_EQ(td.find("augmentation on the host"), std::string::npos) << td;
}

TEST_F(TrainerTest, CheckpointLayoutAndRetention) {
  TrainSummary s;
  run(parse(tiny_yaml(data(), out("c")), {"ckpt.every_steps=0", "ckpt.keep_last=1", "eval.every_epochs=1"}), &s);
  // Epoch checkpoints at steps 4, 8, 12; the last kept plus the best.
  auto cks = list_checkpoints(out("c") + "/t");
  ASSERT_FALSE(cks.empty());
  EXPECT_EQ(cks.back().first, 12);
  EXPECT_LE(cks.size(), 2u);
  bool has_best = false;
  for (auto& [step, path] : cks) has_best |= step == s.best_step;
  EXPECT_TRUE(has_best) << "best step " << s.best_step;
  CheckpointData d = load_checkpoint(cks.back().second);
  EXPECT_EQ(d.state.at("step").get<int64_t>(), 12);
  EXPECT_EQ(d.state.at("epoch").get<int64_t>(), 3);
  EXPECT_EQ(d.state.at("batch_in_epoch").get<int64_t>(), 0);
  EXPECT_EQ(d.state.at("rng").at("seed").get<uint64_t>(), 5u);
  EXPECT_TRUE(d.model.count("patch_embed.proj.weight"));
  EXPECT_TRUE(d.ema.count("blocks.1.mlp.fc2.weight"));
  EXPECT_TRUE(d.optimizer.count("exp_avg_sq.pos_embed"));
  EXPECT_TRUE(fs::exists(out("c") + "/t/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(out("c") + "/t/config.yaml"));
  EXPECT_TRUE(fs::exists(out("c") + "/t/log.txt"));
  EXPECT_FALSE(fs::is_empty(out("c") + "/t/tb"));
  EXPECT_GE(s.final_eval.images, 16);
  EXPECT_GE(s.final_eval.top5, s.final_eval.top1);
}

// data.max_train_images = 16 of the 32 training images: an epoch is 16 / 8 = 2
// steps, so 3 epochs end at step 6 (the whole split: 12, as above).
TEST_F(TrainerTest, MaxTrainImagesShortensTheEpoch) {
  run(parse(tiny_yaml(data(), out("m")), {"ckpt.every_steps=0", "eval.every_epochs=0", "data.max_train_images=16"}));
  auto cks = list_checkpoints(out("m") + "/t");
  ASSERT_FALSE(cks.empty());
  CheckpointData d = load_checkpoint(cks.back().second);
  EXPECT_EQ(d.state.at("step").get<int64_t>(), 6);
  EXPECT_EQ(d.state.at("epoch").get<int64_t>(), 3);
}

TEST_F(TrainerTest, EverySchemeTrains) {
  for (const char* scheme : {"pre", "post", "siamese"}) {
    TrainSummary s;
    auto losses = run(parse(tiny_yaml(data(), out(std::string("s_") + scheme)),
                            {std::string("model.norm.scheme=") + scheme, "train.max_steps=2", "log.tensorboard=false"}),
                      &s);
    ASSERT_EQ(losses.size(), 2u) << scheme;
    for (double l : losses) EXPECT_TRUE(std::isfinite(l)) << scheme;
    EXPECT_EQ(s.steps, 2);
    // Mid-epoch stop: final evaluation and a checkpoint of step 2.
    EXPECT_EQ(list_checkpoints(out(std::string("s_") + scheme) + "/t").back().first, 2);
    EXPECT_EQ(s.final_eval.images, 16);
  }
}

// The metrics.jsonl lines with split == `split`, in order.
std::vector<nlohmann::json> metrics_lines(const std::string& run_dir, const std::string& split) {
  std::ifstream f(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> r;
  for (std::string line; std::getline(f, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("split", "") == split) r.push_back(std::move(j));
  }
  return r;
}

// A run killed after step 5 whose newest checkpoint is step_4 is resumed:
// step 5 is computed again, and its records (train line, final evaluation)
// appear once in metrics.jsonl -- they were appended a second time.
TEST_F(TrainerTest, AResumedRunRecordsEachStepOnce) {
  const std::vector<std::string> ov{"train.max_steps=5", "ckpt.every_steps=0", "log.every_steps=1"};
  run(parse(tiny_yaml(data(), out("once")), ov));
  const std::string dir = out("once") + "/t";
  ASSERT_TRUE(fs::is_directory(dir + "/step_5"));
  ASSERT_TRUE(fs::is_directory(dir + "/step_4"));
  const auto before = metrics_lines(dir, "train");
  fs::remove_all(dir + "/step_5");  // as if killed before the last save
  run(parse(tiny_yaml(data(), out("once")), ov));
  std::vector<int64_t> train_steps;
  for (const auto& j : metrics_lines(dir, "train")) train_steps.push_back(j.at("step").get<int64_t>());
  EXPECT_EQ(train_steps, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(before.size(), 5u);
  std::set<std::pair<std::string, int64_t>> seen;
  std::ifstream f(dir + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(seen.emplace(j.value("split", ""), j.at("step").get<int64_t>()).second) << "twice: " << line;
  }
  EXPECT_FALSE(fs::exists(dir + "/config.4.yaml"));  // the same config: nothing kept aside
}

// Keys of `line` starting with `prefix`.
std::vector<std::string> keys_with(const nlohmann::json& line, const std::string& prefix) {
  std::vector<std::string> r;
  for (auto it = line.begin(); it != line.end(); ++it)
    if (it.key().rfind(prefix, 0) == 0) r.push_back(it.key());
  return r;
}

// A train metrics line every log.every_steps and at the last step of the
// run (as timm logs an epoch's last batch), with that step's loss.
TEST_F(TrainerTest, TrainLinesEveryIntervalAndAtTheEnd) {
  const auto losses =
      run(parse(tiny_yaml(data(), out("le")), {"train.max_steps=5", "log.every_steps=2", "eval.every_epochs=0"}));
  ASSERT_EQ(losses.size(), 5u);
  const auto lines = metrics_lines(out("le") + "/t", "train");
  std::vector<int64_t> steps;
  for (const auto& l : lines)
    if (l.contains("loss")) steps.push_back(l.at("step").get<int64_t>());
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 4, 5}));
  ASSERT_FALSE(lines.empty());
  EXPECT_DOUBLE_EQ(lines.back().at("loss").get<double>(), losses.back());
}

// The progress line counts to where training really ends: with 4 steps per
// epoch and train.max_steps=6, epoch 2 trains 2 steps, so its line ends at
// "2/2 (100.0%)" (it read "2/4 (50.0%)", with an ETA to the epoch's end).
TEST_F(TrainerTest, ProgressLineEndsAtMaxSteps) {
  testing::internal::CaptureStderr();
  run(parse(tiny_yaml(data(), out("pm")), {"train.max_steps=6", "eval.every_epochs=0", "ckpt.every_steps=0"}));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("epoch 1/3 4/4 (100.0%)"), std::string::npos) << err;
  EXPECT_NE(err.find("epoch 2/3 2/2 (100.0%)"), std::string::npos) << err;
  EXPECT_EQ(err.find("2/4"), std::string::npos) << err;
}

// log.stream_rms: at step 1 the Post-Norm model still has its init norms
// (weight 1, bias 0), so each block's x stream is a LayerNorm output whose
// RMS is sqrt(var / (var + eps)) = 1 to ~1e-6: a closed form the logged
// values must match. SiameseNorm carries both streams in every block.
TEST_F(TrainerTest, StreamRmsIsLoggedPerBlockAndStream) {
  const std::vector<std::string> ov = {"train.max_steps=2", "log.every_steps=1", "log.stream_rms=true",
                                       "model.drop_path=0", "log.tensorboard=true"};
  std::vector<std::string> post = ov;
  post.push_back("model.norm.scheme=post");
  run(parse(tiny_yaml(data(), out("rms_post")), post));
  const auto lines = metrics_lines(out("rms_post") + "/t", "train");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(keys_with(lines[0], "stream_rms/y/").empty());
  ASSERT_EQ(keys_with(lines[0], "stream_rms/x/").size(), 2u);  // depth 2
  for (int l = 0; l < 2; ++l) EXPECT_NEAR(lines[0].at("stream_rms/x/" + std::to_string(l)).get<double>(), 1.0, 1e-4) << l;

  std::vector<std::string> siam = ov;
  siam.push_back("model.norm.scheme=siamese");
  run(parse(tiny_yaml(data(), out("rms_siam")), siam));
  for (const auto& line : metrics_lines(out("rms_siam") + "/t", "train")) {
    for (const char* stream : {"x", "y"}) {
      const auto keys = keys_with(line, std::string("stream_rms/") + stream + "/");
      ASSERT_EQ(keys.size(), 2u) << stream;
      for (const auto& k : keys) {
        const double v = line.at(k).get<double>();
        EXPECT_TRUE(std::isfinite(v) && v > 0) << k << " = " << v;
      }
    }
  }
  // Off by default.
  run(parse(tiny_yaml(data(), out("rms_off")), {"train.max_steps=1", "log.every_steps=1", "log.tensorboard=false"}));
  EXPECT_TRUE(keys_with(metrics_lines(out("rms_off") + "/t", "train").at(0), "stream_rms/").empty());
}

// log.norm_scales: each evaluation line carries mean |weight| of every affine
// LayerNorm of the weights it evaluated, recomputed here from the checkpoint.
TEST_F(TrainerTest, NormScalesAreLoggedAtEachEvaluation) {
  run(parse(tiny_yaml(data(), out("ns")), {"train.max_steps=2", "log.norm_scales=true", "log.tensorboard=false"}));
  const CheckpointData d = load_checkpoint(out("ns") + "/t/step_2");
  for (const auto& [split, weights] : {std::make_pair("val", &d.model), std::make_pair("val_ema", &d.ema)}) {
    const auto lines = metrics_lines(out("ns") + "/t", split);
    ASSERT_FALSE(lines.empty()) << split;
    const nlohmann::json& line = lines.back();
    int expected = 0;
    for (const auto& [name, t] : *weights) {
      const bool norm_weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0 &&
                               name.find("norm") != std::string::npos;
      if (!norm_weight) continue;
      ++expected;
      double a = 0;
      for (int64_t i = 0; i < t.numel(); ++i) a += std::fabs(static_cast<double>(t.f32()[i]));
      const std::string key = "norm_scale/" + name.substr(0, name.size() - 7);
      ASSERT_TRUE(line.contains(key)) << split << " " << key;
      EXPECT_NEAR(line.at(key).get<double>(), a / static_cast<double>(t.numel()), 1e-6) << split << " " << key;
    }
    EXPECT_GT(expected, 0);
    EXPECT_EQ(keys_with(line, "norm_scale/").size(), static_cast<size_t>(expected)) << split;
  }
}

TEST_F(TrainerTest, NonFiniteLossNamesStepAndKeepsCheckpoint) {
  // An absurd lr blows the weights up after the first update.
  Config c = parse(tiny_yaml(data(), out("n")), {"train.lr=1e30", "train.warmup_epochs=0", "train.clip_grad=~"});
  Trainer t(c, "test.yaml");
  try {
    t.run();
    FAIL() << "no error";
  } catch (const NonFiniteLoss& e) {
    EXPECT_NE(std::string(e.what()).find("at step 2"), std::string::npos) << e.what();
  }
  auto cks = list_checkpoints(out("n") + "/t");
  ASSERT_EQ(cks.size(), 1u);
  EXPECT_EQ(cks[0].first, 1);
  CheckpointData d = load_checkpoint(cks[0].second);  // complete and readable
  EXPECT_EQ(d.state.at("step").get<int64_t>(), 1);
}

TEST_F(TrainerTest, MaxNonFiniteSkipsThatManyStepsInARowThenStops) {
  Config c = parse(tiny_yaml(data(), out("k")),
                   {"train.lr=1e30", "train.warmup_epochs=0", "train.clip_grad=~", "train.max_nonfinite=2"});
  Trainer t(c, "test.yaml");
  try {
    t.run();
    FAIL() << "no error";
  } catch (const NonFiniteLoss& e) {
    // Step 1 updates; steps 2 and 3 are skipped; the third in a row stops.
    EXPECT_NE(std::string(e.what()).find("at step 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("last good checkpoint: " + out("k") + "/t/step_3"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.losses().size(), 3u);
  // Every non-finite step is in metrics.jsonl, the stopping one included.
  std::ifstream m(out("k") + "/t/metrics.jsonl");
  int nonfinite = 0;
  for (std::string line; std::getline(m, line);) nonfinite += line.find("\"nonfinite\"") != std::string::npos;
  EXPECT_EQ(nonfinite, 3);
  const CheckpointData d = load_checkpoint(out("k") + "/t/step_3");
  EXPECT_EQ(d.state.at("nonfinite_skipped").get<int64_t>(), 2);
  EXPECT_EQ(d.state.at("optimizer").at("step").get<int64_t>(), 1);  // only step 1 updated
}

TEST_F(TrainerTest, SavedConfigIsReusableFromAnywhere) {
  // data.root relative to the parent of the config file's directory (here
  // the temporary directory, which holds data/).
  fs::create_directories(tmp_.path() + "/cfgs");
  const std::string cfg_path = tmp_.path() + "/cfgs/tiny.yaml";
  std::ofstream(cfg_path) << tiny_yaml("data", out("r"));
  const std::vector<std::string> ov = {"train.max_steps=1", "log.tensorboard=false", "eval.max_images=4"};
  Trainer(Config::load(cfg_path, vtrain_schema(), ov), cfg_path).run();

  const std::string want_root = fs::absolute(fs::path(tmp_.path()) / "data").lexically_normal().string();
  const std::string saved = out("r") + "/t/config.yaml";
  vt_test::ChdirGuard cd("/");  // another working directory
  const Config c = Config::load(saved, vtrain_schema());
  EXPECT_EQ(c.get<std::string>("data.root"), want_root);
  EXPECT_TRUE(fs::path(c.get<std::string>("out_dir")).is_absolute()) << c.get<std::string>("out_dir");
  const TrainOptions o = train_options(c, saved);
  EXPECT_EQ(o.data_root, want_root);
  EXPECT_TRUE(fs::equivalent(o.out_dir + "/" + o.name, out("r") + "/t"));
  // Checkpoints hold the saved config's digest: rerunning it is the same run.
  EXPECT_EQ(load_checkpoint(out("r") + "/t/step_1").state.at("config_digest").get<std::string>(), resume_digest(c));
  // vtrain on the saved config continues the run in place.
  Trainer again(Config::load(saved, vtrain_schema(), {"train.max_steps=2"}), saved);
  EXPECT_EQ(again.options().data_root, want_root);
  EXPECT_EQ(again.run().steps, 2);
  EXPECT_EQ(again.losses().size(), 1u);  // resumed after step 1
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_F(TrainerTest, ValSplitWithOtherClassFoldersIsRefused) {
  // Same number of classes, one folder renamed: labels (folder positions)
  // would silently mean other classes.
  fs::rename(data() + "/test/cat", data() + "/test/zcat");
  const std::string m = error_of([&] { Trainer t(parse(tiny_yaml(data(), out("cls"))), "test.yaml"); });
  EXPECT_NE(m.find("other class folders"), std::string::npos) << m;
  EXPECT_NE(m.find("zcat"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(out("cls") + "/t"));
}

TEST_F(TrainerTest, RerunOfAFinishedRunLeavesItsCheckpointAlone) {
  const std::string o = out("rerun");
  const Config c = parse(tiny_yaml(data(), o), {"train.max_steps=2", "ckpt.every_steps=0", "eval.max_images=4"});
  TrainSummary first;
  run(c, &first);
  const std::string state = first.last_checkpoint + "/state.json";
  std::ifstream a(state);
  const std::string before((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  const auto mtime = fs::last_write_time(state);
  // Same run, another learning rate: nothing to train, only re-evaluated.
  TrainSummary again;
  const std::vector<double> losses = run(parse(tiny_yaml(data(), o), {"train.max_steps=2", "ckpt.every_steps=0",
                                                                      "eval.max_images=4", "train.lr=5e-4"}),
                                         &again);
  EXPECT_TRUE(losses.empty());
  EXPECT_EQ(again.steps, 2);
  std::ifstream b(state);
  const std::string after((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
  EXPECT_EQ(fs::last_write_time(state), mtime);
}

// A stop signal that arrives while the final evaluation runs is obeyed as
// one during training: logged, a checkpoint written first, StopRequested
// (exit status 3), nothing of the unfinished evaluation recorded; resuming
// only evaluates. SIGUSR1 is pending before the run: a run of one step
// (train.max_steps=1) checks for stops only after steps before its last, so
// the first place that can see it is the final evaluation (it was ignored:
// the run finished and nothing was logged).
TEST_F(TrainerTest, AStopSignalDuringTheFinalEvaluationCheckpointsAndStops) {
  install_stop_signals({SIGUSR1});
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  for (int i = 0; i < 500 && local_stop_signal() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(local_stop_signal(), SIGUSR1);
  const std::string o = out("stop_eval");
  const std::vector<std::string> ov{"train.max_steps=1", "ckpt.every_steps=0", "eval.max_images=8",
                                    "run.stop_signals=[SIGUSR1]"};
  int signo = 0;
  int64_t step = -1;
  try {
    run(parse(tiny_yaml(data(), o), ov));
  } catch (const StopRequested& e) {
    signo = e.signo(), step = e.step();
  }
  EXPECT_EQ(signo, SIGUSR1);
  EXPECT_EQ(step, 1);
  const std::string dir = o + "/t";
  EXPECT_TRUE(fs::is_regular_file(dir + "/step_1/state.json"));
  EXPECT_TRUE(metrics_lines(dir, "val").empty());
  const std::string log = vt_test::read_text(dir + "/log.txt");
  EXPECT_NE(log.find("SIGUSR1 received during the final evaluation (val, step 1)"), std::string::npos) << log;
  // Resumed without a signal: no step trained, the evaluation recorded once.
  clear_stop_signal();
  TrainSummary s;
  EXPECT_TRUE(run(parse(tiny_yaml(data(), o), ov), &s).empty());
  EXPECT_EQ(s.steps, 1);
  const auto val = metrics_lines(dir, "val");
  ASSERT_EQ(val.size(), 1u);
  EXPECT_EQ(val[0].at("step").get<int64_t>(), 1);
  EXPECT_EQ(s.final_eval.images, 8);
}

// A finished run started again trains nothing and evaluates its last step
// again; metrics.jsonl keeps the one record of each evaluation of that
// step (the rerun appended a second val and val_ema line at step 2).
TEST_F(TrainerTest, RerunOfAFinishedRunAppendsNoSecondFinalRecord) {
  const std::string o = out("rerun_records");
  const std::vector<std::string> ov{"train.max_steps=2", "ckpt.every_steps=0", "eval.max_images=4", "train.ema=true"};
  run(parse(tiny_yaml(data(), o), ov));
  const std::string dir = o + "/t";
  const std::string before = vt_test::read_text(dir + "/metrics.jsonl");
  ASSERT_EQ(metrics_lines(dir, "val").size(), 1u);
  ASSERT_EQ(metrics_lines(dir, "val_ema").size(), 1u);
  TrainSummary again;
  EXPECT_TRUE(run(parse(tiny_yaml(data(), o), ov), &again).empty());
  EXPECT_EQ(again.final_eval.images, 4);  // evaluated (and reported) all the same
  EXPECT_EQ(vt_test::read_text(dir + "/metrics.jsonl"), before);
  const std::string log = vt_test::read_text(dir + "/log.txt");
  EXPECT_NE(log.find("metrics.jsonl holds the 'val' record of step 2 already"), std::string::npos) << log;
}

// A stop that arrives in the final evaluation's EMA pass: the model's own
// weights are back in the model before the stop checkpoint is written (the
// EMA pass swaps the EMA in), the val record stays, val_ema is not
// recorded. The signal is sent when the val line is logged (between the
// two passes) and waited for, so the EMA pass is the one that sees it.
TEST_F(TrainerTest, AStopDuringTheFinalEmaEvaluationCheckpointsTheTrainedWeights) {
  install_stop_signals({SIGUSR1});
  struct SignalAtValLine : spdlog::sinks::base_sink<std::mutex> {
    void sink_it_(const spdlog::details::log_msg& m) override {
      const std::string text(m.payload.data(), m.payload.size());
      if (text.rfind("eval val epoch", 0) != 0 || local_stop_signal() != 0) return;
      kill(getpid(), SIGUSR1);
      for (int i = 0; i < 500 && local_stop_signal() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    void flush_() override {}
  };
  auto sink = std::make_shared<SignalAtValLine>();
  log().sinks().push_back(sink);
  const std::string o = out("stop_ema");
  const std::vector<std::string> ov{"train.max_steps=2", "ckpt.every_steps=0", "train.ema=true", "eval.batch_size=2",
                                    "run.stop_signals=[SIGUSR1]"};
  int signo = 0;
  try {
    run(parse(tiny_yaml(data(), o), ov));
  } catch (const StopRequested& e) {
    signo = e.signo();
  }
  log().sinks().pop_back();
  ASSERT_EQ(signo, SIGUSR1);
  const std::string dir = o + "/t";
  EXPECT_EQ(metrics_lines(dir, "val").size(), 1u);
  EXPECT_TRUE(metrics_lines(dir, "val_ema").empty());
  EXPECT_NE(vt_test::read_text(dir + "/log.txt").find("SIGUSR1 received during the final evaluation (val_ema, step 2)"),
            std::string::npos);
  // The same 2 steps without a stop: the checkpoint's model and EMA are those bytes.
  clear_stop_signal();
  TrainSummary ref;
  run(parse(tiny_yaml(data(), out("stop_ema_ref")), {"train.max_steps=2", "ckpt.every_steps=0", "train.ema=true"}), &ref);
  const CheckpointData stopped = load_checkpoint(dir + "/step_2"), whole = load_checkpoint(ref.last_checkpoint);
  ASSERT_EQ(stopped.model.size(), whole.model.size());
  for (const auto& [name, t] : whole.model) {
    const Tensor& u = stopped.model.at(name);
    ASSERT_EQ(u.nbytes(), t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(u.raw(), t.raw(), t.nbytes()), 0) << name << " is not the trained weight";
  }
}

TEST_F(TrainerTest, BadInputFailsBeforeAnyOutput) {
  const std::string o = out("bad");
  auto make = [&](const std::string& yaml, const std::vector<std::string>& ov) {
    return error_of([&] { Trainer t(parse(yaml, ov), "test.yaml"); });
  };
  const std::string yaml = tiny_yaml(data(), o);
  std::string m = make(yaml, {"data.root=" + tmp_.path() + "/nowhere"});
  EXPECT_NE(m.find("data.root"), std::string::npos) << m;
  EXPECT_NE(m.find("nowhere"), std::string::npos) << m;
  fs::create_directories(data() + "/empty/cls");
  m = make(yaml, {"data.val_split=empty"});
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
  m = make(yaml, {"data.val_split=missing_split"});
  EXPECT_NE(m.find("missing_split"), std::string::npos) << m;
  m = error_of([&] { parse(yaml, {"train.bach_size=8"}); });
  EXPECT_NE(m.find("train.bach_size"), std::string::npos) << m;
  EXPECT_NE(m.find("train.batch_size"), std::string::npos) << m;  // the suggestion
  m = error_of([&] { parse(yaml, {"train.epochs=three"}); });
  EXPECT_NE(m.find("train.epochs"), std::string::npos) << m;
  m = make(yaml, {"train.batch_size=7"});
  EXPECT_NE(m.find("train.batch_size"), std::string::npos) << m;
  EXPECT_NE(m.find("even"), std::string::npos) << m;
  EXPECT_EQ(make(yaml, {"train.batch_size=7", "data.mixup_prob=0"}), "");  // odd is fine without mixing
  if (!cuda_available()) {  // device=cuda without a GPU: the key and why, never a silent CPU run
    m = make(yaml, {"device=cuda"});
    EXPECT_EQ(m.rfind("device (command line)", 0), 0u) << m;
    // A CUDA build without a GPU, or a build without CUDA (train/device_choice.h).
    EXPECT_TRUE(m.find("no CUDA device is visible") != std::string::npos ||
                m.find("this build has no CUDA support") != std::string::npos)
        << m;
    EXPECT_THROW(Trainer(parse(yaml, {"device=cuda"}), "test.yaml"), ConfigError);
    m = make(yaml, {"precision=bf16"});
    EXPECT_EQ(m.rfind("precision (command line)", 0), 0u) << m;
    EXPECT_NE(m.find("fp32 only"), std::string::npos) << m;
  }
  // 32 train images: RASampler keeps 32 // 256 * 256 = 0 of them.
  m = make(yaml, {"data.repeated_aug=3"});
  EXPECT_NE(m.find("data.repeated_aug"), std::string::npos) << m;
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
  EXPECT_THROW(Trainer(parse(yaml, {"data.repeated_aug=3"}), "test.yaml"), ConfigError);
  // An unreadable checkpoint: a truncated model file.
  const std::string ck = tmp_.path() + "/broken/step_3";
  fs::create_directories(ck);
  std::ofstream(ck + "/state.json") << "{\"step\": 3}";
  std::ofstream(ck + "/model.safetensors") << "garbage";
  m = make(yaml, {"resume=" + ck});
  EXPECT_NE(m.find(ck), std::string::npos) << m;
  EXPECT_NE(m.find("model.safetensors"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(o)) << "a failed setup must not create the run directory";
}


std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST_F(TrainerTest, SkippedCorruptFilesAreLoggedOnceAndCounted) {
  // One undecodable file per split; 33 train samples, batch 8: 4 steps per
  // epoch, so an epoch may or may not draw it; over 3 epochs (with the
  // shuffle) the count is what the loader saw, checked against metrics.
  std::ofstream(data() + "/train/airplane/zz_corrupt.jpg") << "not a jpeg";
  std::ofstream(data() + "/test/bird/zz_corrupt.jpg") << "not a jpeg";
  Config c = parse(tiny_yaml(data(), out("skip")),
                   {"data.on_corrupt=skip", "log.tensorboard=false", "ckpt.every_steps=0", "eval.ema=false"});
  TrainSummary s;
  run(c, &s);
  const std::string log = read_text(out("skip") + "/t/log.txt");
  // Every evaluation reads all 17 test files, so the bad test file is met
  // 3 times (once per epoch) but named once; the figures are over the 16
  // readable images.
  EXPECT_EQ(count_of(log, "test/bird/zz_corrupt.jpg"), 1u) << log;
  EXPECT_EQ(s.final_eval.skipped, 1);
  EXPECT_EQ(s.final_eval.images, 16);
  // One "split":"data" line per epoch with the running total, never falling.
  const std::string metrics = read_text(out("skip") + "/t/metrics.jsonl");
  std::istringstream lines(metrics);
  std::string line;
  int data_lines = 0;
  double last = -1;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("split") == "data") {
      ++data_lines;
      EXPECT_GE(j.at("corrupt_skipped").get<double>(), last);
      last = j.at("corrupt_skipped").get<double>();
      EXPECT_LE(j.at("corrupt_files").get<double>(), 1.0);
    }
    if (j.at("split") == "val") {
      EXPECT_EQ(j.at("corrupt_skipped").get<double>(), 1.0) << line;
    }
  }
  EXPECT_EQ(data_lines, 3);
  // Training draws the bad file when the shuffle puts it among the 32 of
  // the 33 samples an epoch uses; then it is named exactly once.
  EXPECT_EQ(count_of(log, "train/airplane/zz_corrupt.jpg"), last > 0 ? 1u : 0u) << log;
}

// data.on_corrupt=skip and a class whose images are all unreadable: a
// warning at start, in log.txt too (training would fill the class with
// other classes' images without a word).
TEST_F(TrainerTest, AClassWithoutAReadableImageIsAWarningAtStart) {
  for (const auto& e : fs::directory_iterator(data() + "/test/bird"))
    std::ofstream(e.path(), std::ios::trunc) << "not a jpeg";
  run(parse(tiny_yaml(data(), out("cls")), {"data.on_corrupt=skip", "train.max_steps=1", "log.tensorboard=false"}));
  const std::string log = read_text(out("cls") + "/t/log.txt");
  EXPECT_NE(log.find("[warning] data: no image of class 'bird' in data.val_split '" + data() + "/test' can be read"),
            std::string::npos) << log;
  EXPECT_EQ(log.find("class 'airplane'"), std::string::npos) << log;
}

TEST_F(TrainerTest, FatalErrorsReachTheRunLog) {
  std::ofstream(data() + "/train/airplane/0000.jpg", std::ios::trunc) << "truncated";
  Config c = parse(tiny_yaml(data(), out("fatal")), {"log.tensorboard=false", "data.on_corrupt=error"});
  Trainer t(c, "test.yaml");
  const std::string m = error_of([&] { t.run(); });
  EXPECT_NE(m.find("0000.jpg"), std::string::npos) << m;
  const std::string log = read_text(out("fatal") + "/t/log.txt");
  EXPECT_NE(log.find("[error] vtrain: run failed: " + m), std::string::npos) << log;
}

// Resuming with a model of another size: the error shows the first few
// mismatches (not every tensor name) and points to the run's config.yaml,
// whose model.* keys built the checkpoint.
TEST_F(TrainerTest, ResumingAnotherModelPointsToTheRunConfig) {
  run(parse(tiny_yaml(data(), out("size")), {"train.max_steps=1", "log.tensorboard=false"}));
  const std::string m = error_of([&] {
    Trainer t(parse(tiny_yaml(data(), out("size")), {"train.max_steps=2", "model.depth=1"}), "test.yaml");
  });
  EXPECT_NE(m.find("unexpected: blocks.1."), std::string::npos) << m;
  EXPECT_NE(m.find(", ... ("), std::string::npos) << m;
  EXPECT_NE(m.find("; it was written by the run configured by " + out("size") + "/t/config.yaml: its model.* keys build it"),
            std::string::npos) << m;
  EXPECT_LT(m.size(), 1000u) << m;
}

}  // namespace
}  // namespace vt
