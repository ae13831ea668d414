// data.format: shards — a split packed by `vtrain pack` (layout:
// data_pipeline/packed_shards.h) read as a Dataset.
//
// Every shard is memory-mapped (mmap PROT_READ, MADV_RANDOM: no readahead
// beyond what is asked for); a sample's encoded bytes are read straight from
// the mapping and go through the same process_image as the folder reader's,
// so sample i gives the same floats as ImageFolderDataset's sample i when the
// shards store the folder's bytes (max_side unset, nothing skipped). There is
// never a file open or read() per image: before a batch is decoded,
// will_need() issues madvise(MADV_WILLNEED) over the batch's byte ranges
// (merged per shard when less than 64 KiB apart), so the kernel reads them
// in parallel with large requests instead of one page fault at a time.
//
// Checks at construction (std::runtime_error naming the file): the manifest
// exists and is a vtrain-shards one; each of its shards has its .tar and
// .idx; the index belongs to this pack (shard number and options digest);
// the tar has the index's size (a truncated or replaced shard) and ends in
// the two zero blocks; the first and last samples' ustar headers are the
// index's; no shard-*.tar beyond the manifest's count lies in the folder.
// At every load the sample's own ustar header is checked against the index
// (name <key>.<ext>, size), so a foreign tar of the right size is still an
// error naming the shard and its index. (A shard truncated while a run has
// it mapped ends that run with SIGBUS, as with any memory-mapped reader.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data_pipeline/dataset.h"
#include "data_pipeline/packed_shards.h"

namespace vt {

class ShardDataset : public Dataset {
 public:
  ShardDataset(const std::string& dir, ImagePipelineConfig cfg);
  ~ShardDataset() override;
  ShardDataset(const ShardDataset&) = delete;
  ShardDataset& operator=(const ShardDataset&) = delete;

  int64_t size() const override { return total_; }
  Shape sample_shape() const override { return {3, cfg_.size, cfg_.size}; }
  int32_t label(int64_t i) const override;
  int num_classes() const override { return static_cast<int>(manifest_.classes.size()); }
  // "<dir>/shard-000003.tar:000001234 (<class>/<file>)".
  std::string name(int64_t i) const override;
  void load(int64_t i, Philox& rng, float* out) const override;
  bool has_augment_plans() const override { return cfg_.kind == ImagePipeline::DeitTrain; }
  void load_planned(int64_t i, Philox& rng, uint8_t* hwc, AugmentPlan* plan) const override;
  // enc->data views the mapping (nothing copied).
  void load_encoded(int64_t i, Philox& rng, EncodedSample* enc, uint8_t* hwc, AugmentPlan* plan) const override;
  void will_need(const int64_t* indices, int64_t n) const override;

  // The stored bytes of sample i (a view into the mapping, valid while the
  // dataset lives), after the header check above.
  struct Bytes {
    const uint8_t* data;
    size_t size;
  };
  Bytes bytes(int64_t i) const;

  const std::string& dir() const { return dir_; }
  const ShardManifest& manifest() const { return manifest_; }
  const std::vector<std::string>& classes() const { return manifest_.classes; }
  // Classes without a single sample (all their images were skipped as bad).
  std::vector<std::string> empty_classes() const;

 private:
  struct Shard {
    std::string tar_path, idx_path;
    ShardIndex index;
    const uint8_t* map = nullptr;
    size_t map_bytes = 0;
    int64_t first = 0;  // dataset index of its first sample
  };
  const Shard& locate(int64_t i, int64_t* row) const;
  void check_header(const Shard& s, int64_t row) const;

  std::string dir_;
  ImagePipelineConfig cfg_;
  ShardManifest manifest_;
  std::vector<Shard> shards_;
  int64_t total_ = 0;
};

}  // namespace vt
