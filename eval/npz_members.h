// Selective .npz access for veval: list the keys of an archive, or load only
// some members, without reading the others (an ADM reference batch holds
// ~2 GB of arr_0 next to a 32 MB mu/sigma). Member parsing is core/npz.h's
// parse_npy; this adds only the zip directory access (libzip).
// Errors: std::runtime_error naming the file (and member).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/npz.h"

namespace vt {

// Keys (member names without ".npy"), in archive order.
std::vector<std::string> npz_keys(const std::string& path);
// The named members; throws when one is absent (listing the keys present).
std::map<std::string, NpyArray> load_npz_members(const std::string& path, const std::vector<std::string>& keys);

}  // namespace vt
