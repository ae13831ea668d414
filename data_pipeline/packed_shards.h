// Packed shards: an ImageFolder split as WebDataset-layout tar shards plus a
// binary index per shard, written by `vtrain pack` (data_pipeline/shard_pack.h)
// and read with data.format: shards (data_pipeline/shard_dataset.h).
//
// A split folder holds
//   manifest.json        what was packed and how (below); written first
//   shard-NNNNNN.tar     POSIX ustar (data_pipeline/ustar.h), per sample two
//                        members: <key>.<ext> (the image) and <key>.cls (the
//                        class index as ASCII decimal, no newline), as the
//                        webdataset library and DALI's webdataset reader
//                        expect; key = the image's position in the folder's
//                        sorted listing, 9 digits ("000001234", no dots); ext
//                        = the stored bytes' format: jpg, png, bmp, ppm,
//                        tiff or webp
//   shard-NNNNNN.idx     the shard's index (below)
// Shard k holds the images [k * shard_size, (k + 1) * shard_size) of the
// listing (fewer when bad images were skipped), in listing order, so sample
// i of the concatenated shards is image i of the folder when nothing was
// skipped.
//
// manifest.json: {"format": "vtrain-shards", "version": 1, "source": the
// folder's absolute path, "images": images in its listing, "listing_fnv1a64":
// FNV-1a 64 (hex) of the relative paths and labels in order, "classes": the
// class folder names in label order (ImageFolder's sorted mapping),
// "max_side", "quality" (0 when max_side is 0), "shard_size", "shards"}.
// Every field but "source" identifies the pack: options_digest() hashes them.
//
// Index (little-endian): a 64-byte header
//   char[8] "VTSHIDX1", u64 shard number, u64 samples, u64 tar bytes,
//   u64 options digest (the manifest's), u64 first image (listing position of
//   the shard's first input image), u64 images skipped as bad, u64 name bytes
// then per sample {u64 offset of the image data in the tar, u64 size, u64
// listing position (the key), i32 label, u16 format (ImageFormat), u16 flags
// (bit 0: re-encoded)}, then the
// samples' relative source paths, each NUL-terminated (for messages).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data_pipeline/image_header.h"

namespace vt {

constexpr const char* kShardManifestName = "manifest.json";

struct ShardManifest {
  std::string source;
  int64_t images = 0;
  std::string listing_fnv1a64;
  std::vector<std::string> classes;
  int64_t max_side = 0;  // 0: every image stored byte for byte
  int quality = 0;       // JPEG quality of re-encoded images (0 with max_side 0)
  int64_t shard_size = 0;
  int64_t shards = 0;
  // The pack's policy for unreadable images (error | skip; "" in a manifest
  // written before it was recorded). Not in the digest: the shards of a pack
  // that met no bad image are the same either way (data_pipeline/shard_pack.h
  // says which reruns continue a pack).
  std::string on_corrupt;

  // FNV-1a 64 of every field but `source` and `on_corrupt`: stored in each index.
  uint64_t options_digest() const;
  // The first field that differs from `o` (not comparing `source`) as
  // "key = 'mine'" / "'theirs'" text in *mine / *theirs; false when none.
  bool differs(const ShardManifest& o, std::string* key, std::string* mine, std::string* theirs) const;
};

std::string manifest_json(const ShardManifest& m);
// Reads <dir>/manifest.json; throws std::runtime_error naming the file for a
// missing file, bad JSON, another format or version, or a missing field.
ShardManifest read_shard_manifest(const std::string& dir);

struct ShardSample {
  uint64_t offset = 0;  // of the image data (its ustar header is 512 bytes before)
  uint64_t size = 0;
  uint64_t position = 0;  // in the folder's listing: the member's key
  int32_t label = 0;
  uint16_t format = 0;  // ImageFormat
  uint16_t flags = 0;   // kShardReencoded
};
constexpr uint16_t kShardReencoded = 1;

struct ShardIndex {
  uint64_t shard = 0, tar_bytes = 0, options_digest = 0, first_image = 0, skipped = 0;
  std::vector<ShardSample> samples;
  std::vector<std::string> names;  // relative source paths, one per sample
};

std::string encode_shard_index(const ShardIndex& idx);
// Parses an index file; throws std::runtime_error naming `path` for a
// short file, bad magic, sizes that do not add up, or samples whose offsets
// are not increasing, block-aligned and inside the tar.
ShardIndex read_shard_index(const std::string& path);

std::string shard_tar_name(int64_t k);    // "shard-000012.tar"
std::string shard_index_name(int64_t k);  // "shard-000012.idx"
std::string shard_sample_key(int64_t listing_pos);  // "000001234"
const char* shard_extension(ImageFormat f);  // "jpg", "png", ...

// FNV-1a 64 over bytes, continuing from `h`.
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 14695981039346656037ull);

}  // namespace vt
