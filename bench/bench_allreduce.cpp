// Data-parallel cost on this machine (core/dist.h, train/grad_allreduce.h):
//   mpirun -np W bench_allreduce [preset=cifar] [batch=32] [iters=10] [device=cpu|cuda]
// 1. The gradient all-reduce (MPI_Allreduce sum + / world, in place, fp32)
//    on buffers of 1 M, the preset's parameter count and 22 M values
//    (DeiT-S): median seconds, algorithm bandwidth (bytes / s) and bus
//    bandwidth (x 2 (W - 1) / W, nccl-tests' convention), in GB/s.
// 2. A vtrain CPU step at the same per-rank batch (forward, cross-entropy,
//    backward, gradient all-reduce, AdamW) with the all-reduce timed apart.
//    Run it with -np 1 and -np 2 and compare step_s: the overhead of 2 ranks.
// Prints JSON lines on rank 0. Synthetic images; the data pipeline is not timed.
// device=cuda: part 1 only, with NCCL (train/grad_allreduce_nccl.h) on
// buffers on the GPU of the local rank, timed to the end of the all-reduce
// (cudaDeviceSynchronize); with one process NCCL still runs its kernel (a
// world of 1: what scripts/gpu_check.sh measures on a 1-GPU machine), so
// algbw is reported for any world. Then a GPU step (forward, cross-entropy,
// backward, gradient all-reduce) with the all-reduce after the backward pass
// (bucket_mb 0) and in buckets issued during it (train/grad_allreduce_bucketed.h,
// 25 MB as DDP and 5 MB): step_s to the end of the all-reduce; with several
// ranks the difference is the all-reduce time the overlap hides. The last
// iteration's reduced gradients of the bucketed runs must equal the one-shot
// run's (to 1e-5 of the largest; a bucket reduced before its kernels had
// written it would lose their update): wrong_values, exit 1 if any.
// Needs a build with NCCL (VT_NCCL).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "core/dist.h"
#include "core/philox.h"
#include "kernels/cross_entropy.h"
#include "train/grad_allreduce.h"
#include "train/grad_allreduce_bucketed.h"
#include "vision/vit.h"
#ifdef VT_NCCL
#include <cuda_runtime.h>

#include "train/grad_allreduce_nccl.h"
#endif

using namespace vt;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  DistSession session(&argc, &argv);
  const Dist& d = dist();
  const std::string preset = argc > 1 ? argv[1] : "cifar";
  const int64_t B = argc > 2 ? std::atoll(argv[2]) : 32;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 10;
  const std::string device = argc > 4 ? argv[4] : "cpu";
  if (device != "cpu" && device != "cuda") {
    std::fprintf(stderr, "bench_allreduce: device must be cpu or cuda, got '%s'\n", device.c_str());
    return 2;
  }
  VitConfig cfg;
  if (preset == "cifar") {
    cfg.img_size = 32, cfg.patch_size = 4;
    cfg.backbone.dim = 96, cfg.backbone.depth = 5, cfg.backbone.heads = 3, cfg.backbone.mlp_ratio = 2.0;
    cfg.num_classes = 10;
  } else {
    cfg = vit_preset(preset, NormScheme::Siamese, 0.0f, 1000);
  }
  VisionTransformer model(cfg);
  model.init(0);
  ParamStore& ps = model.params();
  if (device == "cuda") {
#ifdef VT_NCCL
    if (cudaSetDevice(d.local_rank()) != cudaSuccess) {
      std::fprintf(stderr, "bench_allreduce: no CUDA device %d\n", d.local_rank());
      return 1;
    }
    NcclGradientAllReduce nccl;
    for (int64_t n : {int64_t(1) << 20, ps.numel(), int64_t(22050664)}) {
      Tensor buf = Tensor::full({n}, 1.0f).to(Device::cuda(d.local_rank()));
      std::vector<double> t;
      for (int it = 0; it <= iters; ++it) {
        cudaDeviceSynchronize();
        d.barrier();
        const double t0 = now_s();
        nccl.mean(buf);
        cudaDeviceSynchronize();
        if (it > 0) t.push_back(now_s() - t0);
      }
      // Every rank holds ones, so the mean is 1 everywhere.
      const Tensor back = buf.to(Device::cpu());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += std::fabs(back.f32()[i] - 1.0f) > 1e-6f;
      const double s = median(t), alg = static_cast<double>(n) * 4 / s / 1e9;
      if (d.is_root())
        std::printf("{\"bench\": \"allreduce_nccl\", \"world\": %d, \"values\": %lld, \"median_s\": %.6f, "
                    "\"algbw_gb_s\": %.3f, \"busbw_gb_s\": %.3f, \"wrong_values\": %lld}\n",
                    d.world(), static_cast<long long>(n), s, alg, alg * 2.0 * (d.world() - 1) / d.world(),
                    static_cast<long long>(wrong));
      if (wrong) return 1;
    }
    // The step, one-shot vs bucketed (the first step of a bucketed run
    // learns the order: iteration 0 warms up).
    const Device dev = Device::cuda(d.local_rank());
    model.to(dev);
    const int64_t K = cfg.num_classes;
    Tensor images = Tensor::empty({B, 3, cfg.img_size, cfg.img_size});
    Philox g(1, static_cast<uint64_t>(d.rank()));
    for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
    Tensor labels = Tensor::empty({B}, DType::I32);
    for (int64_t i = 0; i < B; ++i) labels.i32()[i] = static_cast<int32_t>(g.next_u64() % static_cast<uint64_t>(K));
    images = images.to(dev), labels = labels.to(dev);
    Tensor logits = Tensor::empty({B, K}, DType::F32, dev), dlogits = Tensor::empty({B, K}, DType::F32, dev);
    Tensor one_shot;  // the last iteration's gradients without buckets
    for (double mb : {0.0, 25.0, 5.0}) {
      std::unique_ptr<BucketedGradientAllReduce> buckets;
      if (mb > 0) buckets = std::make_unique<BucketedGradientAllReduce>(ps, nccl, bucket_cap_elements(mb));
      std::vector<double> t;
      for (int it = 0; it <= iters; ++it) {
        cudaDeviceSynchronize();
        d.barrier();
        const double t0 = now_s();
        if (buckets) buckets->begin_step();
        ps.zero_grad();
        model.forward(images, logits, true, 0, static_cast<uint64_t>(it));
        cross_entropy_forward_backward(logits, labels, 0.1f, dlogits);
        model.backward(dlogits);
        if (buckets) {
          buckets->finish();
        } else {
          Tensor grads = ps.grads();
          nccl.mean(grads);
        }
        cudaDeviceSynchronize();
        if (it > 0) t.push_back(now_s() - t0);
      }
      const Tensor grads = ps.grads().to(Device::cpu());
      if (!one_shot.defined()) one_shot = grads;
      double big = 0;
      for (int64_t i = 0; i < grads.numel(); ++i) big = std::max(big, std::fabs(static_cast<double>(one_shot.f32()[i])));
      int64_t wrong = 0;
      for (int64_t i = 0; i < grads.numel(); ++i)
        wrong += std::fabs(static_cast<double>(grads.f32()[i]) - one_shot.f32()[i]) > 1e-5 * big;
      if (d.is_root())
        std::printf("{\"bench\": \"dp_step_nccl\", \"preset\": \"%s\", \"world\": %d, \"batch_per_rank\": %lld, "
                    "\"params\": %lld, \"bucket_mb\": %g, \"buckets\": %zu, \"step_s\": %.5f, "
                    "\"wrong_values\": %lld}\n",
                    preset.c_str(), d.world(), static_cast<long long>(B), static_cast<long long>(ps.numel()), mb,
                    buckets ? buckets->buckets().size() : size_t(1), median(t), static_cast<long long>(wrong));
      if (wrong) return 1;
    }
    return 0;
#else
    std::fprintf(stderr, "bench_allreduce: built without NCCL (VT_NCCL), device=cuda is not available\n");
    return 1;
#endif
  }
  MpiGradientAllReduce reduce;

  for (int64_t n : {int64_t(1) << 20, ps.numel(), int64_t(22050664)}) {
    Tensor buf = Tensor::full({n}, 1.0f);
    std::vector<double> t;
    for (int it = 0; it <= iters; ++it) {
      d.barrier();
      const double t0 = now_s();
      reduce.mean(buf);
      if (it > 0) t.push_back(now_s() - t0);
    }
    const double s = median(t), bytes = static_cast<double>(n) * 4;
    const double alg = d.world() > 1 ? bytes / s / 1e9 : 0.0;
    if (d.is_root())
      std::printf("{\"bench\": \"allreduce\", \"world\": %d, \"values\": %lld, \"median_s\": %.6f, \"algbw_gb_s\": %.3f, "
                  "\"busbw_gb_s\": %.3f}\n",
                  d.world(), static_cast<long long>(n), s, alg, alg * 2.0 * (d.world() - 1) / d.world());
  }

  const int64_t K = cfg.num_classes;
  OptimizerState opt(ps, /*with_ema=*/false);
  Tensor images = Tensor::empty({B, 3, cfg.img_size, cfg.img_size});
  Philox g(1, static_cast<uint64_t>(d.rank()));
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
  Tensor labels = Tensor::empty({B}, DType::I32);
  for (int64_t i = 0; i < B; ++i) labels.i32()[i] = static_cast<int32_t>(g.next_u64() % static_cast<uint64_t>(K));
  Tensor logits = Tensor::empty({B, K}), dlogits = Tensor::empty({B, K});
  AdamWParams hp;
  hp.lr = 5e-4, hp.weight_decay = 0.05;
  std::vector<double> steps, reduces;
  for (int it = 0; it <= iters; ++it) {  // iteration 0 warms up
    d.barrier();
    const double t0 = now_s();
    ps.zero_grad();
    model.forward(images, logits, true, 0, static_cast<uint64_t>(it));
    cross_entropy_forward_backward(logits, labels, 0.1f, dlogits);
    model.backward(dlogits);
    const double t1 = now_s();
    Tensor grads = ps.grads();
    reduce.mean(grads);
    const double t2 = now_s();
    opt.adamw_step(hp);
    if (it > 0) steps.push_back(now_s() - t0), reduces.push_back(t2 - t1);
  }
  if (d.is_root())
    std::printf("{\"bench\": \"dp_step\", \"preset\": \"%s\", \"world\": %d, \"batch_per_rank\": %lld, \"threads\": %d, "
                "\"params\": %lld, \"step_s\": %.4f, \"allreduce_s\": %.4f}\n",
                preset.c_str(), d.world(), static_cast<long long>(B), omp_get_max_threads(),
                static_cast<long long>(ps.numel()), median(steps), median(reduces));
  return 0;
}
