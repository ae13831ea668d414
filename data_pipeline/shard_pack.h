// `vtrain pack`: an ImageFolder split -> packed shards (layout:
// data_pipeline/packed_shards.h).
//
// Every image is read and fully decoded once (decode.h: the checks the
// folder reader makes), so the shards hold only images training can read.
// An image whose longer side exceeds max_side (> 0) is resized so that its
// longer side is max_side and its shorter side floor(short * max_side /
// long) (at least 1; FFCV's ImageNet writer's size rule), with PIL's
// antialiased bicubic (Image.resize(..., BICUBIC), data_pipeline/resample.h;
// FFCV uses cv2.INTER_AREA), and re-encoded as JPEG at `quality` with 4:2:0
// chroma (data_pipeline/jpeg_encode.h). Every other image is stored byte for
// byte, in its own format (the member's extension says which).
//
// Bad images (CorruptImage: undecodable, unknown format, a decompression
// bomb) stop the pack with an error naming the file under on_corrupt
// "error"; under "skip" they are left out with a warning (the shard then
// holds fewer samples, so indices past it no longer equal the folder's).
//
// Writes are atomic (core/atomic_file.h): manifest.json first, then per
// shard the .tar, then its .idx; a shard whose .idx exists is complete. A
// rerun into the same folder checks the manifest against this run (every
// field but the source path: the listing, classes, max_side, quality,
// shard_size) and refuses any difference naming the manifest and the key;
// it then keeps each complete shard (after checking its index belongs to
// this pack and its tar has the index's size) and writes the rest, so an
// interrupted pack continues where it stopped. Nothing already written is
// deleted or overwritten except a .tar without its .idx (an interrupted
// shard).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

struct PackOptions {
  std::string images_dir, out_dir;   // out_dir receives manifest.json and the shards
  int64_t max_side = 0;              // 0: never re-encode
  int quality = 90;                  // re-encoding JPEG quality, 1..100
  int64_t shard_size = 5000;         // images of the listing per shard
  std::string on_corrupt = "error";  // error | skip
  bool progress = true;              // progress bar on stderr
};

struct PackReport {
  int64_t images = 0;            // samples in the shards (all of them, old and new)
  int64_t image_bytes = 0;       // their stored image bytes
  int64_t tar_bytes = 0;         // the shards' total size
  int64_t reencoded = 0;         // samples re-encoded
  int64_t skipped = 0;           // bad images left out
  // Classes of the folder left with no sample in the shards (every file of
  // theirs was a bad image, data.on_corrupt: skip), also warned about in
  // the log: training would never see them though the class count keeps them.
  std::vector<std::string> empty_classes;
  int64_t shards_written = 0, shards_existing = 0;
  double seconds = 0;            // wall time of this run
};

// Throws std::invalid_argument for bad options, std::runtime_error naming
// the folder, file or key otherwise.
PackReport pack_shards(const PackOptions& o);

}  // namespace vt
