// Range checks for config values that parse but may make no sense, shared by
// the programs' config readers. Every failure is a ConfigError naming the
// key and where its value came from ("train.lr (file.yaml:12): must be ...").
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "core/config.h"

namespace vt {

// Throws ConfigError "<key> (<source>): <what>".
[[noreturn]] void bad_value(const Config& cfg, const std::string& key, const std::string& what);

// An integer key in [lo, hi] (the default hi: what fits an int, as the data
// pipeline and kernels index with int).
int64_t int_in(const Config& cfg, const std::string& key, int64_t lo,
               int64_t hi = std::numeric_limits<int32_t>::max());

// A finite float key with lo <= v <= hi; open_lo / open_hi make that end
// strict. An infinite hi means no upper bound.
double real_in(const Config& cfg, const std::string& key, double lo, double hi, bool open_lo = false,
               bool open_hi = false);

// A float key only some settings read (model.norm.mixln_alpha: the mixln
// scheme). When `read` is false, a value other than `default_value` (the
// schema's default; NaN when that is null; null always passes) is a ConfigError naming the
// key and `reader`, instead of being silently ignored. A run's saved
// config.yaml, which spells every default out, therefore still loads.
void reject_unread(const Config& cfg, const std::string& key, bool read, const std::string& reader,
                   double default_value);

// Whether `key` was given (in a config file, one of its _base_ files or on
// the command line) rather than filled in from the schema's default: such a
// key overrides what a model preset would set, as keyword arguments do in
// timm's and DiT's model constructors.
bool given(const Config& cfg, const std::string& key);

// A run name is one path component under out_dir: letters, digits, '-', '_',
// '.', and neither '.' nor '..'.
std::string run_name(const Config& cfg, const std::string& key = "name");


}  // namespace vt
