// Data parallel over MPI processes, end to end (label mpi): vtrain and
// `veval top1` (and dittrain) launched with mpirun -np 1..4 on a small ImageFolder cut from
// the CIFAR-10 JPEGs. The one-process run is the reference every
// multi-process run is compared with (same global batch, same data order
// and augmentations): per-step loss within 1e-6 relative, final parameters
// within 1e-5; evaluation counts identical; resuming with another world
// size; a failing rank ends the job. Skipped when mpirun is missing or the
// build has no MPI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dist.h"
#include "core/npz.h"
#include "core/safetensors.h"
#include "test_fs.h"

namespace fs = std::filesystem;

namespace {

const std::string kMpiexec = VT_MPIEXEC;
const std::string kVtrain = VT_VTRAIN_EXE;
const std::string kVeval = VT_VEVAL_EXE;
const std::string kDittrain = VT_DITTRAIN_EXE;
const std::string kCifar = std::string(VT_SHARED_DATA_DIR) + "/cifar10";

#define SKIP_WITHOUT_MPI()                                                                   \
  do {                                                                                       \
    if (kMpiexec.empty() || !fs::exists(kMpiexec)) GTEST_SKIP() << "mpirun not found";       \
    if (!vt::dist_built_with_mpi()) GTEST_SKIP() << "built without MPI (VT_MPI=OFF)";        \
    if (!fs::is_directory(kCifar + "/train")) GTEST_SKIP() << "no CIFAR-10 at " << kCifar;   \
  } while (0)

struct Result {
  int rc = -1;
  std::string out;  // stdout and stderr
  double seconds = 0;
};

Result sh(const std::string& cmd) {
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// mpirun as CI runs it: local shared memory only, oversubscribed, as root
// allowed, one OpenMP thread per rank.
std::string mpirun(int np) {
  return "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE OMPI_MCA_btl=self,vader "
         "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 "
         "OMPI_MCA_hwloc_base_binding_policy=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
         "timeout 120 " + kMpiexec + " -np " + std::to_string(np) + " ";
}

// <dir>/train: 4 classes x 30 images, <dir>/val: 4 classes x 5 + 1 image
// (21: divisible by none of 2, 3, 4).
void make_dataset(const std::string& dir) {
  const char* classes[] = {"airplane", "automobile", "bird", "cat"};
  for (int c = 0; c < 4; ++c) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(kCifar + "/train/" + classes[c])) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 36u);
    fs::create_directories(dir + "/train/" + classes[c]);
    fs::create_directories(dir + "/val/" + classes[c]);
    for (int i = 0; i < 30; ++i) fs::copy_file(files[i], dir + "/train/" + classes[c] + "/" + files[i].filename().string());
    const int nval = c == 0 ? 6 : 5;
    for (int i = 0; i < nval; ++i)
      fs::copy_file(files[30 + i], dir + "/val/" + classes[c] + "/" + files[30 + i].filename().string());
  }
}

// A tiny ViT with the DeiT augmentations that are keyed by sample
// (RandomResizedCrop, flip, RandAugment, RandomErasing); Mixup/CutMix and
// drop path off here (their own test below).
// Global batch 24 = 1, 2, 3 x.
std::string vtrain_args(const std::string& data, const std::string& out, const std::string& name, int max_steps) {
  return kVtrain + " cifar10_vit_tiny_siamese data.root=" + data + " out_dir=" + out + " name=" + name +
         " data.val_split=val model.dim=32 model.depth=2 model.heads=2 model.patch_size=8 data.rand_augment=true "
         "data.random_erasing=0.25 train.batch_size=24 train.epochs=20 train.max_steps=" +
         std::to_string(max_steps) + " train.warmup_epochs=1 log.every_steps=1 eval.batch_size=4 "
         "ckpt.every_epochs=0 data.workers=1";
}

// A tiny pixel DiT on the same images (4 classes), label dropout raised so
// that every step drops some; global batch 24 (5 steps per epoch).
std::string dittrain_args(const std::string& data, const std::string& out, const std::string& name, int max_steps) {
  return kDittrain + " cifar10_dit_siamese data.root=" + data + "/train out_dir=" + out + " name=" + name +
         " model.hidden=32 model.depth=2 model.heads=2 model.patch=8 model.num_classes=4 model.class_dropout=0.3"
         " train.batch_size=24 train.steps=10 train.max_steps=" + std::to_string(max_steps) +
         " log.every_steps=1 sample.every=0 ckpt.every_steps=0 data.workers=1 resume=auto";
}

std::map<int64_t, double> train_losses(const std::string& run) {
  std::map<int64_t, double> m;
  std::ifstream f(run + "/metrics.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("split", "") == "train" && !j.contains("event") && j.contains("loss"))
      m[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return m;
}

// step -> (top1, loss) of vtrain's evaluations of the model (split val).
std::map<int64_t, std::pair<double, double>> val_evals(const std::string& run) {
  std::map<int64_t, std::pair<double, double>> m;
  std::ifstream f(run + "/metrics.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("split", "") == "val") m[j["step"].get<int64_t>()] = {j["top1"].get<double>(), j["loss"].get<double>()};
  }
  return m;
}

void expect_same_losses(const std::map<int64_t, double>& ref, const std::map<int64_t, double>& got, int64_t from,
                        int64_t to, const std::string& what) {
  for (int64_t s = from; s <= to; ++s) {
    ASSERT_TRUE(ref.count(s) && got.count(s)) << what << ": step " << s << " missing";
    EXPECT_NEAR(got.at(s), ref.at(s), 1e-6 * std::abs(ref.at(s))) << what << ": loss at step " << s;
  }
}

void expect_same_params(const std::string& ref_ckpt, const std::string& ckpt, const std::string& what) {
  const auto a = vt::load_safetensors(ref_ckpt + "/model.safetensors");
  const auto b = vt::load_safetensors(ckpt + "/model.safetensors");
  ASSERT_EQ(a.size(), b.size());
  // The key bias (middle third of attn.qkv.bias) has a gradient of exactly
  // zero in exact arithmetic (softmax is shift invariant along a key), so
  // its computed gradient is round-off, which depends on the summation
  // order, and AdamW scales it to steps of up to lr. It is held to
  // steps x lr (measured: ~1e-5; every other parameter ~1e-7).
  double worst = 0, worst_key_bias = 0;
  for (const auto& [k, t] : a) {
    ASSERT_TRUE(b.count(k)) << k;
    const vt::Tensor& u = b.at(k);
    ASSERT_EQ(t.numel(), u.numel()) << k;
    const bool qkv_bias = k.size() >= 13 && k.compare(k.size() - 13, 13, "attn.qkv.bias") == 0;
    const int64_t n3 = t.numel() / 3;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double d = std::abs(double(t.f32()[i]) - u.f32()[i]);
      if (qkv_bias && i >= n3 && i < 2 * n3) worst_key_bias = std::max(worst_key_bias, d);
      else worst = std::max(worst, d);
    }
  }
  EXPECT_LT(worst, 1e-5) << what << ": largest parameter difference";
  EXPECT_LT(worst_key_bias, 20 * 1e-3) << what << ": largest key-bias difference";
}

}  // namespace

TEST(DataParallel, TwoAndThreeRanksMatchOneRank) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  Result r1 = sh(mpirun(1) + vtrain_args(tmp.file("data"), out, "np1", 20));
  ASSERT_EQ(r1.rc, 0) << r1.out;
  const auto ref = train_losses(out + "/np1");
  for (int np : {2, 3}) {
    const std::string name = "np" + std::to_string(np);
    Result r = sh(mpirun(np) + vtrain_args(tmp.file("data"), out, name, 20));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("rank 1 of " + std::to_string(np) + ": host"), std::string::npos) << r.out;
    expect_same_losses(ref, train_losses(out + "/" + name), 1, 20, name);
    expect_same_params(out + "/np1/step_20", out + "/" + name + "/step_20", name);
    // Only rank 0 writes: one metrics line per step.
    EXPECT_EQ(train_losses(out + "/" + name).size(), 20u);
    // vtrain's own evaluations (every epoch) over the 21 images split by rank.
    const auto ev1 = val_evals(out + "/np1"), evn = val_evals(out + "/" + name);
    ASSERT_EQ(ev1.size(), 4u);
    ASSERT_EQ(evn.size(), ev1.size());
    for (const auto& [step, v] : ev1) {
      EXPECT_EQ(evn.at(step).first, v.first) << name << ": top-1 at step " << step;
      EXPECT_NEAR(evn.at(step).second, v.second, 1e-5 * std::abs(v.second)) << name << ": val loss at step " << step;
    }
  }
}

// Drop path on (model.drop_path 0.3 over 2 blocks) and Mixup/CutMix on
// (switching between them per batch): each sample's mask is keyed by its
// global row and its mixing partner is global row B-1-i, so ranks train the
// one-process model.
TEST(DataParallel, DropPathAndMixupRanksMatchOneRank) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  const std::string dp = " model.drop_path=0.3 data.mixup=0.8 data.cutmix=1.0 data.mixup_prob=1.0";
  Result r1 = sh(mpirun(1) + vtrain_args(tmp.file("data"), out, "np1", 10) + dp);
  ASSERT_EQ(r1.rc, 0) << r1.out;
  const auto ref = train_losses(out + "/np1");
  for (int np : {2, 3}) {
    const std::string name = "np" + std::to_string(np);
    Result r = sh(mpirun(np) + vtrain_args(tmp.file("data"), out, name, 10) + dp);
    ASSERT_EQ(r.rc, 0) << r.out;
    expect_same_losses(ref, train_losses(out + "/" + name), 1, 10, "drop path + mixup " + name);
    expect_same_params(out + "/np1/step_10", out + "/" + name + "/step_10", "drop path + mixup " + name);
  }
}

TEST(DataParallel, ResumeWithAnotherWorldSize) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  Result r1 = sh(mpirun(1) + vtrain_args(tmp.file("data"), out, "ref", 20));
  ASSERT_EQ(r1.rc, 0) << r1.out;
  // Stops mid-epoch (5 steps per epoch) at step 8, resumed with 3 ranks.
  Result a = sh(mpirun(2) + vtrain_args(tmp.file("data"), out, "split", 8));
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_TRUE(fs::is_directory(out + "/split/step_8"));
  Result b = sh(mpirun(3) + vtrain_args(tmp.file("data"), out, "split", 20));
  ASSERT_EQ(b.rc, 0) << b.out;
  expect_same_losses(train_losses(out + "/ref"), train_losses(out + "/split"), 9, 20, "resumed with 3 ranks");
  expect_same_params(out + "/ref/step_20", out + "/split/step_20", "resumed with 3 ranks");
}

// dittrain: the step's samples, flips, timesteps, noise and dropped labels
// are keyed by global row, so 2 and 3 ranks train the one-process model;
// a run stopped under 2 ranks resumes under 3.
TEST(DataParallel, DittrainRanksMatchOneRank) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string data = tmp.file("data"), out = tmp.file("runs");
  Result r1 = sh(mpirun(1) + dittrain_args(data, out, "np1", 10));
  ASSERT_EQ(r1.rc, 0) << r1.out;
  const auto ref = train_losses(out + "/np1");
  for (int np : {2, 3}) {
    const std::string name = "np" + std::to_string(np);
    Result r = sh(mpirun(np) + dittrain_args(data, out, name, 10));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("(" + std::to_string(np) + " processes x " + std::to_string(24 / np) + ")"),
              std::string::npos)
        << r.out;
    expect_same_losses(ref, train_losses(out + "/" + name), 1, 10, "dittrain " + name);
    EXPECT_EQ(train_losses(out + "/" + name).size(), 10u) << "only rank 0 writes";
    expect_same_params(out + "/np1/step_10", out + "/" + name + "/step_10", "dittrain " + name);
  }
  Result a = sh(mpirun(2) + dittrain_args(data, out, "split", 7));
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_TRUE(fs::is_directory(out + "/split/step_7"));
  Result b = sh(mpirun(3) + dittrain_args(data, out, "split", 10));
  ASSERT_EQ(b.rc, 0) << b.out;
  expect_same_losses(ref, train_losses(out + "/split"), 8, 10, "dittrain resumed with 3 ranks");
  expect_same_params(out + "/np1/step_10", out + "/split/step_10", "dittrain resumed with 3 ranks");
}

TEST(DataParallel, EvalCountsEveryImageOnceForAnyWorldSize) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  Result t = sh(mpirun(1) + vtrain_args(tmp.file("data"), out, "m", 3));
  ASSERT_EQ(t.rc, 0) << t.out;
  std::string first;
  for (int np = 1; np <= 4; ++np) {
    Result r = sh(mpirun(np) + kVeval + " top1 cifar10_vit_tiny_siamese ckpt=" + out + "/m/step_3 data.root=" +
                  tmp.file("data") + " data.val_split=val model.dim=32 model.depth=2 model.heads=2 "
                  "model.patch_size=8 eval.batch_size=4 data.workers=1");
    ASSERT_EQ(r.rc, 0) << r.out;
    const size_t at = r.out.find("top1: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find("(21 images;"), std::string::npos) << "np " << np << ": " << line;
    // Printed once (rank 0), the same counts as one process.
    EXPECT_EQ(r.out.find("top1: ", at + 1), std::string::npos) << r.out;
    if (np == 1) first = line;
    EXPECT_EQ(line, first) << "np " << np;
  }
}

// veval stats / fid (embedding: the tiny ViT's pre-logit features, so no
// Inception weights are needed): ranks embed whole batches of the
// one-process run and rank 0 accumulates the gathered features in order, so
// mu and sigma are bitwise those of one process for any world size
// (21 images in batches of 4: 6 batches, uneven over 4 ranks).
TEST(DataParallel, FidStatsIdenticalForAnyWorldSize) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  Result t = sh(mpirun(1) + vtrain_args(tmp.file("data"), out, "m", 3));
  ASSERT_EQ(t.rc, 0) << t.out;
  const std::string feat = " --features " + out + "/m/step_3 --batch 4";
  std::map<std::string, vt::NpyArray> first;
  std::string first_fid;
  for (int np = 1; np <= 4; ++np) {
    const std::string npz = tmp.file("stats" + std::to_string(np) + ".npz");
    Result r = sh(mpirun(np) + kVeval + " stats --images " + tmp.file("data") + "/val --out " + npz + feat);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("from 21 images"), std::string::npos) << r.out;
    const auto m = vt::load_npz(npz);
    ASSERT_TRUE(m.count("mu") && m.count("sigma")) << npz;
    if (np == 1) first = m;
    for (const char* k : {"mu", "sigma"}) {
      EXPECT_EQ(m.at(k).shape, first.at(k).shape) << "np " << np << " " << k;
      EXPECT_TRUE(m.at(k).bytes == first.at(k).bytes) << "np " << np << ": " << k << " differs from one process";
    }
    Result f = sh(mpirun(np) + kVeval + " fid --samples " + tmp.file("data") + "/train --ref " +
                  tmp.file("stats1.npz") + feat);
    ASSERT_EQ(f.rc, 0) << f.out;
    const size_t at = f.out.find("FID: ");
    ASSERT_NE(at, std::string::npos) << f.out;
    EXPECT_EQ(f.out.find("FID: ", at + 1), std::string::npos) << "printed once (rank 0): " << f.out;
    const std::string line = f.out.substr(at, f.out.find('\n', at) - at);
    if (np == 1) first_fid = line;
    EXPECT_EQ(line, first_fid) << "np " << np;
  }
}

TEST(DataParallel, AFailingRankEndsEveryRank) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  // Rank 1 reads a copy of the data whose images are all unreadable: it
  // throws at its first batch while rank 0 waits in the gradient
  // all-reduce (MPMD launch: one command line per rank).
  const std::string bad = tmp.file("bad");
  fs::copy(tmp.file("data"), bad, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(bad + "/train"))
    if (e.is_regular_file()) std::ofstream(e.path(), std::ios::binary) << "not a jpeg";
  const std::string out = tmp.file("runs");
  const std::string cmd = mpirun(1) + vtrain_args(tmp.file("data"), out, "f", 20) + " : -np 1 " +
                          vtrain_args(bad, out, "f", 20) + " data.on_corrupt=error";
  Result r = sh(cmd);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.rc, 124) << "timed out (a rank hung): " << r.out;
  EXPECT_LT(r.seconds, 30.0) << r.out;
  EXPECT_NE(r.out.find("vtrain: error (rank 1 of 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(bad + "/train/"), std::string::npos) << "the message names the file: " << r.out;
  // ... and rank 0's log holds it.
  std::ifstream log(out + "/f/log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[1 of 2] [error] vtrain: run failed: cannot decode '" + bad), std::string::npos) << text;
}

TEST(DataParallel, BatchNotDivisibleByWorldIsAConfigErrorOnEveryRank) {
  SKIP_WITHOUT_MPI();
  vt_test::TmpDir tmp;
  make_dataset(tmp.file("data"));
  const std::string out = tmp.file("runs");
  Result r = sh(mpirun(3) + vtrain_args(tmp.file("data"), out, "b", 4) + " train.batch_size=25");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_LT(r.seconds, 30.0) << r.out;
  EXPECT_NE(r.out.find("train.batch_size = 25 (the global batch) is not divisible by the 3 processes"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out + "/b")) << "a config error leaves no run directory";
}
