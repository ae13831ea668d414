// The plan/apply split of DeiT's train augmentation (augment_plan.h) against
// the interleaved pipeline it replaced: RandomResizedCrop, then flip,
// rand_augment, to_chw_normalized and random_erasing all drawing from one
// Philox as they go, on real ImageNet and CIFAR-10 JPEGs read in place; and
// the loader's encoded batches (data.decode_on=device) against the planned ones.
#include <gtest/gtest.h>

#include <omp.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_pipeline/augment_plan.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/sampler.h"
#include "kernels/augment.h"
#include "data_test_util.h"

namespace vt {
namespace {

const std::string kShared = VT_SHARED_DATA_DIR;

// Settings that exercise every part: erasing at probability 1 (so the
// normals path runs on every sample), RandAugment with 3 ops.
ImagePipelineConfig heavy(int size) {
  ImagePipelineConfig c;
  c.size = size;
  c.randaug.num_ops = 3;
  c.erasing.probability = 1.0;
  return c;
}

// Field by field: memcmp would also compare the padding after
// erase_normals.lane, which holds whatever the allocation held (the
// sanitizer builds fill fresh memory with a pattern, so there they differ).
bool same_plans(const std::vector<AugmentPlan>& a, const std::vector<AugmentPlan>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const AugmentPlan &p = a[i], &q = b[i];
    if (p.flip != q.flip || p.num_steps != q.num_steps || !(p.erase == q.erase) ||
        !(p.erase_normals == q.erase_normals))
      return false;
    for (int s = 0; s < kMaxRandAugSteps; ++s)
      if (p.steps[s].op != q.steps[s].op || p.steps[s].sign != q.steps[s].sign || p.steps[s].level != q.steps[s].level)
        return false;
  }
  return true;
}

// The pre-split pipeline, from the crop on: the rng continues from the crop's draws.
std::vector<float> interleaved(const cv::Mat& crop, Philox& rng, const ImagePipelineConfig& c) {
  cv::Mat img = crop.clone();
  if (c.hflip && rng.uniform_double() < 0.5) hflip_inplace(img);
  if (c.rand_augment) img = rand_augment(img, rng, c.randaug);
  std::vector<float> out(static_cast<size_t>(3) * c.size * c.size);
  to_chw_normalized(img, c.mean, c.std, out.data());
  if (c.random_erasing) random_erasing(out.data(), 3, c.size, c.size, rng, c.erasing);
  return out;
}

// For `count` evenly spaced images of a folder and two draw streams each:
// process_image (plan + apply) == the interleaved pipeline, bit for bit, and
// the planned crop + apply_augment_plan == both. Returns how many samples
// erased a box and applied at least one RandAugment op.
int check_folder(const std::string& root, const ImagePipelineConfig& cfg, int count) {
  ImageFolderDataset ds(root, cfg);
  ImagePipelineConfig crop_only = cfg;  // the crop's draws and nothing after
  crop_only.hflip = crop_only.rand_augment = crop_only.random_erasing = false;
  const int S = cfg.size;
  const size_t numel = static_cast<size_t>(3) * S * S;
  int exercised = 0;
  for (int k = 0; k < count; ++k) {
    const int64_t i = k * ds.size() / count;
    const std::vector<uint8_t> bytes = read_file_bytes(ds.name(i));
    for (uint64_t draw : {uint64_t(0), uint64_t(977)}) {
      const uint64_t stream = philox_stream(kPurposeAugment, 2, static_cast<uint64_t>(i) + draw);
      std::vector<uint8_t> crop(static_cast<size_t>(S) * S * 3);
      AugmentPlan unused;
      Philox r_ref(11, stream);
      process_image_planned(bytes.data(), bytes.size(), ds.name(i), crop_only, r_ref, crop.data(), &unused);
      const std::vector<float> want = interleaved(cv::Mat(S, S, CV_8UC3, crop.data()), r_ref, cfg);

      std::vector<float> got(numel), applied(numel);
      Philox r_host(11, stream);
      process_image(bytes.data(), bytes.size(), ds.name(i), cfg, r_host, got.data());
      Philox r_plan(11, stream);
      std::vector<uint8_t> crop2(crop.size());
      AugmentPlan plan;
      process_image_planned(bytes.data(), bytes.size(), ds.name(i), cfg, r_plan, crop2.data(), &plan);
      apply_augment_plan(crop2.data(), S, S, plan, augment_settings(cfg), applied.data());

      EXPECT_EQ(crop, crop2) << ds.name(i);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), numel * 4)) << ds.name(i) << " draw " << draw;
      EXPECT_EQ(0, std::memcmp(want.data(), applied.data(), numel * 4)) << ds.name(i) << " draw " << draw;
      if (plan.erase.height > 0 && plan.num_steps > 0) ++exercised;
    }
  }
  return exercised;
}

TEST(AugmentPlan, PlanThenApplyIsTheInterleavedPipelineOnImageNet) {
  const int n = check_folder(kShared + "/imagenet-samples", heavy(224), 24);
  EXPECT_GT(n, 30);  // most of the 48 samples erase and run RandAugment
}

TEST(AugmentPlan, PlanThenApplyIsTheInterleavedPipelineOnCifar10) {
  // CIFAR-10's recipe (configs/cifar10_*.yaml: 32 px, erasing 0.25) and the heavy one.
  ImagePipelineConfig c;
  c.size = 32;
  check_folder(kShared + "/cifar10/test", c, 40);
  EXPECT_GT(check_folder(kShared + "/cifar10/test", heavy(32), 40), 40);
}

// Every op reaches the plan: over many draws each of the 15 ops is planned
// with both signs, and the plan's steps are what rand_augment applies
// (same ops, levels and signs from the same stream).
TEST(AugmentPlan, StepsAreRandAugmentsDraws) {
  AugmentSettings s;
  s.randaug.num_ops = 2;
  int seen[kNumRandAugOps][2] = {};
  for (uint64_t k = 0; k < 400; ++k) {
    Philox a(3, k), b(3, k);
    const AugmentPlan p = plan_augment(16, 16, a, s);
    if (b.uniform_double() < 0.5) ASSERT_EQ(p.flip, 1);
    else ASSERT_EQ(p.flip, 0);
    RandAugStep steps[kMaxRandAugSteps];
    const int n = randaug_plan(b, s.randaug, steps);
    ASSERT_EQ(p.num_steps, n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(p.steps[i].op, steps[i].op);
      EXPECT_EQ(p.steps[i].level, steps[i].level);
      EXPECT_EQ(p.steps[i].sign, steps[i].sign);
      EXPECT_GE(p.steps[i].level, 0.0);
      EXPECT_LE(p.steps[i].level, 10.0);
      ++seen[static_cast<int>(steps[i].op)][steps[i].sign > 0];
    }
    const CropBox e = random_erasing_box(16, 16, b, s.erasing);
    EXPECT_EQ(p.erase, e);
    EXPECT_EQ(p.erase_normals, b.position());
  }
  for (int op = 0; op < kNumRandAugOps; ++op)
    for (int sg = 0; sg < 2; ++sg) EXPECT_GT(seen[op][sg], 0) << randaug_op_name(static_cast<RandAugOp>(op));
}

// The batched CPU twins (kernels/augment.h augment_apply on the plans'
// kernel arguments) are per-sample apply_augment_plan (the host's cv::Mat
// ops), whatever the thread count; inputs are left untouched.
TEST(AugmentPlan, AugmentBatchIsPerSampleApply) {
  ImageFolderDataset ds(kShared + "/imagenet-samples", heavy(64));
  const int N = 6, S = 64;
  Tensor u8 = Tensor::empty({N, S, S, 3}, DType::U8);
  std::vector<AugmentPlan> plans(N);
  for (int n = 0; n < N; ++n) {
    Philox rng(5, static_cast<uint64_t>(n));
    ds.load_planned(n * 97, rng, u8.u8() + static_cast<size_t>(n) * S * S * 3, &plans[static_cast<size_t>(n)]);
  }
  const Tensor before = u8.clone();
  const size_t per = static_cast<size_t>(3) * S * S;
  std::vector<float> want(N * per);
  for (int n = 0; n < N; ++n)
    apply_augment_plan(u8.u8() + n * per, S, S, plans[static_cast<size_t>(n)], augment_settings(heavy(64)),
                       want.data() + n * per);
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    Tensor out = Tensor::full({N, 3, S, S}, -7.0f);
    augment_apply(u8, augment_batch_args(plans, augment_settings(heavy(64)), S, S), out);
    EXPECT_EQ(0, std::memcmp(out.f32(), want.data(), want.size() * 4)) << threads << " threads";
  }
  EXPECT_EQ(0, std::memcmp(before.u8(), u8.u8(), u8.nbytes()));
  // Each sample also equals the dataset's own load() from the same stream.
  for (int n = 0; n < N; ++n) {
    Philox rng(5, static_cast<uint64_t>(n));
    std::vector<float> direct(per);
    ds.load(n * 97, rng, direct.data());
    EXPECT_EQ(0, std::memcmp(direct.data(), want.data() + n * per, per * 4)) << n;
  }
  // A plan list shorter than the batch is refused.
  plans.pop_back();
  EXPECT_THROW(augment_apply(u8, augment_batch_args(plans, augment_settings(heavy(64)), S, S), Tensor::empty({N, 3, S, S})),
               std::invalid_argument);
}

// The loader's augment_plans batches, applied, are its float batches.
TEST(AugmentPlan, LoaderPlansApplyToTheFloatBatches) {
  ImagePipelineConfig cfg = heavy(48);
  auto ds = std::make_shared<ImageFolderDataset>(kShared + "/imagenet-samples", cfg);
  EpochOrder order = train_order(ds->size(), 9, 1, 0, 1);
  order.indices.resize(16), order.draw_ids.resize(16);
  LoaderConfig lc;
  lc.batch_size = 8;
  lc.seed = 9;
  std::vector<Batch> f, p;
  for (bool planned : {false, true}) {
    lc.augment_plans = planned;
    lc.workers = planned ? 2 : 1;
    Loader l(ds, lc);
    l.start_epoch(1, order);
    Batch b;
    while (l.next(b)) (planned ? p : f).push_back(b);
  }
  ASSERT_EQ(f.size(), 2u);
  ASSERT_EQ(p.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(p[k].images.dtype(), DType::U8);
    EXPECT_EQ(p[k].images.shape(), (Shape{8, 48, 48, 3}));
    ASSERT_EQ(p[k].plans.size(), 8u);
    Tensor out = Tensor::empty({8, 3, 48, 48});
    augment_apply(p[k].images, augment_batch_args(p[k].plans, augment_settings(cfg), 48, 48), out);
    EXPECT_EQ(0, std::memcmp(out.f32(), f[k].images.f32(), out.nbytes())) << "batch " << k;
    EXPECT_EQ(0, std::memcmp(p[k].labels.i32(), f[k].labels.i32(), p[k].labels.nbytes()));
  }
  // A pipeline without a plan (evaluation) and loader-side mixup are refused.
  ImagePipelineConfig ev;
  ev.kind = ImagePipeline::DeitEval;
  ev.size = 48;
  auto eval_ds = std::make_shared<ImageFolderDataset>(kShared + "/imagenet-samples", ev);
  lc.augment_plans = true;
  EXPECT_THROW(Loader(eval_ds, lc), std::invalid_argument);
  lc.mixup = MixupParams{};
  EXPECT_THROW(Loader(ds, lc), std::invalid_argument);
}

}  // namespace
}  // namespace vt

namespace vt {
namespace {

// Classes a, b, c of 4 synthetic JPEGs each (quality 90), sized 40x72 to
// 79x51 so every crop plan differs.
void write_three_classes_of_jpegs(const std::filesystem::path& root) {
  int seed = 0;
  for (const char* cls : {"a", "b", "c"})
    for (int k = 0; k < 4; ++k) {
      const cv::Mat rgb = testutil::synthetic_rgb(40 + 13 * k, 72 - 7 * k, ++seed);
      testutil::write_bytes(root / cls / (std::to_string(k) + ".jpg"), testutil::encode_rgb_jpeg(rgb, 90));
    }
}

// data.decode_on=device, the loader's side (LoaderConfig::encoded): a JPEG
// sample comes as its bytes and the RandomResizedCrop box drawn from its
// header; a whole decode cropped to that box (what the device path does,
// here with the host decoder) gives the planned loader's crop bit for bit
// (data.dct_scaling off: the device decodes at full size), with the same
// plan, label and index. A PNG comes as a host crop. A JPEG whose header
// reads but whose data does not decode is caught only by the decode: the
// consumer hands it back (Loader::replace_undecodable), which replaces it
// as the planned loader's workers do (data.on_corrupt=skip: the next
// sample, with this sample's draws; counted once) or rethrows (error).
TEST(AugmentPlan, EncodedBatchesDecodeToThePlannedBatches) {
  testutil::TempDir tmp("encoded");
  const std::filesystem::path root = tmp.path;
  write_three_classes_of_jpegs(root);
  {  // a PNG named .jpg (formats are sniffed from the bytes)
    cv::Mat bgr;
    cv::cvtColor(testutil::synthetic_rgb(50, 61, 99), bgr, cv::COLOR_RGB2BGR);
    std::vector<uint8_t> png;
    cv::imencode(".png", bgr, png);
    testutil::write_bytes(root / "b" / "1.jpg", png);
  }
  {  // a JPEG cut in its entropy-coded data: the header still reads
    std::vector<uint8_t> j = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(64, 64, 7), 90);
    j.resize(j.size() * 2 / 3);
    testutil::write_bytes(root / "c" / "2.jpg", j);
  }
  ImagePipelineConfig cfg = heavy(24);
  cfg.dct_scaling = false;
  auto ds = std::make_shared<ImageFolderDataset>(root.string(), cfg);
  ASSERT_EQ(ds->size(), 12);
  EpochOrder order = train_order(ds->size(), 5, 1, 0, 1);
  LoaderConfig lc;
  lc.batch_size = 4;
  lc.seed = 5;
  lc.augment_plans = true;
  lc.on_corrupt = OnCorrupt::Skip;
  std::vector<Batch> planned;
  int64_t planned_corrupt = 0;
  {
    Loader l(ds, lc);
    l.start_epoch(2, order);
    Batch b;
    while (l.next(b)) planned.push_back(b);
    planned_corrupt = l.corrupt_count();
  }
  ASSERT_EQ(planned.size(), 3u);
  EXPECT_EQ(planned_corrupt, 1);
  const int64_t per = 24 * 24 * 3;
  lc.encoded = true;
  lc.workers = 2;
  {
    Loader l(ds, lc);
    l.start_epoch(2, order);
    Batch b;
    int host_crops = 0, replaced = 0;
    for (size_t k = 0; l.next(b); ++k) {
      ASSERT_LT(k, planned.size());
      ASSERT_EQ(b.encoded.size(), 4u);
      for (int i = 0; i < 4; ++i) {
        EncodedSample& e = b.encoded[static_cast<size_t>(i)];
        if (!e.data) {
          ++host_crops;
          continue;
        }
        EXPECT_EQ(e.name, ds->name(b.indices[static_cast<size_t>(i)]));
        try {
          const DecodedImage d = decode_image(e.data, e.size, e.name);
          const cv::Mat crop = resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows,
                                                 e.box, 24);
          ASSERT_TRUE(crop.isContinuous());
          std::memcpy(b.images.u8() + i * per, crop.data, static_cast<size_t>(per));
        } catch (const CorruptImage&) {
          l.replace_undecodable(b, i, std::current_exception());
          EXPECT_EQ(b.encoded[static_cast<size_t>(i)].data, nullptr);
          ++replaced;
        }
      }
      const Batch& want = planned[k];
      EXPECT_EQ(b.indices, want.indices) << "batch " << k;
      EXPECT_EQ(0, std::memcmp(b.labels.i32(), want.labels.i32(), want.labels.nbytes())) << "batch " << k;
      EXPECT_EQ(0, std::memcmp(b.images.u8(), want.images.u8(), want.images.nbytes())) << "batch " << k;
      ASSERT_EQ(b.plans.size(), 4u);
      EXPECT_TRUE(same_plans(b.plans, want.plans)) << "batch " << k;
    }
    EXPECT_EQ(host_crops, 1);  // the PNG
    EXPECT_EQ(replaced, 1);    // the cut JPEG
    EXPECT_EQ(l.corrupt_count(), 1);
    ASSERT_EQ(l.corrupt_names().size(), 1u);
    EXPECT_NE(l.corrupt_names()[0].find("2.jpg"), std::string::npos);
  }
  // data.on_corrupt=error: the decoder's error comes back, naming the file.
  lc.on_corrupt = OnCorrupt::Error;
  Loader l(ds, lc);
  l.start_epoch(2, order);
  Batch b;
  bool thrown = false;
  while (!thrown && l.next(b))
    for (int i = 0; i < 4 && !thrown; ++i) {
      const EncodedSample& e = b.encoded[static_cast<size_t>(i)];
      if (!e.data) continue;
      try {
        decode_image(e.data, e.size, e.name);
      } catch (const CorruptImage&) {
        try {
          l.replace_undecodable(b, i, std::current_exception());
        } catch (const CorruptImage& err) {
          thrown = true;
          EXPECT_NE(std::string(err.what()).find("2.jpg"), std::string::npos) << err.what();
        }
      }
    }
  EXPECT_TRUE(thrown);
  // Encoded samples need the planned split.
  lc.augment_plans = false;
  EXPECT_THROW(Loader(ds, lc), std::invalid_argument);
}

// LoaderConfig::device_decodes: a JPEG the consumer declines is decoded by
// the worker at full size and cropped to its box, so it comes as a host
// crop equal to the planned loader's (data.dct_scaling off); a JPEG
// declined that does not decode is handled there as the planned loader's
// workers handle it (skip: the next sample, counted once). Declining every
// JPEG gives the planned batches with nothing encoded; declining half of
// them (by the parity of their byte count) gives them with the rest still
// encoded, which the consumer decodes as before.
TEST(AugmentPlan, DeclinedJpegsBecomeTheWorkersHostCrops) {
  testutil::TempDir tmp("declined");
  const std::filesystem::path root = tmp.path;
  write_three_classes_of_jpegs(root);
  {  // a JPEG cut in its entropy-coded data
    std::vector<uint8_t> j = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(64, 64, 7), 90);
    j.resize(j.size() * 2 / 3);
    testutil::write_bytes(root / "c" / "2.jpg", j);
  }
  ImagePipelineConfig cfg = heavy(24);
  cfg.dct_scaling = false;
  auto ds = std::make_shared<ImageFolderDataset>(root.string(), cfg);
  EpochOrder order = train_order(ds->size(), 5, 1, 0, 1);
  LoaderConfig lc;
  lc.batch_size = 4;
  lc.seed = 5;
  lc.augment_plans = true;
  lc.on_corrupt = OnCorrupt::Skip;
  std::vector<Batch> planned;
  {
    Loader l(ds, lc);
    l.start_epoch(2, order);
    Batch b;
    while (l.next(b)) planned.push_back(b);
  }
  ASSERT_EQ(planned.size(), 3u);
  const int64_t per = 24 * 24 * 3;
  lc.encoded = true;
  lc.workers = 2;
  for (bool all : {true, false}) {
    SCOPED_TRACE(all ? "every JPEG declined" : "half declined");
    lc.device_decodes = [all](const uint8_t*, size_t n) { return !all && n % 2 == 0; };
    Loader l(ds, lc);
    l.start_epoch(2, order);
    Batch b;
    int encoded = 0;
    for (size_t k = 0; l.next(b); ++k) {
      ASSERT_LT(k, planned.size());
      for (int i = 0; i < 4; ++i) {
        const EncodedSample& e = b.encoded[static_cast<size_t>(i)];
        if (!e.data) continue;
        ++encoded;
        EXPECT_EQ(e.size % 2, 0u);
        try {
          const DecodedImage d = decode_image(e.data, e.size, e.name);
          const cv::Mat crop =
              resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, e.box, 24);
          std::memcpy(b.images.u8() + i * per, crop.data, static_cast<size_t>(per));
        } catch (const CorruptImage&) {  // the cut file, when it was not declined
          l.replace_undecodable(b, i, std::current_exception());
        }
      }
      const Batch& want = planned[k];
      EXPECT_EQ(b.indices, want.indices) << "batch " << k;
      EXPECT_EQ(0, std::memcmp(b.images.u8(), want.images.u8(), want.images.nbytes())) << "batch " << k;
      EXPECT_TRUE(same_plans(b.plans, want.plans)) << "batch " << k;
    }
    if (all) EXPECT_EQ(encoded, 0);
    else EXPECT_GT(encoded, 0);
  }
}

}  // namespace
}  // namespace vt
