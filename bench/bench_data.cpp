// Data-pipeline throughput on ../shared/data/imagenet-samples (or argv[1]):
// images/s of the DeiT train transform (RRC 224 + flip + RandAugment +
// normalize + erasing), without RandAugment, and decode only, each with 1
// and 2 loader workers. One JSON line per configuration. Compare with
// tools/data_bench_torchvision.py on the same files.
//
//   build/bench/bench_data [root] [epochs]
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/loader.h"

namespace {

// Reads and decodes at full size; writes one float so the loader has a sample.
class DecodeOnly : public vt::Dataset {
 public:
  explicit DecodeOnly(const std::string& root) : f_(root) {}
  int64_t size() const override { return f_.size(); }
  vt::Shape sample_shape() const override { return {1, 1, 1}; }
  int32_t label(int64_t i) const override { return f_.samples()[i].label; }
  int num_classes() const override { return f_.num_classes(); }
  std::string name(int64_t i) const override { return f_.samples()[i].path; }
  void load(int64_t i, vt::Philox&, float* out) const override {
    const auto bytes = vt::read_file_bytes(f_.samples()[i].path);
    const vt::DecodedImage d = vt::decode_image(bytes.data(), bytes.size(), name(i));
    out[0] = d.rgb.at<cv::Vec3b>(0, 0)[0];
  }

 private:
  vt::ImageFolder f_;
};

double run(std::shared_ptr<const vt::Dataset> ds, int workers, int epochs) {
  vt::LoaderConfig c;
  c.batch_size = 50;
  c.workers = workers;
  c.prefetch = 4;
  c.seed = 0;
  vt::Loader l(ds, c);
  int64_t images = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int e = 0; e < epochs; ++e) {
    l.start_epoch(e, vt::train_order(ds->size(), 0, e, 0, 1));
    vt::Batch b;
    while (l.next(b)) images += b.labels.numel();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return images / s;
}

}  // namespace

int main(int argc, char** argv) {
  // Default: ../shared/data/imagenet-samples beside the repository.
  const std::string root = argc > 1 && argv[1][0] ? argv[1] : std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  const int epochs = argc > 2 ? std::stoi(argv[2]) : 2;
  vt::ImagePipelineConfig full;  // DeiT train defaults
  vt::ImagePipelineConfig no_ra = full;
  no_ra.rand_augment = false;
  vt::ImagePipelineConfig full_nodct = full;
  full_nodct.dct_scaling = false;
  struct Cfg {
    const char* name;
    std::shared_ptr<const vt::Dataset> ds;
  } cfgs[] = {
      {"train_full", std::make_shared<vt::ImageFolderDataset>(root, full)},
      {"train_full_no_dct_scaling", std::make_shared<vt::ImageFolderDataset>(root, full_nodct)},
      {"train_no_randaugment", std::make_shared<vt::ImageFolderDataset>(root, no_ra)},
      {"decode_only", std::make_shared<DecodeOnly>(root)},
  };
  run(cfgs[0].ds, 2, 1);  // warm the page cache
  for (const auto& c : cfgs)
    for (int w : {1, 2})
      std::printf("{\"bench\": \"data\", \"config\": \"%s\", \"workers\": %d, \"images_per_s\": %.1f}\n", c.name, w,
                  run(c.ds, w, epochs));
  return 0;
}
