// The on-disk state of an unfinished `dittrain sample`
// (diffusion/dit_sample_files.h), next to its output <out>.npz:
//
//   <out>.partial/manifest.json    {"format": "vtrain-sample-partial",
//                                   "keys": {KEY: VALUE, ...}, "info": {...}}
//   <out>.partial/chunk_<k>.npz    the rows [k * chunk, (k + 1) * chunk) of the
//                                  final npz's arrays (k: 6 digits)
//
// Every file is written atomically (core/atomic_file.h), so a file that is
// there is complete: a SIGKILL loses at most the chunk in flight. `keys` are
// everything that determines the samples (weights fingerprint, sampler,
// steps, seed, N, chunk, VAE fingerprint, ...); `info` only informs (the
// checkpoint's path: the weights' fingerprint decides). The directory is
// the same idea as `dittrain extract`'s shards (diffusion/latent_extract.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/npz.h"

namespace vt {

class SamplePartial {
 public:
  using Keys = std::vector<std::pair<std::string, std::string>>;

  // "<out>.partial".
  static std::string dir_for(const std::string& out);

  // Opens <out>.partial, or creates it with a manifest of `keys` and `info`.
  // An existing manifest must hold exactly `keys`: otherwise throws
  // std::runtime_error naming the directory, the first differing key and
  // both values, and how to continue (the same arguments) or start over
  // (delete the directory); nothing is removed. A directory without a
  // manifest but with chunk files, or an unreadable manifest, is an error
  // naming the file. Temporary files of writes cut short (*.tmp.<pid>) are
  // removed. Chunk files with k >= num_chunks are an error naming the file.
  // start_over (overwrite=true): a directory of other keys, or one that
  // cannot be matched, is removed and started afresh instead.
  SamplePartial(const std::string& out, const Keys& keys, const Keys& info, int64_t num_chunks,
                bool start_over = false);

  const std::string& dir() const { return dir_; }
  std::string chunk_path(int64_t k) const;
  bool done(int64_t k) const { return done_.at(static_cast<size_t>(k)); }
  int64_t chunks_done() const;

  // Writes chunk k atomically (save_npz) and marks it done.
  void write(int64_t k, const std::map<std::string, NpyArray>& arrays);
  // Removes the directory (after the final npz is written).
  void remove();

 private:
  std::string dir_;
  std::vector<bool> done_;
};

}  // namespace vt
