// dittrain's setup and argument checks: range checks name the key, relative
// paths resolve as vtrain's, setup failures and resume=never on an existing
// run write nothing, `sample` arguments are parsed strictly with the
// config's sample.* keys as defaults, config lookup.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "test_fs.h"
#include "diffusion/dit_model.h"
#include "diffusion/dit_sample_args.h"
#include "diffusion/dit_sample_files.h"
#include "diffusion/dit_trainer.h"
#include "diffusion/sampler.h"

namespace vt {
namespace {
namespace fs = std::filesystem;

// `classes` folders of 2 tiny PNGs each; an empty folder when `empty_class`.
void write_images(const std::string& root, int classes, bool empty_class = false) {
  for (int c = 0; c < classes; ++c) {
    const std::string dir = root + "/c" + std::to_string(c);
    fs::create_directories(dir);
    if (empty_class && c == classes - 1) continue;
    for (int i = 0; i < 2; ++i)
      cv::imwrite(dir + "/" + std::to_string(i) + ".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar(30 * c, 50 * i, 90)));
  }
}

std::string yaml_for(const std::string& out_dir, const std::string& root, const std::string& extra = "") {
  return "name: r\nout_dir: " + out_dir + "\nseed: 1\n" +
         "model: {input_size: 8, in_channels: 3, patch: 4, hidden: 8, depth: 1, heads: 2, num_classes: 3}\n"
         "data: {kind: images, root: " + root + ", workers: 1}\n"
         "train: {batch_size: 2, steps: 1}\nsample: {every: 0}\n" + extra;
}

DitTrainConfig cfg_from(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return dit_train_config(Config::parse(yaml, dittrain_schema(), overrides));
}

std::string error_of_config(const std::string& yaml, const std::vector<std::string>& overrides) {
  try {
    cfg_from(yaml, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DitSetup, ObviouslyInvalidValuesAreConfigErrorsNamingTheKey) {
  const std::string y = yaml_for("/tmp/unused", "/tmp/unused");
  ASSERT_NO_THROW(cfg_from(y));
  for (const std::string ov :
       {"train.steps=0", "train.steps=-5", "train.lr=0", "train.lr=-1e-4", "train.lr=.nan", "train.lr=.inf",
        "train.batch_size=0", "train.ema_decay=1.5", "train.ema_decay=-0.1", "train.betas=[1, 0.999]",
        "train.betas=[0.9, -0.5]", "train.eps=0", "train.weight_decay=-1", "train.clip_grad=-1", "train.clip_grad=0", "train.max_nonfinite=-1",
        "train.allreduce_bucket_mb=-0.5", "train.allreduce_bucket_mb=.inf", "train.activation_checkpointing=layers",
        "train.cuda_graph=on",
        "model.class_dropout=1.0", "model.class_dropout=-0.1", "model.mlp_ratio=0", "log.every_steps=-1",
        "ckpt.every_steps=-1", "sample.every=-1", "sample.num=0", "sample.batch=0", "sample.batch=-3",
        "sample.steps=0", "sample.steps=1001", "sample.eta=-1", "sample.cfg_scale=.nan", "sample.seed=-1",
        "sample.guided_channels=4", "sample.guided_channels=0", "sample.sampler=euler", "data.workers=-1",
        "data.latent_scale=0", "data.on_corrupt=ignore", "seed=-2", "name=a/b", "name=",
        "diffusion.num_timesteps=1", "model.norm.mixln_alpha=1.01", "model.norm.mixln_alpha=-1",
        "model.norm.scheme=span_norm", "model.norm.mixln_alpha=0.5", "model.norm.spannorm_alpha=0.5"}) {
    const std::string key = ov.substr(0, ov.find('='));
    const std::string msg = error_of_config(y, {ov});
    EXPECT_NE(msg.find(key), std::string::npos) << ov << " gave '" << msg << "'";
  }
  // sample.steps is bounded by the schedule, which the sampler also uses.
  const DitTrainConfig t = cfg_from(y, {"diffusion.num_timesteps=100", "sample.steps=100"});
  EXPECT_EQ(t.grid.num_timesteps, 100);
  const GaussianDiffusion d = sampling_diffusion(t.grid);
  EXPECT_EQ(d.num_steps(), 100);
  EXPECT_EQ(d.timestep_map().back(), 99);
  EXPECT_NE(error_of_config(y, {"diffusion.num_timesteps=100", "sample.steps=101"}).find("sample.steps"),
            std::string::npos);
}

// model.norm.mixln_alpha travels config -> DiTConfig -> the DiT's backbone.
TEST(DitSetup, MixLnAlphaReachesTheBackbone) {
  const std::string y = yaml_for("/tmp/unused", "/tmp/unused");
  const DitTrainConfig t = cfg_from(y, {"model.depth=4", "model.norm.scheme=mixln", "model.norm.mixln_alpha=0.5"});
  EXPECT_EQ(t.model.mixln_alpha, 0.5);
  DiT model(t.model);
  EXPECT_EQ(model.backbone().config().mixln_alpha, 0.5);
  for (int64_t l = 0; l < 4; ++l)  // floor(0.5 * 4) = 2 leading Post blocks
    EXPECT_EQ(model.backbone().config().block_scheme(l), l < 2 ? NormScheme::Post : NormScheme::Pre) << l;
  EXPECT_EQ(cfg_from(y).model.mixln_alpha, 0.25);
}

// model.norm.spannorm_alpha travels config -> DiTConfig -> the backbone, is
// read only by spannorm, and must be positive.
TEST(DitSetup, SpanNormAlphaReachesTheBackbone) {
  const std::string y = yaml_for("/tmp/unused", "/tmp/unused");
  const DitTrainConfig t = cfg_from(y, {"model.norm.scheme=spannorm", "model.norm.spannorm_alpha=0.3"});
  DiT model(t.model);
  ASSERT_TRUE(model.backbone().config().spannorm_alpha.has_value());
  EXPECT_EQ(*model.backbone().config().spannorm_alpha, 0.3);
  EXPECT_FALSE(cfg_from(y, {"model.norm.scheme=spannorm"}).model.spannorm_alpha.has_value());
  for (const char* bad : {"model.norm.spannorm_alpha=0", "model.norm.spannorm_alpha=-2"})
    EXPECT_NE(error_of_config(y, {"model.norm.scheme=spannorm", bad}).find("model.norm.spannorm_alpha"),
              std::string::npos) << bad;
  EXPECT_NE(error_of_config(y, {"model.norm.scheme=pre", "model.norm.spannorm_alpha=0.3"}).find("model.norm.scheme: spannorm"),
            std::string::npos);
  EXPECT_NE(error_of_config(y, {"model.norm.scheme=spannorm", "model.norm.mixln_alpha=0.5"}).find("model.norm.scheme: mixln"),
            std::string::npos);
}

TEST(DitSetup, ResumeWordsNeverAndItsAliasNone) {
  const std::string y = yaml_for("/tmp/unused", "/tmp/unused");
  EXPECT_EQ(cfg_from(y, {"resume=never"}).resume, "never");
  EXPECT_EQ(cfg_from(y, {"resume=none"}).resume, "never");
  EXPECT_EQ(cfg_from(y).resume, "auto");
  EXPECT_EQ(cfg_from(y, {"resume=/abs/step_3"}).resume, "/abs/step_3");
}

// Lists every path under dir (relative), to compare a directory before and after.
std::set<std::string> tree(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) s.insert(fs::relative(e.path(), dir).string());
  return s;
}

TEST(DitSetup, ResumeNeverRefusesARunDirectoryWithCheckpoints) {
  vt_test::TmpDir tmp;
  write_images(tmp.file("img"), 3);
  {
    DitTrainer t(cfg_from(yaml_for(tmp.file("out"), tmp.file("img")), {"train.steps=2", "ckpt.every_steps=1"}));
    t.train();
  }
  const std::set<std::string> before = tree(tmp.file("out"));
  ASSERT_TRUE(before.count("r/step_2"));
  for (const char* word : {"never", "none"}) {
    const std::string msg = vt_test::error_of([&] {
      DitTrainer t(cfg_from(yaml_for(tmp.file("out"), tmp.file("img")),
                            {"train.steps=1", std::string("resume=") + word}));
    });
    EXPECT_NE(msg.find("already holds checkpoints"), std::string::npos) << msg;
    EXPECT_NE(msg.find(tmp.file("out/r")), std::string::npos) << msg;
    EXPECT_EQ(tree(tmp.file("out")), before) << word;
  }
  // never on a fresh run name trains from step 0.
  DitTrainer fresh(cfg_from(yaml_for(tmp.file("out"), tmp.file("img")), {"name=r2", "resume=never"}));
  EXPECT_EQ(fresh.step(), 0);
  fresh.train();
  EXPECT_TRUE(fs::is_directory(tmp.file("out/r2/step_1")));
}

TEST(DitSetup, SetupFailuresLeaveNoRunDirectory) {
  vt_test::TmpDir tmp;
  write_images(tmp.file("img"), 3);
  write_images(tmp.file("holes"), 3, /*empty_class=*/true);
  fs::create_directories(tmp.file("no_shards"));
  const std::string out = tmp.file("out");
  struct Case {
    std::string root;
    std::vector<std::string> overrides;
    std::string expect;  // in the message
  };
  const std::vector<Case> cases = {
      {tmp.file("missing"), {}, "data.root"},
      {tmp.file("img"), {"train.batch_size=7"}, "train.batch_size"},
      {tmp.file("img"), {"model.num_classes=1"}, "model.num_classes"},
      {tmp.file("holes"), {}, "c2"},
      {tmp.file("no_shards"), {"data.kind=latents", "model.in_channels=4"}, "no_shards"},
      {tmp.file("img"), {"resume=" + tmp.file("nowhere/step_5")}, "nowhere"},
  };
  for (const Case& c : cases) {
    const std::string msg = vt_test::error_of([&] { DitTrainer t(cfg_from(yaml_for(out, c.root), c.overrides)); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.root << ": '" << msg << "'";
    EXPECT_FALSE(fs::exists(out)) << c.root << " " << (c.overrides.empty() ? "" : c.overrides[0]);
  }
  // The same config with good data creates the directory only when training starts.
  DitTrainer t(cfg_from(yaml_for(out, tmp.file("img"))));
  EXPECT_FALSE(fs::exists(out));
  t.train();
  EXPECT_TRUE(fs::is_regular_file(out + "/r/config.yaml"));
  EXPECT_TRUE(fs::is_directory(out + "/r/step_1"));
}

TEST(DitSetup, RelativePathsResolveLikeVtrain) {
  vt_test::TmpDir tmp;
  const fs::path base = fs::absolute(tmp.path()).lexically_normal();
  fs::create_directories(base / "repo/configs");
  fs::create_directories(base / "elsewhere");
  const std::string cfg_path = (base / "repo/configs/x.yaml").string();
  std::ofstream(cfg_path) << "name: r\nout_dir: out\nresume: ckpts/step_4\n"
                              "data: {kind: images, root: ../data/img}\n"
                              "model: {in_channels: 3}\n";
  vt_test::ChdirGuard cd(base / "elsewhere");
  // File values: against the parent of the file's directory (repo/).
  const DitTrainConfig a = dit_train_config(Config::load(cfg_path, dittrain_schema()), cfg_path);
  EXPECT_EQ(a.data_root, (base / "data/img").string());
  EXPECT_EQ(a.resume, (base / "repo/ckpts/step_4").string());
  EXPECT_EQ(a.out_dir, (base / "elsewhere/out").string());  // out_dir: the CWD
  // Command-line values: against the CWD.
  const DitTrainConfig b = dit_train_config(
      Config::load(cfg_path, dittrain_schema(), {"data.root=mine", "resume=ck/step_1"}), cfg_path);
  EXPECT_EQ(b.data_root, (base / "elsewhere/mine").string());
  EXPECT_EQ(b.resume, (base / "elsewhere/ck/step_1").string());
  // The saved YAML is absolute and resolves to itself from anywhere.
  const std::string saved = (base / "saved.yaml").string();
  std::ofstream(saved) << a.resolved.to_yaml();
  vt_test::ChdirGuard cd2("/");
  const DitTrainConfig c = dit_train_config(Config::load(saved, dittrain_schema()), saved);
  EXPECT_EQ(c.data_root, a.data_root);
  EXPECT_EQ(c.resume, a.resume);
  EXPECT_EQ(c.out_dir, a.out_dir);
  EXPECT_EQ(c.digest, a.digest);
}

TEST(DitSampleArgs, DefaultsComeFromTheConfig) {
  const DitTrainConfig cfg = cfg_from(yaml_for("/tmp/unused", "/tmp/unused"),
                                      {"sample.sampler=ddim", "sample.steps=25", "sample.cfg_scale=1.5",
                                       "sample.seed=7", "sample.batch=3", "sample.eta=0.5", "sample.clip_denoised=true"});
  const DitSampleArgs a = parse_dit_sample_args({{"ckpt", "runs/r/step_9"}}, cfg);
  EXPECT_EQ(a.options.sampler, "ddim");
  EXPECT_EQ(a.options.steps, 25);
  EXPECT_EQ(a.options.cfg_scale, 1.5);
  EXPECT_EQ(a.options.seed, 7u);
  EXPECT_EQ(a.options.batch, 3);
  EXPECT_EQ(a.options.eta, 0.5);
  EXPECT_TRUE(a.options.clip_denoised);
  EXPECT_EQ(a.num_samples, 64);
  EXPECT_TRUE(a.use_ema);
  EXPECT_EQ(a.out, "runs/r/step_9/samples_64_ddim25_cfg1.5_seed7");
  const DitSampleArgs b = parse_dit_sample_args({{"ckpt", "c"}, {"sampler", "ddpm"}, {"steps", "250"},
                                                 {"seed", "12"}, {"num_samples", "1000000"}, {"weights", "model"},
                                                 {"cfg_scale", "4"}, {"batch", "8"}},
                                                cfg);
  EXPECT_EQ(b.options.sampler, "ddpm");
  EXPECT_EQ(b.options.steps, 250);
  EXPECT_EQ(b.options.seed, 12u);
  EXPECT_EQ(b.options.batch, 8);
  EXPECT_EQ(b.num_samples, 1000000);
  EXPECT_FALSE(b.use_ema);
  EXPECT_EQ(b.out, "c/samples_1000000_ddpm250_cfg4_seed12");
  EXPECT_EQ(b.chunk, 0);  // dit_sample_to_files's default
  // chunk= is checked against the batch in effect (batch= or sample.batch).
  EXPECT_EQ(parse_dit_sample_args({{"ckpt", "c"}, {"batch", "8"}, {"chunk", "24"}}, cfg).chunk, 24);
  EXPECT_EQ(parse_dit_sample_args({{"ckpt", "c"}, {"chunk", "9"}}, cfg).chunk, 9);  // sample.batch 3
  const std::string msg = vt_test::error_of([&] { parse_dit_sample_args({{"ckpt", "c"}, {"chunk", "10"}}, cfg); });
  EXPECT_NE(msg.find("sample: chunk=10: expected a multiple of batch (3)"), std::string::npos) << msg;
  EXPECT_EQ(default_sample_chunk(3), 1023);
  EXPECT_EQ(default_sample_chunk(256), 1024);
  EXPECT_EQ(default_sample_chunk(2000), 2000);
}

// ckpt= a run directory means its newest complete checkpoint (as veval
// top1 takes it; it failed with "missing state.json"), and the default
// out= lies inside that checkpoint.
TEST(DitSampleArgs, ARunDirectoryMeansItsNewestCompleteCheckpoint) {
  const DitTrainConfig cfg = cfg_from(yaml_for("/tmp/unused", "/tmp/unused"));
  vt_test::TmpDir tmp;
  const std::string run = tmp.path() + "/r";
  for (const char* step : {"step_4", "step_12", "step_20"}) std::filesystem::create_directories(run + "/" + step);
  tmp.write("r/step_4/state.json", "{}");
  tmp.write("r/step_12/state.json", "{}");  // step_20 has none: unfinished
  const DitSampleArgs a = parse_dit_sample_args({{"ckpt", run}}, cfg);
  EXPECT_EQ(a.ckpt, run + "/step_12");
  EXPECT_EQ(a.out.rfind(run + "/step_12/samples_", 0), 0u) << a.out;
  EXPECT_EQ(parse_dit_sample_args({{"ckpt", run + "/step_4"}}, cfg).ckpt, run + "/step_4");  // a checkpoint as given
  const std::string msg = vt_test::error_of([&] { parse_dit_sample_args({{"ckpt", run + "/step_20"}}, cfg); });
  EXPECT_NE(msg.find("ckpt=" + run + "/step_20: neither a checkpoint"), std::string::npos) << msg;
}

TEST(DitSampleArgs, BadValuesNameTheKeyAndTheValue) {
  const DitTrainConfig cfg = cfg_from(yaml_for("/tmp/unused", "/tmp/unused"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"steps", "abc"},         {"steps", "3x"},        {"steps", ""},           {"steps", "0"},
      {"steps", "1001"},        {"steps", "2.5"},       {"batch", "0"},          {"batch", "-3"},
      {"batch", "5000"},        {"seed", "-1"},         {"seed", "99999999999999999999"},
      {"num_samples", "100000000000"},                  {"num_samples", "0"},    {"num_samples", "1000001"},
      {"cfg_scale", "inf"},     {"cfg_scale", "nan"},   {"cfg_scale", "2g"},     {"eta", "-1"},
      {"sampler", "euler"},     {"weights", "best"},    {"out", ""},             {"chunk", "0"},
      {"chunk", "x"},           {"chunk", "1000001"}};
  for (const auto& kv : bad) {
    const std::string msg = vt_test::error_of([&] { parse_dit_sample_args({{"ckpt", "c"}, kv}, cfg); });
    EXPECT_NE(msg.find(kv.first + "=" + kv.second), std::string::npos) << kv.first << "=" << kv.second << ": '" << msg
                                                                      << "'";
    EXPECT_THROW(parse_dit_sample_args({{"ckpt", "c"}, kv}, cfg), ConfigError);
  }
  EXPECT_NE(vt_test::error_of([&] { parse_dit_sample_args({{"steps", "5"}}, cfg); }).find("ckpt"), std::string::npos);
}

TEST(DitSampler, ChunksWithAnIndexBaseMatchOneCall) {
  // dit_sample_to_files draws large requests in chunks: samples [2, 5) drawn
  // alone with index_base 2 must equal those of the whole draw.
  DiTConfig c;
  c.input_size = 4, c.in_channels = 2, c.patch = 2, c.hidden = 8, c.depth = 1, c.heads = 2, c.num_classes = 3;
  DiT model(c);
  ParamStore& store = model.params();
  store.init(1);
  Philox rng(5, 6);
  Tensor w = store.weights();
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] += static_cast<float>(0.02 * rng.normal());
  model.set_pos_embed();
  SampleOptions so;
  so.sampler = "ddpm", so.steps = 3, so.seed = 4, so.batch = 8;
  const Tensor all = sample_images(model, so, {0, 1, 2, 0, 1});
  const Tensor part = sample_images(model, so, {2, 0, 1}, {}, /*index_base=*/2);
  const auto va = all.slice(0, 2, 5).contiguous().to_vector(), vb = part.contiguous().to_vector();
  ASSERT_EQ(va.size(), vb.size());
  double e = 0, m = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    e = std::max(e, std::fabs(static_cast<double>(va[i]) - vb[i]));
    m = std::max(m, std::fabs(static_cast<double>(va[i])));
  }
  EXPECT_LT(e, 1e-5 * m);
  EXPECT_GT(m, 0.1);
  // ... and a different base gives different noise.
  const Tensor shifted = sample_images(model, so, {2, 0, 1}, {}, /*index_base=*/0);
  EXPECT_NE(shifted.contiguous().to_vector(), vb);
}

// model.preset gives the defaults of depth/hidden/heads/patch; a key given in
// the config overrides it (DiT_S_4(depth=1)), and config.yaml records what
// trains. The keys were silently ignored under a preset.
TEST(DitSetup, GivenModelKeysOverrideThePreset) {
  const std::string y =
      "name: r\nout_dir: /tmp/unused\nmodel: {preset: DiT-S/4, input_size: 8, in_channels: 3, depth: 1, num_classes: 3}\n"
      "data: {kind: images, root: /tmp/unused, workers: 1}\ntrain: {batch_size: 2, steps: 1}\nsample: {every: 0}\n";
  const DitTrainConfig t = cfg_from(y);
  EXPECT_EQ(t.model.depth, 1);     // given
  EXPECT_EQ(t.model.hidden, 384);  // DiT-S
  EXPECT_EQ(t.model.heads, 6);
  EXPECT_EQ(t.model.patch, 4);
  EXPECT_EQ(t.resolved.get<int>("model.depth"), 1);
  EXPECT_EQ(t.resolved.get<int>("model.patch"), 4);  // the schema default is 2
  EXPECT_EQ(t.resolved.source("model.patch"), "model.preset DiT-S/4");
  EXPECT_EQ(t.resolved.get<int>("model.hidden"), 384);
  // The saved config builds the same model.
  const DitTrainConfig again = cfg_from(t.resolved.to_yaml());
  EXPECT_EQ(again.model.depth, 1);
  EXPECT_EQ(again.model.patch, 4);
  EXPECT_EQ(again.digest, t.digest);
  // Without a preset the keys (defaults included) are the model.
  const DitTrainConfig plain = cfg_from(y, {"model.preset=~"});
  EXPECT_EQ(plain.model.patch, 2);
  EXPECT_EQ(plain.model.depth, 1);
}

// out= is checked before the checkpoint is read and any sample drawn (it was
// checked when the samples were written: an FID-50K job lost its hours on
// a typo). The checkpoint here does not exist: the out= error comes first.
TEST(DitSetup, SampleChecksItsOutputBeforeSampling) {
  vt_test::TmpDir tmp;
  const DitTrainConfig t = cfg_from(yaml_for(tmp.file("runs"), tmp.file("data")));
  const std::string ckpt = tmp.file("no_checkpoint");
  tmp.write("afile", "x");
  std::string msg = vt_test::error_of([&] { dit_sample_to_files(t, ckpt, 2, t.grid, tmp.file("afile/s"), true); });
  EXPECT_NE(msg.find("sample: out=" + tmp.file("afile/s") + ": cannot create directory '" + tmp.file("afile") + "'"),
            std::string::npos) << msg;
  fs::create_directories(tmp.file("taken.png"));
  msg = vt_test::error_of([&] { dit_sample_to_files(t, ckpt, 2, t.grid, tmp.file("taken"), true); });
  EXPECT_NE(msg.find("'" + tmp.file("taken.png") + "' is a directory"), std::string::npos) << msg;
  // A good out= gets to the checkpoint, and its new parent directory exists.
  msg = vt_test::error_of([&] { dit_sample_to_files(t, ckpt, 2, t.grid, tmp.file("new/dir/s"), true); });
  EXPECT_NE(msg.find(ckpt), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_directory(tmp.file("new/dir")));
}

// data.on_corrupt=skip with a class of unreadable images only: a warning at
// start, in log.txt too.
TEST(DitSetup, AClassWithoutAReadableImageIsAWarningAtStart) {
  vt_test::TmpDir tmp;
  write_images(tmp.file("img"), 3);
  for (int i = 0; i < 2; ++i) std::ofstream(tmp.file("img/c1/" + std::to_string(i) + ".png"), std::ios::trunc) << "x";
  DitTrainer t(cfg_from(yaml_for(tmp.file("out"), tmp.file("img")), {"data.on_corrupt=skip"}));
  t.train();
  std::ifstream in(tmp.file("out/r/log.txt"));
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("[warning] data: no image of class 'c1' in data.root '" + tmp.file("img") + "' can be read"),
            std::string::npos) << log;
  EXPECT_EQ(log.find("class 'c0'"), std::string::npos) << log;
}

}  // namespace

// "Did you mean" on dittrain keys a new user typed (issue examples).
std::string dit_suggested(const std::string& key) {
  try {
    Config::parse("data: {root: x}\n", dittrain_schema(), {key + "=1"}, "test.yaml", ".");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    const size_t at = m.find("did you mean '");
    if (at == std::string::npos) return "(none)";
    return m.substr(at + 14, m.find('\'', at + 14) - at - 14);
  }
  return "(accepted)";
}

TEST(DitSetup, DidYouMeanFollowsTheLastComponent) {
  // Was diffusion.t0_term; a key named "steps" (sample.steps or train.steps) is what was meant.
  const std::string steps = dit_suggested("diffusion.steps");
  EXPECT_TRUE(steps == "sample.steps" || steps == "train.steps") << steps;
  EXPECT_EQ(dit_suggested("cfg"), "sample.cfg_scale");          // was log
  EXPECT_EQ(dit_suggested("step"), "train.steps");              // was seed
  EXPECT_EQ(dit_suggested("train.stepz"), "train.steps");
  EXPECT_EQ(dit_suggested("train.learning_rate"), "train.lr");
}

}  // namespace vt
