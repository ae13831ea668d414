// `vtrain pack CONFIG out=DIR [split=train|val] [max_side=N] [quality=Q]
//  [shard_size=N] [key.path=value ...]`: the config's ImageFolder splits
// (data.root / data.train_split, data.val_split) as packed shards
// (data_pipeline/shard_pack.h) in DIR/<split folder>/, so that
// `vtrain CONFIG data.root=DIR data.format=shards` trains on them with the
// same split keys. split= packs one split (default: both; once when they
// name the same folder). Bad images follow data.on_corrupt. Prints one
// summary line per split.
#pragma once
#include <map>
#include <set>
#include <string>

#include "core/config.h"

namespace vt {

// The key=value arguments `pack` takes itself; every other one is a config override.
const std::set<std::string>& pack_arg_keys();

// Throws ConfigError for a bad or missing argument (naming it), std::runtime_error
// for data errors (naming the file).
void run_pack(const Config& cfg, const std::string& config_path, const std::map<std::string, std::string>& args);

}  // namespace vt
