// Every batched augmentation kernel's CPU twin (kernels/augment.h on CPU
// tensors) against the host pipeline's op on real crops (ImageNet samples
// and CIFAR-10 test images read in place, RandomResizedCrop'd): each of the
// 15 RandAugment ops at several levels and both signs against
// randaug_apply (the Pillow-exact cv::Mat ops, data_pipeline/randaugment.h;
// the affine ops against affine_pil's AVX2 path on x86-64-v3 builds, an
// independent implementation), the flip against hflip_inplace, and
// RandomErasing's regenerated normals against the host's sequential
// Philox::normal draws.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "data_pipeline/augment_plan.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "kernels/augment.h"

namespace vt {
namespace {

const std::string kShared = VT_SHARED_DATA_DIR;

// `count` crops of `size` px from evenly spaced images of a folder, as U8 [N, size, size, 3].
Tensor crops(const std::string& root, int size, int count) {
  ImagePipelineConfig c;
  c.size = size;
  c.hflip = c.rand_augment = c.random_erasing = false;
  ImageFolderDataset ds(root, c);
  Tensor t = Tensor::empty({count, size, size, 3}, DType::U8);
  for (int k = 0; k < count; ++k) {
    Philox rng(1, static_cast<uint64_t>(k));
    AugmentPlan unused;
    ds.load_planned(k * ds.size() / count, rng, t.u8() + static_cast<size_t>(k) * size * size * 3, &unused);
  }
  return t;
}

cv::Mat image(const Tensor& t, int64_t n) {
  const int H = static_cast<int>(t.size(1)), W = static_cast<int>(t.size(2));
  return cv::Mat(H, W, CV_8UC3, t.u8() + n * H * W * 3);
}

// One op for every crop (per-sample levels), twin vs host; returns the
// number of pixels the op changed (a test of an op that does nothing
// would prove little).
int64_t check_op(const Tensor& in, RandAugOp op, const std::vector<double>& levels, int sign) {
  const int64_t N = in.size(0);
  const int H = static_cast<int>(in.size(1)), W = static_cast<int>(in.size(2));
  std::vector<AugmentStepArgs> args;
  for (int64_t n = 0; n < N; ++n) args.push_back(randaug_step_args(op, levels[n % levels.size()], sign, W, H));
  Tensor out = Tensor::empty(in.shape(), DType::U8);
  augment_step(in, args, out);
  int64_t changed = 0;
  for (int64_t n = 0; n < N; ++n) {
    const cv::Mat want = randaug_apply(image(in, n), op, levels[n % levels.size()], sign).clone();
    const cv::Mat got = image(out, n);
    EXPECT_EQ(0, std::memcmp(want.data, got.data, static_cast<size_t>(H) * W * 3))
        << randaug_op_name(op) << " level " << levels[n % levels.size()] << " sign " << sign << " sample " << n;
    for (int64_t i = 0; i < static_cast<int64_t>(H) * W * 3; ++i) changed += want.data[i] != image(in, n).data[i];
  }
  return changed;
}

void check_every_op(const Tensor& in) {
  const std::vector<double> levels{0.0, 3.7, 9.0, 9.62, 10.0};
  for (int op = 0; op < kNumRandAugOps; ++op)
    for (int sign : {-1, 1}) {
      const int64_t changed = check_op(in, static_cast<RandAugOp>(op), levels, sign);
      EXPECT_GT(changed, 0) << randaug_op_name(static_cast<RandAugOp>(op)) << " sign " << sign;
    }
}

TEST(AugmentOps, EveryOpsCpuTwinIsTheHostOpOnImageNetCrops) { check_every_op(crops(kShared + "/imagenet-samples", 224, 5)); }

TEST(AugmentOps, EveryOpsCpuTwinIsTheHostOpOnCifar10Crops) { check_every_op(crops(kShared + "/cifar10/test", 32, 10)); }

// Odd sizes: the sharpness border, the flip's middle column, affine edges.
TEST(AugmentOps, EveryOpsCpuTwinIsTheHostOpOnAnOddCrop) { check_every_op(crops(kShared + "/imagenet-samples", 37, 3)); }

TEST(AugmentOps, FlipIsHflip) {
  const Tensor in = crops(kShared + "/imagenet-samples", 45, 3);
  std::vector<AugmentStepArgs> args(3);
  args[0].kind = kAugFlip, args[2].kind = kAugFlip;  // sample 1 is copied
  Tensor out = Tensor::empty(in.shape(), DType::U8);
  augment_step(in, args, out);
  for (int64_t n = 0; n < 3; ++n) {
    cv::Mat want = image(in, n).clone();
    if (n != 1) hflip_inplace(want);
    EXPECT_EQ(0, std::memcmp(want.data, image(out, n).data, 45 * 45 * 3)) << n;
  }
}

// The erased values of every sample are the host's Philox::normal()
// sequence from the recorded position (random_erasing_fill), whatever the
// lane it starts at; outside the boxes nothing changes.
TEST(AugmentOps, EraseRegeneratesTheHostsNormals) {
  const int N = 5, H = 20, W = 23;
  Tensor out = Tensor::full({N, 3, H, W}, 0.25f);
  std::vector<float> want(out.numel(), 0.25f);
  std::vector<AugmentEraseArgs> args(N);
  for (int n = 0; n < N; ++n) {
    Philox g(77, philox_stream(3, static_cast<uint64_t>(n)));
    for (int k = 0; k < n; ++k) g.next_u32();  // lanes 0, 1, 2, 3 and 0 of the next block
    const PhiloxPosition p = g.position();
    const CropBox box{n, 2 * n, n == 2 ? 0 : 4 + n, 3 + 2 * n};  // sample 2: no box
    AugmentEraseArgs& e = args[static_cast<size_t>(n)];
    e.top = box.top, e.left = box.left, e.height = box.height, e.width = box.width;
    e.seed = p.seed, e.stream = p.stream, e.block = p.block, e.lane = p.lane;
    random_erasing_fill(want.data() + static_cast<size_t>(n) * 3 * H * W, 3, H, W, box, g);
  }
  augment_erase(out, args);
  EXPECT_EQ(0, std::memcmp(out.f32(), want.data(), want.size() * 4));
  args[4].width = W;  // past the right edge
  EXPECT_THROW(augment_erase(out, args), std::invalid_argument);
}

}  // namespace
}  // namespace vt
