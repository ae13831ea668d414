// `dittrain sample` in resumable chunks (diffusion/dit_sample_files.h,
// diffusion/sample_partial.h): chunked output equals one chunk and the
// sampler itself; a run killed (SIGKILL) or stopped (SIGTERM, exit 3) after
// some chunks continues to an npz byte-identical to an uninterrupted run's;
// other arguments are refused naming the key; a damaged chunk file is named;
// the partial directory is gone after success. The kill and stop tests run
// the dittrain program as a child process (VT_TEST_SAMPLE_KILL_AFTER_CHUNKS).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "core/file_lock.h"
#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "diffusion/dit_sample_files.h"
#include "diffusion/dit_trainer.h"
#include "diffusion/sample_partial.h"
#include "diffusion/sampler.h"
#include "diffusion/vae_decode_samples.h"
#include "test_fs.h"

namespace vt {
namespace {
namespace fs = std::filesystem;

const std::string kVae = std::string(VT_FIXTURES_DIR) + "/vae/narrow";  // latent_channels 4, 8x

// A latent DiT (8x8x4 latents, 3 classes) trained 2 steps on random latents:
// <tmp>/r/step_2, and its config as YAML (also written to <tmp>/dit.yaml for
// the program). sample.batch (the VAE's decode batch too) is 2.
struct TinyRun {
  std::string yaml, yaml_path, ckpt;
  DitTrainConfig cfg;
};

TinyRun tiny_run(const vt_test::TmpDir& tmp) {
  const std::string lat = tmp.file("lat");
  fs::create_directories(lat);
  Tensor x = Tensor::empty({8, 4, 8, 8});
  Philox rng(3, 4);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>(5.0 * rng.normal());
  Tensor y = Tensor::empty({8}, DType::I32);
  for (int i = 0; i < 8; ++i) y.i32()[i] = i % 3;
  save_safetensors(lat + "/shard_000.safetensors", {{"latents", x}, {"labels", y}});
  TinyRun r;
  r.yaml = "name: r\nout_dir: " + tmp.path() + "\nseed: 9\n" +
           "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 2, heads: 2, num_classes: 3}\n"
           "data: {kind: latents, root: " + lat + ", workers: 1}\n"
           "train: {batch_size: 4, steps: 2, lr: 1.0e-2, ema_decay: 0.5}\n"
           "log: {every_steps: 1, tensorboard: false}\nckpt: {every_steps: 100}\n"
           "sample: {every: 0, batch: 2, sampler: ddim, steps: 3, cfg_scale: 1.5}\n";
  r.cfg = dit_train_config(Config::parse(r.yaml, dittrain_schema()));
  DitTrainer(r.cfg).train();
  r.ckpt = tmp.file("r/step_2");
  r.yaml_path = tmp.write("dit.yaml", r.yaml);
  return r;
}

#ifdef VT_DITTRAIN_EXE
// Runs a shell command; its exit status, or 128 + the signal that killed it.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) *out += buf;
  const int st = p ? pclose(p) : -1;
  if (st == -1) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// `dittrain sample` of the tiny run: 10 samples, batch 2 (sample.batch), chunks of 4 (3
// chunks: 4 + 4 + 2), decoded with the narrow VAE.
std::string sample_cmd(const TinyRun& r, const std::string& out, const std::string& extra = "") {
  return std::string(VT_DITTRAIN_EXE) + " sample " + r.yaml_path + " ckpt=" + r.ckpt +
         " num_samples=10 chunk=4 vae=" + kVae + " out=" + out + " " + extra;
}

std::vector<std::string> chunk_files(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("chunk_", 0) == 0) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
#endif

// Chunks of 2 and one chunk of 8 give the same bytes, and the latents are
// those of sample_images on the checkpoint's EMA weights with the npz's
// labels, divided by data.latent_scale (no VAE: the npz holds latents).
TEST(DitSampleFiles, ChunkedEqualsOneChunkAndTheSampler) {
  vt_test::TmpDir tmp;
  const TinyRun r = tiny_run(tmp);
  SampleRequest q;
  q.ckpt = r.ckpt, q.num_samples = 7, q.options = r.cfg.grid;
  q.out = tmp.file("c2"), q.chunk = 2;
  dit_sample_to_files(r.cfg, q);
  q.out = tmp.file("c8"), q.chunk = 8;
  dit_sample_to_files(r.cfg, q);
  EXPECT_EQ(read_file(tmp.file("c2.npz")), read_file(tmp.file("c8.npz")));
  EXPECT_FALSE(fs::exists(tmp.file("c2.partial")));
  EXPECT_FALSE(fs::exists(tmp.file("c8.partial")));
  EXPECT_TRUE(fs::is_regular_file(tmp.file("c2.png")));

  const auto npz = load_npz(tmp.file("c2.npz"));
  ASSERT_TRUE(npz.count("latents") && npz.count("labels"));
  ASSERT_EQ(npz.at("latents").shape, (Shape{7, 4, 8, 8}));
  std::vector<int32_t> labels;
  for (int64_t y : npz.at("labels").as<int64_t>()) {
    EXPECT_TRUE(y >= 0 && y < 3) << y;
    labels.push_back(static_cast<int32_t>(y));
  }
  DiT model(r.cfg.model);
  model.load(load_checkpoint(r.ckpt, {/*optimizer=*/false}).ema);
  const std::vector<float> want = sample_images(model, r.cfg.grid, labels).contiguous().to_vector();
  const std::vector<float> got = npz.at("latents").as<float>();
  ASSERT_EQ(got.size(), want.size());
  const float inv = static_cast<float>(1.0 / r.cfg.latent_scale);
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i] * inv;
  EXPECT_EQ(differ, 0u);
}

// The manifest: same keys continue, another value or a missing key is
// refused naming the key, both values and the directory; chunk files are
// recognised by name, temporaries of cut-short writes removed.
TEST(SamplePartial, ManifestDecidesWhetherARunContinues) {
  vt_test::TmpDir tmp;
  const std::string out = tmp.file("s");
  const SamplePartial::Keys keys = {{"seed", "0"}, {"steps", "3"}};
  {
    SamplePartial p(out, keys, {{"ckpt", "a"}}, 3);
    EXPECT_EQ(p.dir(), out + ".partial");
    EXPECT_EQ(p.chunks_done(), 0);
    p.write(1, {{"x", NpyArray::from(std::vector<float>{1, 2}, {2})}});
    EXPECT_EQ(p.chunk_path(1), out + ".partial/chunk_000001.npz");
  }
  tmp.write("s.partial/chunk_000002.npz.tmp.4242", "half a write");
  {
    SamplePartial p(out, keys, {{"ckpt", "elsewhere"}}, 3);  // info does not decide
    EXPECT_FALSE(p.done(0));
    EXPECT_TRUE(p.done(1));
    EXPECT_FALSE(p.done(2));
    EXPECT_FALSE(fs::exists(tmp.file("s.partial/chunk_000002.npz.tmp.4242")));
  }
  std::string e = vt_test::error_of([&] { SamplePartial(out, {{"seed", "1"}, {"steps", "3"}}, {}, 3); });
  EXPECT_NE(e.find("'" + out + ".partial' holds samples of a run with seed = 0, this run has seed = 1"),
            std::string::npos) << e;
  EXPECT_NE(e.find("delete '" + out + ".partial' (or give overwrite=true) to start over"), std::string::npos) << e;
  e = vt_test::error_of([&] { SamplePartial(out, {{"seed", "0"}}, {}, 3); });
  EXPECT_NE(e.find("steps = 3, this run has steps = (none)"), std::string::npos) << e;
  e = vt_test::error_of([&] { SamplePartial(out, {{"seed", "0"}, {"steps", "3"}, {"eta", "0"}}, {}, 3); });
  EXPECT_NE(e.find("eta = (none), this run has eta = 0"), std::string::npos) << e;
  // A chunk index the run cannot have.
  e = vt_test::error_of([&] { SamplePartial(out, keys, {}, 1); });
  EXPECT_NE(e.find("chunk_000001.npz"), std::string::npos) << e;
  // Nothing was removed by the refusals.
  EXPECT_TRUE(fs::exists(out + ".partial/chunk_000001.npz"));
  // Chunk files without their manifest cannot be trusted.
  fs::remove(out + ".partial/manifest.json");
  e = vt_test::error_of([&] { SamplePartial(out, keys, {}, 3); });
  EXPECT_NE(e.find(out + ".partial/manifest.json' is missing"), std::string::npos) << e;
  tmp.write("s.partial/manifest.json", "{not json");
  e = vt_test::error_of([&] { SamplePartial(out, keys, {}, 3); });
  EXPECT_NE(e.find(out + ".partial/manifest.json'"), std::string::npos) << e;
}

#ifdef VT_DITTRAIN_EXE
// SIGKILL after 2 of 3 chunks: the chunk files stay, the rerun says so and
// ends with the bytes of an uninterrupted run, and the partial directory is
// removed. The decoded images are the VAE's decode of the latents a run
// without VAE writes (the same decode batches of 2).
TEST(DitSampleFiles, KilledRunContinuesToTheSameBytes) {
  vt_test::TmpDir tmp;
  const TinyRun r = tiny_run(tmp);
  std::string log;
  ASSERT_EQ(run(sample_cmd(r, tmp.file("ref")), &log), 0) << log;
  ASSERT_FALSE(fs::exists(tmp.file("ref.partial"))) << log;

  log.clear();
  EXPECT_EQ(run("VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=2 " + sample_cmd(r, tmp.file("k")), &log), 128 + SIGKILL) << log;
  EXPECT_FALSE(fs::exists(tmp.file("k.npz")));
  EXPECT_EQ(chunk_files(tmp.file("k.partial")), (std::vector<std::string>{"chunk_000000.npz", "chunk_000001.npz"}));
  EXPECT_TRUE(fs::exists(tmp.file("k.partial/manifest.json")));

  log.clear();
  ASSERT_EQ(run(sample_cmd(r, tmp.file("k")), &log), 0) << log;
  EXPECT_NE(log.find("resuming: 8 of 10 samples already done"), std::string::npos) << log;
  EXPECT_EQ(read_file(tmp.file("k.npz")), read_file(tmp.file("ref.npz")));
  EXPECT_FALSE(fs::exists(tmp.file("k.partial")));

  // Killed during the assembly, after chunks 0 and 1 were copied into the
  // assembly file and removed (then after all three): the rows are in the
  // chunks left and the assembly file, and the rerun finishes the same bytes.
  for (const char* copied : {"2", "3"}) {
    SCOPED_TRACE(copied);
    const std::string out = tmp.file(std::string("a") + copied);
    log.clear();
    EXPECT_EQ(run(std::string("VT_TEST_SAMPLE_KILL_AFTER_COPIED=") + copied + " " + sample_cmd(r, out), &log),
              128 + SIGKILL)
        << log;
    EXPECT_FALSE(fs::exists(out + ".npz"));
    EXPECT_TRUE(fs::exists(out + ".partial/assembly.npz.part"));
    EXPECT_EQ(chunk_files(out + ".partial"), std::string(copied) == "2" ? std::vector<std::string>{"chunk_000002.npz"}
                                                                        : std::vector<std::string>{});
    log.clear();
    ASSERT_EQ(run(sample_cmd(r, out), &log), 0) << log;
    EXPECT_NE(log.find("resuming: 10 of 10 samples already done"), std::string::npos) << log;
    EXPECT_EQ(read_file(out + ".npz"), read_file(tmp.file("ref.npz")));
    EXPECT_FALSE(fs::exists(out + ".partial"));
  }

  const auto got = load_npz(tmp.file("k.npz"));
  ASSERT_TRUE(got.count("arr_0"));
  EXPECT_FALSE(got.count("latents"));
  EXPECT_EQ(got.at("arr_0").shape, (Shape{10, 64, 64, 3}));
  SampleRequest q;
  q.ckpt = r.ckpt, q.num_samples = 10, q.options = r.cfg.grid, q.out = tmp.file("lat");
  dit_sample_to_files(r.cfg, q);
  const auto lat = load_npz(tmp.file("lat.npz"));
  EXPECT_EQ(lat.at("labels").bytes, got.at("labels").bytes);
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  const Tensor want = vae_decode_to_uint8(vae, lat.at("latents").to_tensor(), 2, "test");
  EXPECT_EQ(NpyArray::from_tensor(want).bytes, got.at("arr_0").bytes);
}

// SIGTERM (a stop signal) after the first chunk: exit status 3 with the
// finished chunk kept and the unfinished one dropped; the rerun completes
// to the uninterrupted bytes.
TEST(DitSampleFiles, StopSignalKeepsFinishedChunksAndExits3) {
  vt_test::TmpDir tmp;
  const TinyRun r = tiny_run(tmp);
  std::string log;
  ASSERT_EQ(run(sample_cmd(r, tmp.file("ref")), &log), 0) << log;
  log.clear();
  EXPECT_EQ(run("VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=1:SIGTERM " + sample_cmd(r, tmp.file("t")), &log), 3) << log;
  EXPECT_NE(log.find("stopped by SIGTERM: 4 of 10 samples are saved in " + tmp.file("t.partial")), std::string::npos)
      << log;
  EXPECT_EQ(chunk_files(tmp.file("t.partial")), std::vector<std::string>{"chunk_000000.npz"});
  EXPECT_FALSE(fs::exists(tmp.file("t.npz")));
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, tmp.file("t")), &log), 0) << log;
  EXPECT_NE(log.find("resuming: 4 of 10 samples already done"), std::string::npos) << log;
  EXPECT_EQ(read_file(tmp.file("t.npz")), read_file(tmp.file("ref.npz")));
  EXPECT_FALSE(fs::exists(tmp.file("t.partial")));
}

// A rerun with another seed, steps, batch, weights or VAE is refused naming
// the key, both values and the partial directory, and loses nothing; a
// damaged chunk file is named (with the remedy), and once it is deleted the
// rerun draws it again and ends with the uninterrupted bytes.
TEST(DitSampleFiles, OtherArgumentsAndDamagedChunksAreNamed) {
  vt_test::TmpDir tmp;
  const TinyRun r = tiny_run(tmp);
  std::string log;
  ASSERT_EQ(run(sample_cmd(r, tmp.file("ref")), &log), 0) << log;
  log.clear();
  ASSERT_EQ(run("VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=2 " + sample_cmd(r, tmp.file("k")), &log), 128 + SIGKILL) << log;
  const std::string dir = tmp.file("k.partial");
  const std::vector<std::string> two = {"chunk_000000.npz", "chunk_000001.npz"};
  ASSERT_EQ(chunk_files(dir), two);
  const std::string chunk0 = read_file(dir + "/chunk_000000.npz");
  const std::vector<std::pair<std::string, std::string>> changed = {
      {"seed=5", "seed = 0, this run has seed = 5"},
      {"steps=4", "steps = 3, this run has steps = 4"},
      {"batch=1", "batch = 2, this run has batch = 1"},
      {"weights=model", "weights = ema, this run has weights = model"}};
  for (const auto& [arg, says] : changed) {
    log.clear();
    EXPECT_EQ(run(sample_cmd(r, tmp.file("k"), arg), &log), 1) << arg << ": " << log;
    EXPECT_NE(log.find("'" + dir + "' holds samples of a run with " + says), std::string::npos) << arg << ": " << log;
    EXPECT_NE(log.find("delete '" + dir + "' (or give overwrite=true) to start over"), std::string::npos) << log;
  }
  // No VAE (latents instead of decoded images).
  log.clear();
  const std::string no_vae = std::string(VT_DITTRAIN_EXE) + " sample " + r.yaml_path + " ckpt=" + r.ckpt +
                             " num_samples=10 chunk=4 out=" + tmp.file("k");
  EXPECT_EQ(run(no_vae, &log), 1) << log;
  EXPECT_NE(log.find("holds samples of a run with vae_sha256 = "), std::string::npos) << log;
  EXPECT_EQ(chunk_files(dir), two);
  EXPECT_EQ(read_file(dir + "/chunk_000000.npz"), chunk0);

  // A truncated chunk file.
  const std::string c1 = dir + "/chunk_000001.npz";
  const std::string bytes = read_file(c1);
  std::ofstream(c1, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, tmp.file("k")), &log), 1) << log;
  EXPECT_NE(log.find(c1), std::string::npos) << log;
  EXPECT_NE(log.find("delete this file and rerun to draw its samples again"), std::string::npos) << log;
  // A chunk file holding another chunk's rows (a copy of chunk 0): its labels differ.
  std::ofstream(c1, std::ios::binary | std::ios::trunc) << chunk0;
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, tmp.file("k")), &log), 1) << log;
  EXPECT_NE(log.find("chunk file '" + c1 + "': label of sample "), std::string::npos) << log;

  fs::remove(c1);
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, tmp.file("k")), &log), 0) << log;
  EXPECT_NE(log.find("resuming: 4 of 10 samples already done"), std::string::npos) << log;
  EXPECT_EQ(read_file(tmp.file("k.npz")), read_file(tmp.file("ref.npz")));
  EXPECT_FALSE(fs::exists(dir));
}

// A finished npz records what made it: the same arguments are done (nothing
// drawn, exit 0), other arguments are refused naming the key, both values
// and the file, overwrite=true replaces it (it was silently redrawn or
// replaced). out= gets the name given; a directory gets the default name.
// A second sampler on the same out= is refused at once.
TEST(DitSampleFiles, AFinishedOutputIsDoneOrRefusedUnlessOverwrite) {
  vt_test::TmpDir tmp;
  const TinyRun r = tiny_run(tmp);
  const std::string f = tmp.file("f");
  std::string log;
  ASSERT_EQ(run(sample_cmd(r, f), &log), 0) << log;
  const std::string first = read_file(f + ".npz");
  EXPECT_TRUE(fs::exists(f + ".npz.manifest.json"));
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, f), &log), 0) << log;
  EXPECT_NE(log.find("sample: " + f + ".npz is done: it was made with these arguments"), std::string::npos) << log;
  EXPECT_EQ(log.find("wrote"), std::string::npos) << log;
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, f, "seed=5"), &log), 1) << log;
  EXPECT_NE(log.find("sample: '" + f + ".npz' was made with seed = 0; this run has seed = 5: rerun with that run's "
                     "arguments (then it is done), give another out=, or overwrite=true to replace it"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_file(f + ".npz"), first);
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, f, "seed=5 overwrite=true"), &log), 0) << log;
  EXPECT_NE(read_file(f + ".npz"), first);
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, f, "seed=5"), &log), 0) << log;  // now made with seed 5
  EXPECT_NE(log.find("is done"), std::string::npos) << log;
  // An npz that records nothing (written by something else) is refused.
  tmp.write("other.npz", "not ours");
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, tmp.file("other")), &log), 1) << log;
  EXPECT_NE(log.find("'" + tmp.file("other.npz") + "' exists and records nothing of what made it"), std::string::npos)
      << log;
  EXPECT_EQ(read_file(tmp.file("other.npz")), "not ours");
  // A PATH.png no sample of this out= made is not replaced either.
  tmp.write("pic.png", "my picture");
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, tmp.file("pic")), &log), 1) << log;
  EXPECT_NE(log.find("'" + tmp.file("pic.png") + "' exists, and no '" + tmp.file("pic.npz") + "' of a sample made it"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_file(tmp.file("pic.png")), "my picture");
  // An npz changed after it was written is not done.
  tmp.write("f.npz", "cut short");
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, f, "seed=5"), &log), 1) << log;
  EXPECT_NE(log.find("'" + f + ".npz' was changed after it was written"), std::string::npos) << log;
  // Names: x.npz is x.npz; DIR/ gets the default name inside it.
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, tmp.file("named.npz")), &log), 0) << log;
  EXPECT_TRUE(fs::exists(tmp.file("named.npz")));
  EXPECT_FALSE(fs::exists(tmp.file("named.npz.npz")));
  EXPECT_TRUE(fs::exists(tmp.file("named.png")));
  log.clear();
  ASSERT_EQ(run(sample_cmd(r, tmp.file("dir") + "/"), &log), 0) << log;
  EXPECT_TRUE(fs::exists(tmp.file("dir/samples_10_ddim3_cfg1.5_seed0.npz"))) << log;
  EXPECT_FALSE(fs::exists(tmp.file("dir/.npz")));
  // One writer per out=: the lock held here refuses the program before it draws.
  const FileLock held(tmp.file(".busy.npz.lock"));
  log.clear();
  EXPECT_EQ(run(sample_cmd(r, tmp.file("busy")), &log), 1) << log;
  EXPECT_NE(log.find("sample: '" + tmp.file("busy.npz") + "' is being written by another process (pid "),
            std::string::npos)
      << log;
  EXPECT_FALSE(fs::exists(tmp.file("busy.partial")));
}
#endif

}  // namespace
}  // namespace vt
