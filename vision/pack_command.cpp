#include "vision/pack_command.h"

#include <omp.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/config_paths.h"
#include "core/output_claim.h"
#include "data_pipeline/shard_pack.h"
#include "vision/train_config.h"

namespace vt {

namespace {

int64_t parse_int(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  const char* end = v.data() + v.size();
  const auto r = std::from_chars(v.data(), end, x);
  if (r.ec != std::errc() || r.ptr != end || x < lo || x > hi)
    throw ConfigError("pack: " + key + "=" + v + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return x;
}

}  // namespace

const std::set<std::string>& pack_arg_keys() {
  static const std::set<std::string> k = {"out", "split", "max_side", "quality", "shard_size"};
  return k;
}

void run_pack(const Config& cfg, const std::string& config_path, const std::map<std::string, std::string>& args) {
  auto it = args.find("out");
  if (it == args.end() || it->second.empty()) throw ConfigError("pack: out=DIR is required");
  const std::string out = it->second;
  const TrainOptions t = train_options(cfg, config_path);
  if (t.threads > 0) omp_set_num_threads(t.threads);  // images are prepared in parallel, as training's threads
  PackOptions base;
  base.on_corrupt = t.on_corrupt;
  if (args.count("max_side")) base.max_side = parse_int("max_side", args.at("max_side"), 1, 1 << 20);
  if (args.count("quality")) {
    if (!args.count("max_side")) throw ConfigError("pack: quality= applies to re-encoded images only: give max_side=N too");
    base.quality = static_cast<int>(parse_int("quality", args.at("quality"), 1, 100));
  }
  if (args.count("shard_size")) base.shard_size = parse_int("shard_size", args.at("shard_size"), 1, int64_t{1} << 30);
  std::vector<std::string> splits;
  const std::string which = args.count("split") ? args.at("split") : "";
  if (which != "train" && which != "val" && !which.empty())
    throw ConfigError("pack: split=" + which + ": expected train (data.train_split) | val (data.val_split)");
  if (which == "train" || which.empty()) splits.push_back(t.train_split);
  // split=val packs data.val_split even when it is the train folder (it is
  // what was asked for); with no split= a folder both keys name is packed once.
  if (which == "val" || (which.empty() && t.val_split != t.train_split)) splits.push_back(t.val_split);
  if (which.empty() && t.val_split == t.train_split)
    std::printf("vtrain pack: data.train_split and data.val_split both name '%s': packing it once\n",
                t.train_split.c_str());
  namespace fs = std::filesystem;
  // pack reads image folders; a config that trains on shards names a pack's output.
  if (t.data_format == "shards")
    throw ConfigError("pack: data.format is 'shards' (" + cfg.source("data.format") + "): data.root '" + t.data_root +
                      "' is read as packed shards, but vtrain pack packs an ImageFolder: give the images' folder "
                      "with data.format=folder data.root=DIR");
  if (!fs::is_directory(t.data_root))
    throw std::runtime_error("pack: " + missing_data_root_message(cfg, "data.root", config_path));
  // The shards go to out/<split folder>/: out= the data root would put them
  // into the image folders being packed (a class folder more next time).
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(out)), root_abs = fs::weakly_canonical(t.data_root);
  for (const std::string& split : splits) {
    const fs::path images = root_abs / split;
    const fs::path rel = (out_abs / split).lexically_relative(images);
    const bool inside = !rel.empty() && *rel.begin() != "..";
    if (inside)
      throw ConfigError("pack: out=" + out + " is " +
                        (out_abs == root_abs ? std::string("data.root") : "inside data.root's '" + split + "' folder") +
                        " ('" + t.data_root + "'): the shards would be written among the images being packed; "
                        "give another folder");
  }
  // One pack per out= at a time (core/output_claim.h): two would write the same shards.
  const OutputClaim claim({"pack", "out=", ""}, out, /*is_dir=*/true);
  for (const std::string& split : splits) {
    PackOptions o = base;
    o.images_dir = t.data_root + "/" + split;
    o.out_dir = (fs::path(out) / split).string();
    const PackReport r = pack_shards(o);
    std::printf("vtrain pack: %s -> %s: %lld images in %lld shards (%lld written, %lld already there), "
                "%.1f MiB of images (%.1f MiB of tar), %lld re-encoded, %lld bad skipped, %.1f s\n",
                o.images_dir.c_str(), o.out_dir.c_str(), static_cast<long long>(r.images),
                static_cast<long long>(r.shards_written + r.shards_existing), static_cast<long long>(r.shards_written),
                static_cast<long long>(r.shards_existing), r.image_bytes / 1048576.0, r.tar_bytes / 1048576.0,
                static_cast<long long>(r.reencoded), static_cast<long long>(r.skipped), r.seconds);
    std::fflush(stdout);
  }
}

}  // namespace vt
