// veval's FID embeddings on emulated CUDA against the CPU (test_eval_emu):
// the width/16 FID Inception (committed pytorch-fid fixture) moved to the
// device, a tiny vtrain classifier as the --features embedding, and the
// veval program itself (veval_emu: eval/main/veval.cpp over the emulated op
// library) running `stats --device cuda`, whose statistics must be the CPU
// run's.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "core/npz.h"
#include "core/safetensors.h"
#include "eval/features_embedding.h"
#include "eval/fid_inputs.h"
#include "eval/fid_protocol.h"
#include "eval/manifold.h"
#include "eval/inception.h"
#if defined(VT_CUDNN_CONV)
#include "kernels/cuda/conv_cudnn.h"
#endif
#include "vision/train_config.h"
#include "vision/vision_test_util.h"
#include "vision/vit.h"

namespace vt {
namespace {

const std::string kW16 = std::string(VT_FIXTURES_DIR) + "/eval/inception_w16.safetensors";

// max |got - want| / max |want|.
double rel_max_err(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num = std::max(num, std::fabs(got[i] - want[i]));
    den = std::max(den, std::fabs(want[i]));
  }
  return num / den;
}
std::vector<double> doubles(const Tensor& t) {
  const std::vector<float> v = t.contiguous().to_vector();
  return {v.begin(), v.end()};
}
std::vector<double> doubles(const Eigen::VectorXd& v) { return {v.data(), v.data() + v.size()}; }
std::vector<double> doubles(const Eigen::MatrixXd& m) { return {m.data(), m.data() + m.size()}; }

// Statistics of features that agree to ~1e-5 relative (fp32 sums in another
// order, through ~100 conv layers): mu inherits that error; sigma, products
// of centred features, at most twice it relative to its largest entry. 1e-4
// leaves a margin of 5x and still catches any wrong tap or channel.
void expect_stats_close(const GaussianStats& got, const GaussianStats& want, const std::string& what) {
  ASSERT_EQ(got.dim(), want.dim()) << what;
  EXPECT_EQ(got.count, want.count) << what;
  const double emu = rel_max_err(doubles(got.mu), doubles(want.mu));
  const double es = rel_max_err(doubles(Eigen::MatrixXd(got.sigma)), doubles(Eigen::MatrixXd(want.sigma)));
  EXPECT_LT(emu, 1e-4) << what << ": mu relative error " << emu;
  EXPECT_LT(es, 1e-4) << what << ": sigma relative error " << es;
  std::printf("%s: mu rel err %.3g, sigma rel err %.3g\n", what.c_str(), emu, es);
}

TEST(FidEmu, InceptionFeaturesMatchCpuAndPytorchFid) {
  const auto sd = load_safetensors(kW16);
  const Tensor images = sd.at("images").slice(0, 0, 2).contiguous();  // [2, 75, 90, 3] photos
  const Tensor want = sd.at("features").slice(0, 0, 2).contiguous();  // pytorch-fid's
  InceptionFid cpu(sd, "w16"), gpu(sd, "w16");
  gpu.to(Device::cuda(0));
  EXPECT_TRUE(gpu.device().is_cuda());
  Tensor fc = Tensor::empty({2, cpu.feature_dim()}), fg = Tensor::empty({2, gpu.feature_dim()});
  cpu.features_u8(images, fc);
#if defined(VT_CUDNN_CONV)
  const auto before = cuda::cudnn_conv_counts();
#endif
  gpu.features_u8(images, fg);  // host images in, host features out
#if defined(VT_CUDNN_CONV)
  // With cuDNN built, every conv unit (conv + folded BN + ReLU) ran as one
  // fused cuDNN call (tests/cuda/emu/cudnn_emu.cpp), none padded or refused.
  int64_t units = 0;
  for (const auto& [name, shape] : InceptionFid::state_dict_shapes(16)) units += name.find(".conv.weight") != std::string::npos;
  const auto after = cuda::cudnn_conv_counts();
  EXPECT_EQ(after.fused - before.fused, units);
  EXPECT_EQ(after.unfused - before.unfused, 0);
  EXPECT_EQ(after.padded - before.padded, 0);
  EXPECT_EQ(after.refused - before.refused, 0);
#endif
  const double e_cpu = rel_max_err(doubles(fg), doubles(fc)), e_ref = rel_max_err(doubles(fg), doubles(want));
  std::printf("emulated CUDA Inception: rel err %.3g vs CPU, %.3g vs pytorch-fid\n", e_cpu, e_ref);
  EXPECT_LT(e_cpu, 1e-4);
  EXPECT_LT(e_ref, 1e-4);
  // Device-resident images and features: the same device computation.
  Tensor on_dev = Tensor::empty({2, gpu.feature_dim()}, DType::F32, Device::cuda(0));
  gpu.features(u8_nhwc_to_unit_nchw(images).to(Device::cuda(0)), on_dev);
  EXPECT_EQ(on_dev.to_vector(), fg.to_vector());
  // Images on another device than the network are refused, naming both.
  EXPECT_THROW(cpu.features(u8_nhwc_to_unit_nchw(images).to(Device::cuda(0)), fc), std::invalid_argument);
}

// veval --precision tf32: the convolutions' inputs rounded to TF32 by cuDNN
// (its stand-in rounds x and w to 10 mantissa bits, unit roundoff 2^-11, for
// any math type but CUDNN_FMA_MATH, as tensor cores may). The features must
// move (the flag reached cuDNN) but stay near fp32's: through ~100 conv
// units of this random-weight test network the rounding grows to a few
// percent of the largest feature (measured 2.8e-2), while a wrong layout,
// channel or tap gives errors of order 1, so 0.1 separates the two.
TEST(FidEmu, Tf32FeaturesMoveButStayClose) {
  const auto sd = load_safetensors(kW16);
  const Tensor images = sd.at("images").slice(0, 0, 2).contiguous();
  InceptionFid cpu(sd, "w16"), gpu(sd, "w16");
  EXPECT_THROW(cpu.set_tf32(true), std::invalid_argument);  // the CPU computes in fp32 only
  gpu.to(Device::cuda(0));
  Tensor f32 = Tensor::empty({2, gpu.feature_dim()}), t32 = Tensor::empty({2, gpu.feature_dim()});
  gpu.features_u8(images, f32);
  gpu.set_tf32(true);
  EXPECT_TRUE(gpu.tf32());
  gpu.features_u8(images, t32);
  const double e = rel_max_err(doubles(t32), doubles(f32));
  std::printf("emulated CUDA Inception, tf32 vs fp32 features: rel err %.3g\n", e);
#if defined(VT_CUDNN_CONV)
  EXPECT_GT(e, 0.0);
#else
  EXPECT_EQ(e, 0.0);  // the hand-written kernel has no TF32 path
#endif
  EXPECT_LT(e, 0.1);
  gpu.set_tf32(false);
  gpu.features_u8(images, t32);
  EXPECT_EQ(t32.to_vector(), f32.to_vector());
}

// ADM's suite taps on the device: pool features and the mixed_6/conv
// spatial features (copied back and reordered to (h, w, c)) as on the CPU.
TEST(FidEmu, SuiteTapsOnCudaMatchCpu) {
  const auto sd = load_safetensors(kW16);
  InceptionFid cpu(sd, "w16"), gpu(sd, "w16");
  gpu.to(Device::cuda(0));
  const Tensor images = sd.at("images").slice(0, 0, 2).contiguous();
  Tensor x = Tensor::empty({2, 3, 299, 299});
  for (int64_t i = 0; i < 2; ++i)
    preprocess_fid_image(images.u8() + i * 75 * 90 * 3, 75, 90, FidProtocol::Adm, x, i);
  Tensor pc = Tensor::empty({2, cpu.feature_dim()}), pg = Tensor::empty({2, gpu.feature_dim()});
  Tensor sc = Tensor::empty({2, InceptionFid::spatial_dim()}), sg = Tensor::empty({2, InceptionFid::spatial_dim()});
  cpu.forward(x, pc, sc);
  gpu.forward(x, pg, sg);
  const double ep = rel_max_err(doubles(pg), doubles(pc)), es = rel_max_err(doubles(sg), doubles(sc));
  std::printf("emulated CUDA suite taps: pool rel err %.3g, spatial rel err %.3g\n", ep, es);
  EXPECT_LT(ep, 1e-4);
  EXPECT_LT(es, 1e-4);
}

// Precision / recall with the dot products on the device (cuBLAS SGEMM):
// the numpy evaluator's values on the fixture (tools/adm_eval_fixture.py;
// there, float32 and float64 distances agree), for two blockings.
TEST(FidEmu, PrecisionRecallOnCudaMatchesNumpy) {
  const auto fx = load_npz(std::string(VT_FIXTURES_DIR) + "/eval/adm_suite.npz");
  const NpyArray& r = fx.at("pr_ref");
  const NpyArray& s = fx.at("pr_samples");
  std::vector<float> ref = r.as<float>(), smp = s.as<float>();
  for (int64_t block : {64, 4096}) {
    ManifoldOptions o;
    o.device = Device::cuda(0);
    o.row_block = block, o.col_block = block;
    const PrecisionRecall pr = precision_recall(ref.data(), r.shape[0], smp.data(), s.shape[0], r.shape[1], o);
    EXPECT_EQ(pr.precision, fx.at("pr_precision_fp64").to_f64()[0]) << block;
    EXPECT_EQ(pr.recall, fx.at("pr_recall_fp64").to_f64()[0]) << block;
  }
}

// Runs `cmd`, returns its exit status and stdout+stderr.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) *out += buf;
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(FidEmu, VevalStatsOnCudaGivesTheCpuStatistics) {
  vt_test::TmpDir tmp;
  const auto sd = load_safetensors(kW16);
  const Tensor images = sd.at("images").contiguous();  // [3, 75, 90, 3]
  const std::string npz = tmp.path() + "/images.npz", out = tmp.path() + "/stats.npz";
  save_npz(npz, {{"arr_0", NpyArray::from(std::vector<uint8_t>(images.u8(), images.u8() + images.numel()), images.shape())}});
  InceptionFid cpu(sd, "w16");
  const FidSourceStats want = fid_source_stats(npz, &cpu, 2);

  std::string log;
  const int rc = run(std::string(VT_VEVAL_EMU_EXE) + " stats --images " + npz + " --out " + out +
                         " --batch 2 --device cuda --protocol pytorch-fid --inception " + kW16,
                     &log);
  ASSERT_EQ(rc, 0) << log;
  EXPECT_NE(log.find("device: cuda:0 (CUDA emulator"), std::string::npos) << log;
  const FidSourceStats got = fid_source_stats(out, nullptr, 1);
  expect_stats_close(got.stats, want.stats, "veval stats --device cuda");

  // --precision tf32: the report says so, and the statistics stay close.
  log.clear();
  const std::string out32 = tmp.path() + "/stats_tf32.npz";
  ASSERT_EQ(run(std::string(VT_VEVAL_EMU_EXE) + " stats --images " + npz + " --out " + out32 +
                    " --batch 2 --device cuda --precision tf32 --protocol pytorch-fid --inception " + kW16,
                &log),
            0)
      << log;
  EXPECT_NE(log.find("precision tf32"), std::string::npos) << log;

  // A device index past the visible ones: vtrain's words for its device key.
  log.clear();
  EXPECT_EQ(run(std::string(VT_VEVAL_EMU_EXE) + " stats --images " + npz + " --out " + out +
                    " --device cuda:1 --inception " + kW16,
                &log),
            2);
  EXPECT_NE(log.find("--device: 'cuda:1' asked, but only 1 CUDA device is visible"), std::string::npos) << log;
}

TEST(FidEmu, ClassifierFeaturesOnCudaGiveTheCpuStatistics) {
  vt_test::TmpDir tmp;
  const std::string data = tmp.path() + "/data", run_dir = tmp.path() + "/runs/f";
  vt_test::make_cifar_subset(data, 2, 1, 5);  // test/: 10 CIFAR-10 JPEGs
  const std::string yaml = "name: f\nseed: 1\nthreads: 1\n"
                           "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 2, heads: 2,"
                           " num_classes: 5, norm: {scheme: siamese}}\n"
                           "data: {root: " + data + ", val_split: test, crop_pct: 0.875}\n";
  Config cfg = Config::parse(yaml, vtrain_schema(), {}, "f.yaml", ".");
  std::filesystem::create_directories(run_dir);
  cfg.save(run_dir + "/config.yaml");
  VisionTransformer m(train_options(cfg, "f.yaml").vit);
  m.init(21);
  CheckpointData d;
  d.model = m.params().state_dict();
  d.state = {{"step", 2}};
  save_checkpoint(run_dir, 2, d);

  ClassifierEmbedding cpu = ClassifierEmbedding::load(run_dir + "/step_2", "");
  ClassifierEmbedding gpu = ClassifierEmbedding::load(run_dir + "/step_2", "");
  gpu.to(Device::cuda(0));
  const FidSourceStats want = embedding_source_stats(data + "/test", cpu, 4);
  const FidSourceStats got = embedding_source_stats(data + "/test", gpu, 4);
  EXPECT_EQ(got.count, 10);
  expect_stats_close(got.stats, want.stats, "classifier features on CUDA");
}

}  // namespace
}  // namespace vt
