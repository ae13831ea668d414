// What `veval fid` / `veval stats` accept as a PATH (docs/recipes.md §10):
//   - a folder of images, searched recursively (extensions as ImageFolder:
//     .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp), sorted by path;
//   - an ADM-style .npz with "arr_0" uint8 [N, H, W, 3];
//   - a statistics .npz with "mu" [D] and "sigma" [D, D] (float32/float64),
//     used directly when present (even if "arr_0" is there too).
// Images are decoded to RGB (data_pipeline/decode.h), scaled v / 255 and
// bilinearly resized to 299x299 one by one, then run through the network in
// batches; statistics are accumulated in float64. An .npz's arr_0 is read a
// batch of rows at a time (core/npz_image_reader.h, as ADM's evaluator
// streams it), a folder one file at a time: memory follows the batch, not N. Under mpirun the batches
// are split over the ranks and the features gathered on rank 0
// (eval/sharded_stats.h): rank 0 gets the one-process statistics, the
// other ranks empty ones (count 0).
//
// Errors (std::runtime_error naming the path): missing path, a folder
// without images, an .npz without mu/sigma or arr_0 (listing its keys),
// arr_0 that is not uint8 [N, H, W, 3], mu/sigma shapes that disagree,
// fewer than 2 images, an undecodable image (named, also when it leaves
// fewer than 2), mu/sigma holding NaN or infinity.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "eval/frechet.h"
#include "eval/inception.h"

namespace vt {

enum class FidSourceKind { ImageFolder, ImageNpz, StatsNpz };
const char* fid_source_name(FidSourceKind k);  // "images", "npz images", "npz statistics"

// Decides the kind from the file system and, for .npz, its keys.
FidSourceKind classify_fid_source(const std::string& path);

// Image files under `root`, recursive, sorted; throws when none.
std::vector<std::string> list_images_recursive(const std::string& root);

struct FidSourceStats {
  GaussianStats stats;
  FidSourceKind kind;
  int64_t count = 0;  // images behind the statistics (0 when unknown: a stats .npz without "count")
};

// Throws when `files` (listed from folder `path`) holds fewer than 2 images;
// decodes them first so that a corrupt file is named rather than counted.
void require_two_images(const std::vector<std::string>& files, const std::string& path);

// `net` may be null only for statistics files. `progress` (nullable) is
// called after every batch with (done, total).
FidSourceStats fid_source_stats(const std::string& path, const InceptionFid* net, int64_t batch,
                                void (*progress)(int64_t, int64_t) = nullptr);

// mu and sigma as float64 arrays, as pytorch-fid's --save-stats writes them,
// plus "count" (int64 scalar, images behind them) when s.count > 0; readers
// that only take mu and sigma ignore it.
void save_stats_npz(const std::string& path, const GaussianStats& s);
// The "count" member of a statistics .npz, 0 when absent.
int64_t stored_count(const std::string& path);

// Where veval looks for the Inception weights, in order: the --inception
// argument (if non-empty), $VT_INCEPTION_WEIGHTS,
// $HOME/.cache/vtrain/pt_inception-2015-12-05.safetensors. Returns the first
// that exists; throws a message listing the places and how to make the file.
std::string find_inception_weights(const std::string& explicit_path);

}  // namespace vt
