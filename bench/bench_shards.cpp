// Packed shards against the image folder they were packed from, in one
// invocation: the folder (default ../shared/data/cifar10/test, run from the
// repository root) is packed
// into a temporary directory (stored byte for byte), then the loader reads
// both in the same shuffled order with the page cache warm:
//   bytes      a sample's encoded bytes only (folder: open + read + close of
//              its file; shards: the mapped bytes), one float out
//   cifar      the CIFAR-10 configs' train transform (RandomResizedCrop 32 +
//              flip + normalize)
// One JSON line per (kind, reader, workers) with images/s, then the ratio
// shards / folder per kind and worker count. Optional pack figures too.
//
//   build/bench/bench_shards [folder] [epochs] [workers...]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/shard_dataset.h"
#include "data_pipeline/shard_pack.h"

namespace {

// The bytes of each sample, summed into one float (no decode).
class FolderBytes : public vt::Dataset {
 public:
  explicit FolderBytes(const std::string& root) : f_(root) {}
  int64_t size() const override { return f_.size(); }
  vt::Shape sample_shape() const override { return {1, 1, 1}; }
  int32_t label(int64_t i) const override { return f_.samples()[i].label; }
  int num_classes() const override { return f_.num_classes(); }
  std::string name(int64_t i) const override { return f_.samples()[i].path; }
  void load(int64_t i, vt::Philox&, float* out) const override {
    const auto b = vt::read_file_bytes(f_.samples()[i].path);
    unsigned s = 0;
    for (uint8_t c : b) s += c;
    out[0] = static_cast<float>(s);
  }

 private:
  vt::ImageFolder f_;
};

class ShardBytes : public vt::Dataset {
 public:
  explicit ShardBytes(std::shared_ptr<vt::ShardDataset> d) : d_(std::move(d)) {}
  int64_t size() const override { return d_->size(); }
  vt::Shape sample_shape() const override { return {1, 1, 1}; }
  int32_t label(int64_t i) const override { return d_->label(i); }
  int num_classes() const override { return d_->num_classes(); }
  std::string name(int64_t i) const override { return d_->name(i); }
  void will_need(const int64_t* idx, int64_t n) const override { d_->will_need(idx, n); }
  void load(int64_t i, vt::Philox&, float* out) const override {
    const vt::ShardDataset::Bytes b = d_->bytes(i);
    unsigned s = 0;
    for (size_t k = 0; k < b.size; ++k) s += b.data[k];
    out[0] = static_cast<float>(s);
  }

 private:
  std::shared_ptr<vt::ShardDataset> d_;
};

double run(const std::shared_ptr<const vt::Dataset>& ds, int workers, int epochs) {
  vt::LoaderConfig c;
  c.batch_size = 64;
  c.workers = workers;
  c.seed = 0;
  vt::Loader l(ds, c);
  int64_t images = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int e = 0; e < epochs; ++e) {
    l.start_epoch(e, vt::train_order(ds->size(), 0, e, 0, 1));
    vt::Batch b;
    while (l.next(b)) images += b.labels.numel();
  }
  return images / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  // Default relative to the repository root, where it is run from.
  const std::string root = argc > 1 && argv[1][0] ? argv[1] : "../shared/data/cifar10/test";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<int> workers;
  for (int a = 3; a < argc; ++a) workers.push_back(std::atoi(argv[a]));
  if (workers.empty()) workers = {1, 2};
  const std::string out = (std::filesystem::temp_directory_path() / ("vt_bench_shards_" + std::to_string(getpid()))).string();
  vt::PackOptions po;
  po.images_dir = root;
  po.out_dir = out;
  po.progress = false;
  const vt::PackReport pr = vt::pack_shards(po);
  std::printf("{\"bench\": \"shards\", \"pack\": \"%s\", \"images\": %lld, \"tar_mib\": %.1f, \"seconds\": %.2f}\n",
              root.c_str(), static_cast<long long>(pr.images), pr.tar_bytes / 1048576.0, pr.seconds);

  vt::ImagePipelineConfig cifar;  // configs/cifar10_vit_tiny_siamese.yaml's train transform
  cifar.size = 32;
  cifar.rrc.scale_lo = 0.35;
  cifar.rand_augment = false;
  cifar.random_erasing = false;
  const auto shards = std::make_shared<vt::ShardDataset>(out, cifar);
  struct Pair {
    const char* kind;
    std::shared_ptr<const vt::Dataset> folder, packed;
  } pairs[] = {
      {"bytes", std::make_shared<FolderBytes>(root), std::make_shared<ShardBytes>(shards)},
      {"cifar", std::make_shared<vt::ImageFolderDataset>(root, cifar), shards},
  };
  run(pairs[0].folder, 2, 1);  // warm the page cache for both
  run(pairs[0].packed, 2, 1);
  for (const auto& p : pairs)
    for (int w : workers) {
      const double f = run(p.folder, w, epochs), s = run(p.packed, w, epochs);
      std::printf("{\"bench\": \"shards\", \"kind\": \"%s\", \"workers\": %d, \"folder_img_s\": %.1f, "
                  "\"shards_img_s\": %.1f, \"ratio\": %.2f}\n",
                  p.kind, w, f, s, s / f);
    }
  std::filesystem::remove_all(out);
  return 0;
}
