#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/loader.h"
#include "data_test_util.h"

namespace vt {
namespace {

using testutil::TempDir;

// 3 classes x 5 JPEGs of varied sizes (+ optional corrupt files).
void make_folder(const std::filesystem::path& root, bool corrupt) {
  int k = 0;
  for (const char* cls : {"cat", "dog", "eel"})
    for (int i = 0; i < 5; ++i, ++k) {
      const cv::Mat img = testutil::synthetic_rgb(40 + 7 * k, 30 + 5 * (k % 4), k);
      testutil::write_bytes(root / cls / ("img" + std::to_string(i) + ".jpg"), testutil::encode_rgb_jpeg(img));
    }
  if (corrupt) {
    const std::string t = "not a jpeg";
    testutil::write_bytes(root / "dog" / "img2b.jpg", std::vector<uint8_t>(t.begin(), t.end()));
  }
}

ImagePipelineConfig small_train() {
  ImagePipelineConfig c;
  c.size = 24;
  return c;
}

std::vector<Batch> run_epoch(Loader& l, uint64_t epoch, EpochOrder o) {
  l.start_epoch(epoch, std::move(o));
  std::vector<Batch> out;
  Batch b;
  while (l.next(b)) out.push_back(b);
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Loader, BitwiseIdenticalForAnyWorkerCount) {
  TempDir t("ld_inv");
  make_folder(t.path, false);
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), small_train());
  LoaderConfig c;
  c.batch_size = 4;
  c.seed = 17;
  c.mixup = MixupParams{};
  std::vector<std::vector<Batch>> runs;
  for (int w : {1, 3}) {
    c.workers = w;
    c.prefetch = 2;
    Loader l(ds, c);
    runs.push_back(run_epoch(l, 3, train_order(ds->size(), 17, 3, 0, 1)));
  }
  ASSERT_EQ(runs[0].size(), 3u);  // 15 samples, batch 4, ragged batch dropped
  ASSERT_EQ(runs[1].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_bits(runs[0][i].images, runs[1][i].images)) << i;
    EXPECT_TRUE(same_bits(runs[0][i].labels, runs[1][i].labels)) << i;
    EXPECT_TRUE(same_bits(runs[0][i].targets, runs[1][i].targets)) << i;
    EXPECT_EQ(runs[0][i].targets.shape(), (Shape{4, 3}));
  }
  // Labels follow the order: dataset index i has label i / 5.
  const EpochOrder o = train_order(ds->size(), 17, 3, 0, 1);
  for (size_t b = 0; b < 3; ++b)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(runs[0][b].labels.i32()[j], o.indices[b * 4 + j] / 5);
}

TEST(Loader, EvalKeepsRaggedBatchAndMatchesDirectProcessing) {
  TempDir t("ld_eval");
  make_folder(t.path, false);
  ImagePipelineConfig cfg;
  cfg.kind = ImagePipeline::DeitEval;
  cfg.size = 16;
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), cfg);
  LoaderConfig c;
  c.batch_size = 4;
  c.drop_last = false;
  c.workers = 2;
  Loader l(ds, c);
  const auto batches = run_epoch(l, 0, eval_order(ds->size(), 0, 1));
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[3].images.shape(), (Shape{3, 3, 16, 16}));
  // Sample 14 processed by hand equals its slot in the ragged batch.
  std::vector<float> want(3 * 16 * 16);
  const auto bytes = read_file_bytes(ds->name(14));
  Philox unused(0, 0);
  process_image(bytes.data(), bytes.size(), ds->name(14), cfg, unused, want.data());
  EXPECT_EQ(std::memcmp(batches[3].images.f32() + 2 * want.size(), want.data(), want.size() * 4), 0);
}

TEST(Loader, CorruptFileErrorNamesIt) {
  TempDir t("ld_err");
  make_folder(t.path, true);
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), small_train());
  LoaderConfig c;
  c.batch_size = 16;
  c.drop_last = false;
  c.workers = 2;
  Loader l(ds, c);
  l.start_epoch(0, eval_order(ds->size(), 0, 1));
  Batch b;
  try {
    while (l.next(b)) {
    }
    FAIL() << "no error";
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("img2b.jpg"), std::string::npos) << e.what();
    // ... and how to go on without it.
    EXPECT_NE(std::string(e.what()).find("data.on_corrupt=skip"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(l.next(b));  // the epoch is over, no hang
}

TEST(Loader, CorruptFileSkippedByNextValidSampleWithItsLabel) {
  TempDir t("ld_skip");
  make_folder(t.path, true);
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), small_train());
  // Dataset order: cat 0-4, dog img0 img1 img2 img2b img3 img4 -> index 8 is bad.
  ASSERT_NE(ds->name(8).find("img2b.jpg"), std::string::npos);
  LoaderConfig c;
  c.batch_size = 16;
  c.drop_last = false;
  c.workers = 3;
  c.on_corrupt = OnCorrupt::Skip;
  Loader l(ds, c);
  const auto batches = run_epoch(l, 0, eval_order(ds->size(), 0, 1));
  ASSERT_EQ(batches.size(), 1u);
  const Batch& b = batches[0];
  EXPECT_EQ(b.indices[8], 9);  // replaced by the next file
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.labels.i32()[i], ds->label(b.indices[i])) << i;
  EXPECT_EQ(b.labels.i32()[8], 1);
  EXPECT_EQ(l.corrupt_count(), 1);
  ASSERT_EQ(l.corrupt_names().size(), 1u);
  EXPECT_NE(l.corrupt_names()[0].find("img2b.jpg"), std::string::npos);
  EXPECT_THROW(parse_on_corrupt("ignore"), std::invalid_argument);
}

TEST(Loader, DestroyMidEpochAndRestart) {
  TempDir t("ld_stop");
  make_folder(t.path, false);
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), small_train());
  LoaderConfig c;
  c.batch_size = 2;
  c.workers = 2;
  c.prefetch = 2;
  {
    Loader l(ds, c);
    l.start_epoch(0, train_order(ds->size(), 1, 0, 0, 1));
    Batch b;
    ASSERT_TRUE(l.next(b));
    // New epoch while the old one is in flight, then destruction mid-epoch.
    l.start_epoch(1, train_order(ds->size(), 1, 1, 0, 1));
    ASSERT_TRUE(l.next(b));
    EXPECT_EQ(b.index, 0);
  }
  SUCCEED();
}

// The OS refusing a worker thread (here: an address-space limit, so each
// 8 MiB stack soon fails) must give an exception naming data.workers, with
// the threads already started joined: never std::terminate. In a forked
// child, so the limit does not touch the test process.
TEST(Loader, ThreadStartFailureIsAnErrorNotTerminate) {
  TempDir t("ld_threads");
  make_folder(t.path, false);
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), small_train());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    rlimit lim{now + (64u << 20), now + (64u << 20)};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(10);
    LoaderConfig c;
    c.batch_size = 2;
    c.workers = 100000;
    try {
      Loader l(ds, c);
      _exit(11);  // 100000 stacks cannot fit in 64 MiB
    } catch (const std::runtime_error& e) {
      _exit(std::string(e.what()).find("data.workers = 100000") != std::string::npos ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit failed, 11: no failure, 12: message, 13: other exception";
}

TEST(Loader, LatentShards) {
  TempDir t("ld_lat");
  // Two shards, F32 and BF16, values k + 0.5 exactly representable in bf16.
  std::vector<float> v0(3 * 2 * 2 * 3), v1(2 * 2 * 2 * 3);
  for (size_t i = 0; i < v0.size(); ++i) v0[i] = float(i) * 0.5f;
  for (size_t i = 0; i < v1.size(); ++i) v1[i] = 100.0f + float(i);
  Tensor l0 = Tensor::empty({3}, DType::I64), l1 = Tensor::empty({2}, DType::I32);
  for (int i = 0; i < 3; ++i) l0.data<int64_t>()[i] = 10 + i;
  l1.i32()[0] = 7;
  l1.i32()[1] = 999;
  save_safetensors((t.path / "a.safetensors").string(),
                   {{"latents", Tensor::from_vector(v0, {3, 2, 2, 3})}, {"labels", l0}});
  save_safetensors((t.path / "b.safetensors").string(),
                   {{"latents", Tensor::from_vector(v1, {2, 2, 2, 3}).to(DType::BF16)}, {"labels", l1}});
  auto ds = std::make_shared<LatentShardDataset>(t.path.string());
  ASSERT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->sample_shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(ds->label(2), 12);
  EXPECT_EQ(ds->label(4), 999);
  LoaderConfig c;
  c.batch_size = 2;
  c.drop_last = false;
  Loader l(ds, c);
  const auto batches = run_epoch(l, 0, eval_order(5, 0, 1));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[1].images.f32()[12 + 5], v1[5]);  // sample 3 = shard b row 0
  EXPECT_EQ(batches[0].images.f32()[12 + 7], v0[12 + 7]);
  EXPECT_EQ(batches[2].labels.i32()[0], 999);
  // Errors name the shard.
  save_safetensors((t.path / "c.safetensors").string(), {{"latents", Tensor::from_vector(v0, {3, 2, 2, 3})}});
  try {
    LatentShardDataset bad(t.path.string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("c.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vt
