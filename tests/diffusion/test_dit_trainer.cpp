// dittrain end to end on tiny models: resume reproduces an uninterrupted run
// step for step (losses, weights, EMA, optimizer), the non-finite guard,
// images data + periodic EMA grids, `sample` files, the uint8 conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/config.h"
#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "test_fs.h"
#include "core/checkpoint_dir.h"
#include "diffusion/dit_sample_files.h"
#include "diffusion/dit_trainer.h"
#include "diffusion/image_grid.h"
#include "diffusion/sampler.h"

namespace vt {
namespace {
namespace fs = std::filesystem;

// 16 random latents [4, 8, 8] with labels 0..2 in one shard.
void write_latent_shard(const std::string& dir, bool nan = false) {
  fs::create_directories(dir);
  Tensor lat = Tensor::empty({16, 4, 8, 8});
  Philox rng(3, 4);
  for (int64_t i = 0; i < lat.numel(); ++i) lat.f32()[i] = nan ? NAN : static_cast<float>(5.0 * rng.normal());
  Tensor lab = Tensor::empty({16}, DType::I32);
  for (int i = 0; i < 16; ++i) lab.i32()[i] = i % 3;
  save_safetensors(dir + "/shard_000.safetensors", {{"latents", lat}, {"labels", lab}});
}

DitTrainConfig tiny(const std::string& out_dir, const std::string& name, const std::string& data,
                    const std::string& extra = "", const std::vector<std::string>& overrides = {}) {
  const std::string yaml = "name: " + name + "\nout_dir: " + out_dir + "\nseed: 9\nresume: auto\n" +
                           "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 2, heads: 2, "
                           "num_classes: 3}\n"
                           "data: {kind: latents, root: " + data + ", workers: 2}\n"
                           "train: {batch_size: 4, steps: 7, lr: 1.0e-3, ema_decay: 0.9}\n"
                           "log: {every_steps: 1}\nckpt: {every_steps: 100}\nsample: {every: 0}\n" + extra;
  return dit_train_config(Config::parse(yaml, dittrain_schema(), overrides));
}

std::vector<float> flat(const Tensor& t) { return t.contiguous().to_vector(); }

// metrics.jsonl lines of a run with split "train".
std::vector<nlohmann::json> train_lines(const std::string& run_dir) {
  std::ifstream f(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> r;
  for (std::string line; std::getline(f, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("split", "") == "train") r.push_back(std::move(j));
  }
  return r;
}

size_t count_prefix(const nlohmann::json& line, const std::string& prefix) {
  size_t n = 0;
  for (auto it = line.begin(); it != line.end(); ++it) n += it.key().rfind(prefix, 0) == 0;
  return n;
}

// log.stream_rms / log.norm_scales on dittrain's metrics lines. At step 1
// adaLN-Zero makes every Pre-Norm block the identity (gates are zero), so
// the stream's RMS is the same after each block (at step 2 too: the zero final
// layer passed no gradient to the blocks in step 1); the norm scales are
// recomputed from the step-2 checkpoint (the line follows that update).
TEST(DitTrainer, MechanismScalarsOnTheMetricsLine) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("lat"));
  const auto run = [&](const std::string& name, const std::string& scheme) {
    DitTrainer t(tiny(tmp.path(), name, tmp.file("lat"), "", {"train.steps=2", "log.tensorboard=false", "log.stream_rms=true",
                                                           "log.norm_scales=true", "model.norm.scheme=" + scheme}));
    t.train();
  };
  run("pre", "pre");
  const auto lines = train_lines(tmp.file("pre"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(count_prefix(lines[0], "stream_rms/x/"), 0u);
  ASSERT_EQ(count_prefix(lines[0], "stream_rms/y/"), 2u);
  const double y0 = lines[0].at("stream_rms/y/0").get<double>(), y1 = lines[0].at("stream_rms/y/1").get<double>();
  EXPECT_TRUE(std::isfinite(y0) && y0 > 0) << y0;
  EXPECT_NEAR(y1, y0, 1e-9 * y0);

  run("siam", "siamese");
  const auto sl = train_lines(tmp.file("siam"));
  ASSERT_EQ(sl.size(), 2u);
  EXPECT_EQ(count_prefix(sl[1], "stream_rms/x/"), 2u);
  EXPECT_EQ(count_prefix(sl[1], "stream_rms/y/"), 2u);
  const auto ck = load_checkpoint(tmp.file("siam/step_2"));
  size_t norms = 0;
  for (const auto& [name, t] : ck.model) {
    if (name.find("norm") == std::string::npos || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0)
      continue;
    ++norms;
    double a = 0;
    for (int64_t i = 0; i < t.numel(); ++i) a += std::fabs(static_cast<double>(t.f32()[i]));
    const std::string key = "norm_scale/" + name.substr(0, name.size() - 7);
    ASSERT_TRUE(sl[1].contains(key)) << key;
    EXPECT_NEAR(sl[1].at(key).get<double>(), a / static_cast<double>(t.numel()), 1e-6) << key;
  }
  EXPECT_GT(norms, 0u);
  EXPECT_EQ(count_prefix(sl[1], "norm_scale/"), norms);
}

TEST(DitTrainer, ResumeReproducesTheUninterruptedRun) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("lat"));
  // 16 samples / batch 4 = 4 steps per epoch: step 3 -> 7 crosses an epoch.
  DitTrainer a(tiny(tmp.path(), "a", tmp.file("lat")));
  a.train();
  ASSERT_EQ(a.losses().size(), 7u);
  for (const auto& sl : a.losses()) EXPECT_TRUE(std::isfinite(sl.second));

  {
    DitTrainer b(tiny(tmp.path(), "b", tmp.file("lat")));
    b.train(/*stop_at=*/3);
    EXPECT_EQ(b.step(), 3);
    ASSERT_TRUE(fs::is_directory(tmp.file("b/step_3")));
  }
  DitTrainer c(tiny(tmp.path(), "b", tmp.file("lat")));  // resume: auto
  EXPECT_EQ(c.step(), 3);
  c.train();
  ASSERT_EQ(c.losses().size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c.losses()[i].first, a.losses()[3 + i].first);
    EXPECT_DOUBLE_EQ(c.losses()[i].second, a.losses()[3 + i].second) << "step " << c.losses()[i].first;
  }
  EXPECT_EQ(flat(c.store().weights()), flat(a.store().weights()));
  EXPECT_EQ(flat(c.ema()), flat(a.ema()));
  // The EMA really lags the weights (decay 0.9 over 7 steps).
  EXPECT_NE(flat(c.ema()), flat(c.store().weights()));
  // The checkpoint holds DiT's state-dict names.
  const auto ck = load_checkpoint(tmp.file("b/step_7"));
  EXPECT_TRUE(ck.model.count("blocks.1.postnorm2.weight"));
  EXPECT_TRUE(ck.model.count("y_embedder.embedding_table.weight"));
  EXPECT_TRUE(ck.optimizer.count("exp_avg_sq.final_layer.linear.weight"));
  EXPECT_EQ(ck.state.at("step").get<int64_t>(), 7);
  EXPECT_EQ(latest_checkpoint(tmp.file("b")), tmp.file("b/step_7"));

  // Latent models sample latents (no VAE yet), divided by the scale factor.
  SampleOptions so;
  so.sampler = "ddim", so.steps = 2;
  dit_sample_to_files(tiny(tmp.path(), "b", tmp.file("lat")), tmp.file("b/step_7"), 3, so, tmp.file("b/smp"));
  const auto npz = load_npz(tmp.file("b/smp.npz"));
  EXPECT_FALSE(npz.count("arr_0"));
  ASSERT_TRUE(npz.count("latents"));
  EXPECT_EQ(npz.at("latents").shape, (Shape{3, 4, 8, 8}));
  EXPECT_EQ(npz.at("labels").dtype, "<i8");
}

// train.activation_checkpointing=blocks (recomputing each block in the
// backward pass) changes nothing but memory: the losses and the step-4
// checkpoint (model, EMA, optimizer moments, state.json) are bitwise those
// of none, for SiameseNorm and SpanNorm; the key is not part of the digest.
TEST(DitTrainer, ActivationCheckpointingGivesTheSameCheckpoint) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("lat"));
  for (const std::string scheme : {"siamese", "spannorm"}) {
    const auto train = [&](const std::string& name, const std::string& mode) {
      DitTrainer t(tiny(tmp.path(), name, tmp.file("lat"), "",
                        {"train.steps=4", "log.tensorboard=false", "model.norm.scheme=" + scheme,
                         "train.activation_checkpointing=" + mode}));
      t.train();
      return t.losses();
    };
    const auto none = train(scheme + "_n", "none"), blocks = train(scheme + "_b", "blocks");
    ASSERT_EQ(none.size(), 4u) << scheme;
    EXPECT_EQ(blocks, none) << scheme;
    const auto a = load_checkpoint(tmp.file(scheme + "_n/step_4")), b = load_checkpoint(tmp.file(scheme + "_b/step_4"));
    for (const auto& [pa, pb] : {std::make_pair(&a.model, &b.model), std::make_pair(&a.ema, &b.ema),
                                 std::make_pair(&a.optimizer, &b.optimizer)}) {
      ASSERT_EQ(pa->size(), pb->size());
      for (const auto& [name, t] : *pa) EXPECT_EQ(flat(t), flat(pb->at(name))) << scheme << " " << name;
    }
    // The run names differ, so do their digests; the rest of state.json may not.
    nlohmann::json sa = a.state, sb = b.state;
    sa.erase("config_digest"), sb.erase("config_digest");
    EXPECT_EQ(sa, sb) << scheme;
  }
  // The key is left out of the digest: a run may resume under the other mode without a warning.
  EXPECT_EQ(tiny(tmp.path(), "d", tmp.file("lat"), "", {"train.activation_checkpointing=blocks"}).digest,
            tiny(tmp.path(), "d", tmp.file("lat")).digest);
}

TEST(DitTrainer, NonFiniteLossesAreSkippedThenStop) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("nan"), /*nan=*/true);
  DitTrainer t(tiny(tmp.path(), "n", tmp.file("nan"), "", {"train.max_nonfinite=3"}));
  const std::vector<float> w0 = flat(t.store().weights());
  try {
    t.train();
    FAIL() << "expected the non-finite guard to stop training";
  } catch (const NonFiniteLoss& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at step 4"), std::string::npos) << e.what();
  }
  // train.max_nonfinite 3: steps 1-3 skipped, the fourth in a row stops.
  EXPECT_EQ(t.step(), 4);
  EXPECT_EQ(flat(t.store().weights()), w0);  // no update was applied
  // Each non-finite step is in metrics.jsonl, the stopping one included.
  std::ifstream m(tmp.file("n/metrics.jsonl"));
  int nonfinite_lines = 0;
  for (std::string line; std::getline(m, line);) nonfinite_lines += line.find("\"nonfinite\"") != std::string::npos;
  EXPECT_EQ(nonfinite_lines, 4);
}

TEST(DitTrainer, IntervalsOfSkippedStepsLogNullNotZero) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("nan"), /*nan=*/true);
  DitTrainer t(tiny(tmp.path(), "n", tmp.file("nan"), "", {"train.max_nonfinite=3"}));
  EXPECT_THROW(t.train(), NonFiniteLoss);
  // Steps 1-3 were skipped: their train lines hold null means (no applied
  // step to average), never a loss of 0.
  std::ifstream m(tmp.file("n/metrics.jsonl"));
  int train_lines = 0;
  for (std::string line; std::getline(m, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("split", "") != "train" || j.contains("event")) continue;
    ++train_lines;
    EXPECT_TRUE(j.at("loss").is_null()) << line;
    EXPECT_TRUE(j.at("mse").is_null()) << line;
    EXPECT_DOUBLE_EQ(j.at("lr").get<double>(), 1e-3) << line;  // tiny()'s train.lr
  }
  EXPECT_EQ(train_lines, 3);
}

TEST(DitTrainer, NonFiniteLossStopsAtOnceByDefault) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("nan"), /*nan=*/true);
  DitTrainer t(tiny(tmp.path(), "n", tmp.file("nan")));
  EXPECT_THROW(t.train(), NonFiniteLoss);
  EXPECT_EQ(t.step(), 1);
}

TEST(DitTrainer, ImagesDataGridAndSampleFiles) {
  vt_test::TmpDir tmp;
  for (const char* cls : {"cat", "dog"}) {
    fs::create_directories(tmp.file(std::string("img/") + cls));
    for (int i = 0; i < 3; ++i) {
      cv::Mat m(12, 14, CV_8UC3, cv::Scalar(40 * i, 200 - 30 * i, cls[0] == 'c' ? 30 : 220));
      cv::imwrite(tmp.file(std::string("img/") + cls + "/" + std::to_string(i) + ".png"), m);
    }
  }
  const std::string yaml = "name: im\nout_dir: " + tmp.path() + "\nresume: none\n" +
                           "model: {input_size: 8, in_channels: 3, patch: 4, hidden: 16, depth: 1, heads: 2, "
                           "num_classes: 2}\n"
                           "data: {kind: images, root: " + tmp.file("img") + ", workers: 1}\n"
                           "train: {batch_size: 3, steps: 2, lr: 1.0e-2, ema_decay: 0.5}\n"
                           "sample: {every: 2, num: 4, sampler: ddim, steps: 3, cfg_scale: 2.0}\n";
  const DitTrainConfig cfg = dit_train_config(Config::parse(yaml, dittrain_schema()));
  {
    DitTrainer t(cfg);
    t.train();
  }
  const cv::Mat grid = cv::imread(tmp.file("im/samples/step_2.png"), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(grid.empty());
  EXPECT_EQ(grid.rows, 2 * (8 + 2) + 2);  // 4 images -> 2 x 2 with 2 px padding
  EXPECT_EQ(grid.cols, 2 * (8 + 2) + 2);

  // The periodic grid is the EMA model's: rebuild it from the checkpoint's
  // ema.safetensors with the grid's fixed labels (i % classes) and noise.
  {
    DiT ema_model(cfg.model);
    ParamStore& es = ema_model.params();
    es.load(load_checkpoint(tmp.file("im/step_2"), {/*optimizer=*/false}).ema, true);
    ema_model.set_pos_embed();
    const Tensor u = to_uint8_nhwc(sample_images(ema_model, cfg.grid, {0, 1, 0, 1}));
    int mismatches = 0;
    for (int n = 0; n < 4; ++n)
      for (int yy = 0; yy < 8; ++yy)
        for (int xx = 0; xx < 8; ++xx) {
          const cv::Vec3b px = grid.at<cv::Vec3b>(2 + (n / 2) * 10 + yy, 2 + (n % 2) * 10 + xx);
          const uint8_t* want = u.u8() + ((n * 8 + yy) * 8 + xx) * 3;
          mismatches += px[2] != want[0] || px[1] != want[1] || px[0] != want[2];
        }
    EXPECT_EQ(mismatches, 0);
    // ... and not the raw model's (the EMA lags it).
    DiT raw(cfg.model);
    ParamStore& rs = raw.params();
    rs.load(load_checkpoint(tmp.file("im/step_2"), {/*optimizer=*/false}).model, true);
    raw.set_pos_embed();
    EXPECT_NE(to_uint8_nhwc(sample_images(raw, cfg.grid, {0, 1, 0, 1})).contiguous().to(DType::F32).to_vector(),
              u.contiguous().to(DType::F32).to_vector());
  }

  SampleOptions so = cfg.grid;
  so.seed = 5;
  dit_sample_to_files(cfg, tmp.file("im/step_2"), 5, so, tmp.file("out/s"));
  const auto npz = load_npz(tmp.file("out/s.npz"));
  ASSERT_TRUE(npz.count("arr_0") && npz.count("labels"));
  EXPECT_EQ(npz.at("arr_0").dtype, "|u1");
  EXPECT_EQ(npz.at("arr_0").shape, (Shape{5, 8, 8, 3}));
  EXPECT_EQ(npz.at("labels").shape, (Shape{5}));
  for (int64_t y : npz.at("labels").as<int64_t>()) EXPECT_TRUE(y == 0 || y == 1);
  EXPECT_TRUE(fs::is_regular_file(tmp.file("out/s.png")));
  // Same seed, same images: sampling is a pure function of (weights, seed).
  dit_sample_to_files(cfg, tmp.file("im/step_2"), 5, so, tmp.file("out/s2"));
  EXPECT_EQ(load_npz(tmp.file("out/s2.npz")).at("arr_0").bytes, npz.at("arr_0").bytes);
}

TEST(DitSampler, SamplesDoNotDependOnBatchSize) {
  DiTConfig c;
  c.input_size = 4, c.in_channels = 2, c.patch = 2, c.hidden = 8, c.depth = 1, c.heads = 2, c.num_classes = 3;
  DiT model(c);
  ParamStore& store = model.params();
  store.init(1);
  Philox rng(1, 2);  // non-zero final layers so the model output matters
  Tensor w = store.weights();
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] += static_cast<float>(0.02 * rng.normal());
  model.set_pos_embed();
  SampleOptions so;
  so.sampler = "ddpm", so.steps = 4, so.cfg_scale = 1.5, so.seed = 11;
  so.batch = 5;
  const Tensor a = sample_images(model, so, {0, 1, 2, 0, 1});
  so.batch = 2;
  const Tensor b = sample_images(model, so, {0, 1, 2, 0, 1});
  // GEMM blocking may differ with the batch size: equal up to rounding.
  const auto va = flat(a), vb = flat(b);
  double m = 0, e = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_TRUE(std::isfinite(va[i]));
    m = std::max(m, std::fabs(static_cast<double>(va[i])));
    e = std::max(e, std::fabs(static_cast<double>(va[i]) - vb[i]));
  }
  EXPECT_LT(e, 1e-5 * m);
  EXPECT_GT(m, 0.5);  // not collapsed
  EXPECT_THROW(sample_images(model, so, {3}), std::invalid_argument);
}

TEST(ImageGrid, Uint8ConversionIsAdms) {
  // clamp(127.5 x + 128, 0, 255) truncated: -1 -> 0.5 -> 0, 0 -> 128, 1 -> 255.5 -> 255,
  // 0.5 -> 191.75 -> 191, -0.3 -> 89.75 -> 89, 2 -> 255, -2 -> 0.
  const Tensor x = Tensor::from_vector({-1.f, 0.f, 1.f, 0.5f, -0.3f, 2.f, -2.f}, {1, 1, 1, 7});
  const Tensor u = to_uint8_nhwc(x);
  const std::vector<int> want = {0, 128, 255, 191, 89, 255, 0};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(u.u8()[i], want[static_cast<size_t>(i)]) << i;
  // NHWC order: channel fastest.
  const Tensor y = Tensor::from_vector({-1.f, 1.f, 0.f, 0.f}, {1, 2, 1, 2});
  const Tensor v = to_uint8_nhwc(y);
  EXPECT_EQ(v.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(v.u8()[0], 0);
  EXPECT_EQ(v.u8()[1], 128);
  EXPECT_EQ(v.u8()[2], 255);
}

TEST(DitTrainConfig, SavedConfigHasAbsolutePathsAndResumesFromAnywhere) {
  vt_test::TmpDir tmp;
  write_latent_shard(tmp.file("lat"));
  const std::string want_root = fs::absolute(tmp.file("lat")).lexically_normal().string();
  const std::string want_run = fs::absolute(tmp.file("out/r")).lexically_normal().string();
  {
    vt_test::ChdirGuard cd(tmp.path());  // relative paths in config text (no file) mean the CWD
    const DitTrainConfig c =
        dit_train_config(Config::parse(std::string("name: r\nout_dir: out\n") +
                                           "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 1, "
                                           "heads: 2, num_classes: 3}\n"
                                           "data: {kind: latents, root: lat, workers: 1}\n"
                                           "train: {batch_size: 4, steps: 1}\nsample: {every: 0}\n",
                                       dittrain_schema()));
    EXPECT_EQ(c.data_root, want_root);
    DitTrainer t(c);
    t.train();
  }
  vt_test::ChdirGuard cd("/");
  const std::string saved = want_run + "/config.yaml";
  const Config loaded = Config::load(saved, dittrain_schema(), {"train.steps=2"});
  EXPECT_EQ(loaded.get<std::string>("data.root"), want_root);
  EXPECT_EQ(loaded.get<std::string>("out_dir"), fs::path(want_run).parent_path().string());
  const DitTrainConfig again = dit_train_config(loaded);
  // The checkpoint holds the digest of the saved config (same run).
  EXPECT_EQ(load_checkpoint(want_run + "/step_1").state.at("config_digest").get<std::string>(),
            dit_train_config(Config::load(saved, dittrain_schema())).digest);
  DitTrainer t(again);
  EXPECT_EQ(t.step(), 1);  // resumed in place
  t.train();
  EXPECT_EQ(t.step(), 2);
  EXPECT_TRUE(fs::is_directory(want_run + "/step_2"));
}

TEST(DitTrainConfig, BadValuesNameTheKey) {
  auto err = [](const std::string& yaml) {
    try {
      dit_train_config(Config::parse(yaml, dittrain_schema()));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("data: {kind: video, root: x}\n").find("data.kind"), std::string::npos);
  EXPECT_NE(err("data: {kind: latents, root: x}\nmodel: {norm: {scheme: mid}}\n").find("mid"), std::string::npos);
  EXPECT_NE(err("data: {kind: latents, root: x}\ndiffusion: {t0_term: foo}\n").find("t0_term"), std::string::npos);
  const auto l4 = dit_train_config(Config::load(std::string(VT_FIXTURES_DIR) + "/../../configs/dit_l4.yaml",
                                                dittrain_schema()));
  EXPECT_EQ(l4.model.depth, 24);
  EXPECT_EQ(l4.model.hidden, 1024);
  EXPECT_EQ(l4.model.patch, 4);
  EXPECT_EQ(l4.batch, 256);
  EXPECT_EQ(l4.steps, 400000);
  EXPECT_EQ(l4.model.scheme, NormScheme::Siamese);
  const auto pre = dit_train_config(Config::load(std::string(VT_FIXTURES_DIR) + "/../../configs/dit_l4_prenorm.yaml",
                                                 dittrain_schema()));
  EXPECT_EQ(pre.model.scheme, NormScheme::Pre);
  EXPECT_EQ(pre.model.depth, 24);
  EXPECT_EQ(pre.lr, l4.lr);
}

}  // namespace
}  // namespace vt
