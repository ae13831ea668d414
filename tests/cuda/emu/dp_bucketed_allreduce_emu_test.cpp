// The bucketed NCCL gradient all-reduce (train/grad_allreduce_bucketed.h) on
// emulated CUDA ranks, NCCL served by MPI (nccl_emu.cpp, which logs every
// ncclAllReduce): run by ctest under `mpirun -np 2` and `-np 3`
// (emu.bucketed_allreduce_np2/np3, the BucketedAllReduceEmu tests of
// test_dp_train_emu). For a tiny DeiT and a tiny DiT on each rank's own
// inputs, with buckets of a few hundred values:
//  - the first step reduces the whole buffer once, after the backward pass;
//  - every later step issues several all-reduces, all of them before the
//    backward pass returns (the log's length is read at that point), over
//    buffer ranges that are the planned buckets and tile the gradient buffer
//    exactly once;
//  - the result is the mean of the ranks' gradients, computed here from the
//    same model's gradient without any all-reduce (hook not armed), gathered
//    from every rank (MPI_Allgatherv of bytes) and summed in double.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/dist.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "dp_emu_util.h"
#include "nccl_emu.h"
#include "train/grad_allreduce_bucketed.h"
#include "train/grad_allreduce_nccl.h"
#include "vision/vit.h"

namespace vt {
namespace {

constexpr int64_t kCap = 300;  // elements per bucket

Tensor rank_normals(const Shape& s, uint64_t purpose, Device dev) {
  Tensor t = Tensor::empty(s);
  Philox g(31, purpose * 16 + static_cast<uint64_t>(dist().rank()));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal());
  return t.to(dev);
}

// `backward_step` runs one forward and backward of the model (gradients
// zeroed first) on this rank's inputs.
void expect_buckets_during_backward(ParamStore& ps, const std::function<void()>& backward_step,
                                    const std::string& what) {
  const Dist& d = dist();
  ASSERT_GE(d.world(), 2) << "run under mpirun -np 2 or more";
  const int64_t n = ps.numel();
  NcclGradientAllReduce nccl;
  BucketedGradientAllReduce br(ps, nccl, kCap);
  auto& log = vt_emu::nccl_calls();

  // This rank's gradient with no all-reduce (no step begun: the hook is
  // not armed), and the mean over ranks in double.
  const size_t before_local = log.size();
  backward_step();
  EXPECT_EQ(log.size(), before_local) << what << ": an all-reduce outside a step";
  const Tensor local = ps.grads().to(Device::cpu());
  const std::vector<unsigned char> all = d.allgather_bytes(local.raw(), sizeof(float) * static_cast<size_t>(n));
  std::vector<double> mean(static_cast<size_t>(n), 0.0), mag(static_cast<size_t>(n), 0.0);
  for (int r = 0; r < d.world(); ++r) {
    const float* v = reinterpret_cast<const float*>(all.data()) + static_cast<size_t>(r) * static_cast<size_t>(n);
    for (int64_t i = 0; i < n; ++i) mean[i] += v[i], mag[i] += std::fabs(v[i]);
  }

  for (int step = 1; step <= 2; ++step) {
    const std::string at = what + ", step " + std::to_string(step);
    const size_t first = log.size();
    br.begin_step();
    backward_step();
    const size_t at_backward_end = log.size();
    br.finish();
    const size_t last = log.size();
    const char* base = static_cast<const char*>(ps.grads().raw());
    std::vector<GradRange> issued;
    for (size_t k = first; k < last; ++k)
      issued.push_back({(static_cast<const char*>(log[k].recv) - base) / static_cast<int64_t>(sizeof(float)),
                        static_cast<int64_t>(log[k].count)});
    if (step == 1) {  // learning the order: one reduction after the backward pass
      ASSERT_EQ(issued.size(), 1u) << at;
      EXPECT_EQ(at_backward_end, first) << at;
      EXPECT_EQ(issued[0], (GradRange{0, n})) << at;
      ASSERT_GE(br.buckets().size(), 3u) << at << ": " << n << " gradients in buckets of " << kCap;
    } else {
      EXPECT_EQ(issued, br.buckets()) << at << ": the planned buckets, in order";
      EXPECT_GE(issued.size(), 3u) << at;
      EXPECT_EQ(at_backward_end, last) << at << ": every bucket issued before the backward pass returned";
      EXPECT_LT(first, at_backward_end) << at;
      std::vector<int> cover(static_cast<size_t>(n), 0);
      for (const GradRange& r : issued)
        for (int64_t i = std::max<int64_t>(r.offset, 0); i < std::min(r.end(), n); ++i) ++cover[static_cast<size_t>(i)];
      EXPECT_TRUE(std::all_of(cover.begin(), cover.end(), [](int c) { return c == 1; }))
          << at << ": the buckets do not tile the " << n << " gradients exactly once";
    }
    const Tensor got = ps.grads().to(Device::cpu());
    int64_t far = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = mean[i] / d.world(), m = mag[i] / d.world();
      const double err = std::fabs(got.f32()[i] - e) / std::max(m, 1e-30);
      if (m > 0) worst = std::max(worst, err), far += err > 1e-6;
      else far += got.f32()[i] != 0.0f;
    }
    EXPECT_EQ(far, 0) << at << ": not the mean over ranks; worst error relative to the mean magnitude " << worst;
  }
}

TEST(BucketedAllReduceEmu, DeiTBucketsGoOutDuringTheBackwardPassAndAverage) {
  const Device dev = Device::cuda(dist().local_rank());
  cudaSetDevice(dist().local_rank());
  VitConfig c;
  c.img_size = 16, c.patch_size = 8, c.in_chans = 3, c.num_classes = 5;
  c.backbone.dim = 16, c.backbone.depth = 3, c.backbone.heads = 2;
  VisionTransformer m(c);
  m.init(2);
  m.to(dev);
  const Tensor images = rank_normals({3, 3, 16, 16}, 1, dev), dlogits = rank_normals({3, 5}, 2, dev);
  Tensor logits = Tensor::empty({3, 5}, DType::F32, dev);
  expect_buckets_during_backward(
      m.params(),
      [&] {
        m.forward(images, logits);
        m.params().zero_grad();
        m.backward(dlogits);
      },
      "DeiT");
}

TEST(BucketedAllReduceEmu, DiTBucketsGoOutDuringTheBackwardPassAndAverage) {
  const Device dev = Device::cuda(dist().local_rank());
  cudaSetDevice(dist().local_rank());
  DiTConfig c;
  c.input_size = 8, c.in_channels = 2, c.patch = 4, c.hidden = 16, c.depth = 3, c.heads = 2, c.num_classes = 3;
  DiT m(c);
  m.init_weights(2);
  // Away from adaLN-Zero's initial zeros, so every gradient is non-zero.
  Philox g(8, 1);
  float* w = m.params().weights().f32();
  for (int64_t i = 0; i < m.params().numel(); ++i) w[i] += static_cast<float>(0.1 * g.normal());
  m.set_pos_embed();
  m.to(dev);
  const Tensor x = rank_normals({2, 2, 8, 8}, 3, dev), dout = rank_normals({2, c.out_channels(), 8, 8}, 4, dev);
  const Tensor t = Tensor::from_vector({7.0f, 700.0f}, {2}).to(dev);
  Tensor y = Tensor::empty({2}, DType::I32);
  y.i32()[0] = 0, y.i32()[1] = 2;
  const Tensor yd = y.to(dev);
  Tensor out = Tensor::empty(dout.shape(), DType::F32, dev);
  expect_buckets_during_backward(
      m.params(),
      [&] {
        m.forward(x, t, yd, out);
        m.params().zero_grad();
        m.backward(dout);
      },
      "DiT");
}

}  // namespace
}  // namespace vt
