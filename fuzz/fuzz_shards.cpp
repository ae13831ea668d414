// Packed shards reader (data_pipeline/shard_dataset.h: the index parser of
// packed_shards.h, the ustar header checks of ustar.h, the mapping's
// offsets) on an arbitrary index and tar. Input: a little-endian u16 L,
// then L bytes of shard-000000.idx, then the tar. The harness writes a fixed
// manifest (2 classes, 1 shard) and, when the index is long enough, its
// shard number (0) and the manifest's options digest into it, so inputs get
// past the identity checks to the offsets. Every rejected input must be a
// std::runtime_error; an accepted one must give every sample's bytes inside
// the tar, matching the index, and its name and label.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_pipeline/packed_shards.h"
#include "data_pipeline/shard_dataset.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The folder's files are registered before the folder, so they are removed first.
  static const std::string manifest = vt_fuzz::scratch_path(std::string("shards/") + vt::kShardManifestName);
  static const std::string idx = vt_fuzz::scratch_path("shards/" + vt::shard_index_name(0));
  static const std::string tar = vt_fuzz::scratch_path("shards/" + vt::shard_tar_name(0));
  static const std::string dir = vt_fuzz::scratch_path("shards");
  static const vt::ShardManifest m = [] {
    vt::ShardManifest x;
    x.source = "/fuzz";
    x.images = 2;
    x.listing_fnv1a64 = "0000000000000000";
    x.classes = {"a", "b"};
    x.shard_size = 2;
    x.shards = 1;
    return x;
  }();
  static const bool made = [] {
    std::filesystem::create_directories(dir);
    return true;
  }();
  (void)made;
  size_t n_idx = static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8);
  n_idx = std::min(n_idx, size - 2);
  std::string index(reinterpret_cast<const char*>(data + 2), n_idx);
  if (index.size() >= 64) {
    const uint64_t shard = 0, digest = m.options_digest();
    std::memcpy(&index[8], &shard, 8);
    std::memcpy(&index[32], &digest, 8);
  }
  const std::string text = vt::manifest_json(m);
  vt_fuzz::write_scratch(manifest, text.data(), text.size());
  vt_fuzz::write_scratch(idx, index.data(), index.size());
  vt_fuzz::write_scratch(tar, data + 2 + n_idx, size - 2 - n_idx);
  try {
    vt::ImagePipelineConfig pc;
    const vt::ShardDataset ds(dir, pc);
    const vt::ShardIndex ix = vt::read_shard_index(idx);
    const uint8_t* base = nullptr;
    for (int64_t i = 0; i < ds.size(); ++i) {
      const vt::ShardDataset::Bytes b = ds.bytes(i);
      if (i == 0) base = b.data - ix.samples[0].offset;
      const vt::ShardSample& e = ix.samples[static_cast<size_t>(i)];
      if (b.data != base + e.offset || b.size != e.size || e.offset + e.size > ix.tar_bytes)
        vt_fuzz::fail("sample bytes outside the tar or not the index's");
      if (ds.label(i) < 0 || ds.label(i) >= ds.num_classes()) vt_fuzz::fail("label outside the classes");
      (void)ds.name(i);
    }
    std::vector<int64_t> all(static_cast<size_t>(ds.size()));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    ds.will_need(all.data(), ds.size());
  } catch (const std::runtime_error&) {
    return 0;  // rejected with the documented error
  }
  return 0;
}
