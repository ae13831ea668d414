// One rule for every program that writes a named output (dittrain sample's
// <out>.npz, veval stats --out, dittrain extract out=, vtrain pack out=): an
// output is never replaced by something else without being asked.
//
//   * One writer at a time: the claim holds an exclusive lock
//     (core/file_lock.h) on a hidden "<parent>/.<name>.lock" beside the
//     output (a file or a directory) for its lifetime; a second writer is
//     refused at once, naming the holder.
//   * A finished output records what made it: `keys` (everything that
//     determines the result) and `info` (what only informs) in
//     "<output>.manifest.json" beside a file output, written after the
//     output itself (record()). check() compares the record with this run:
//       - no output:                         false (write it);
//       - the same keys:                     true  (it is done: nothing to do);
//       - other keys (or no record at all):  OutputDiffers naming the output,
//         the first differing key and both values, and what to do (the same
//         arguments, another output name, or the overwrite flag) -- unless
//         `overwrite`, which returns false (write it again).
//     A record is removed before its output is rewritten, so a run cut short
//     never leaves a new output under an old record.
//
// Output names (output_file_name): the name given, with the extension
// appended only when it is missing; a directory (an existing one, or a name
// ending in '/') means a file inside it with the program's default name.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/file_lock.h"

namespace vt {

using OutputKeys = std::vector<std::pair<std::string, std::string>>;

// How the program's user names the output and the overwrite switch, for
// messages: {"sample", "out=", "overwrite=true"} or {"veval stats",
// "--out", "--overwrite true"}.
struct OutputFlags {
  std::string program;
  std::string out_flag;
  std::string overwrite_flag;
};

// An existing output made by something else than this run.
class OutputDiffers : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The one wording of a refusal: "<program>: '<output>' was made with KEY =
// WAS; this run has KEY = NOW: rerun with that run's arguments (then it is
// done), give another <out_flag>, or <overwrite_flag> to replace it".
// `advice` replaces the part after the colon when not empty.
std::string output_differs_message(const OutputFlags& flags, const std::string& output, const std::string& key,
                                   const std::string& was, const std::string& now, const std::string& advice = "");

// `given` + `ext` unless `given` already ends in `ext`; a directory (existing,
// or `given` ending in '/') gives <given>/<default_stem><ext>. Throws
// std::invalid_argument for an empty name.
std::string output_file_name(const std::string& given, const std::string& ext, const std::string& default_stem);

// A cheap stamp of what `path` holds, for keys of inputs too large to hash:
// "N files, B bytes, newest <mtime ns>" for a directory (recursive), "B
// bytes, modified <mtime ns>" for a file, "absent" otherwise. Not a hash: a
// file rewritten with the same size and time is not told apart.
std::string path_stamp(const std::string& path);

class OutputClaim {
 public:
  // Locks `output` (a file path, or a directory output with is_dir; its
  // parent is created). Throws std::runtime_error naming the output and the
  // holder when another writer has it.
  OutputClaim(OutputFlags flags, std::string output, bool is_dir = false);

  // See above (file outputs; a directory output keeps its own manifest, as
  // vtrain pack's and dittrain extract's do, and uses the claim for its
  // lock and output_differs_message for its wording). Throws OutputDiffers.
  bool check(const OutputKeys& keys, bool overwrite);
  // Records keys and info for the finished output (atomic; file outputs).
  void record(const OutputKeys& keys, const OutputKeys& info = {});

  const std::string& output() const { return output_; }
  const std::string& record_path() const { return record_; }

  // "<output>.manifest.json" for a file, "<dir>/output.manifest.json" for a directory.
  static std::string record_path_for(const std::string& output, bool is_dir);

 private:
  OutputFlags flags_;
  std::string output_, record_;
  bool is_dir_;
  FileLock lock_;
};

}  // namespace vt
