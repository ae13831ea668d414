#include "data_pipeline/packed_shards.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "data_pipeline/ustar.h"

namespace vt {

namespace {

constexpr char kIndexMagic[8] = {'V', 'T', 'S', 'H', 'I', 'D', 'X', '1'};
constexpr size_t kIndexHeader = 64, kIndexEntry = 32;

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The manifest's identifying fields as one canonical string.
std::string options_text(const ShardManifest& m) {
  nlohmann::json j = nlohmann::json::parse(manifest_json(m));
  j.erase("source");
  j.erase("on_corrupt");
  return j.dump();
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t ShardManifest::options_digest() const {
  const std::string t = options_text(*this);
  return fnv1a64(t.data(), t.size());
}

bool ShardManifest::differs(const ShardManifest& o, std::string* key, std::string* mine, std::string* theirs) const {
  const nlohmann::json a = nlohmann::json::parse(manifest_json(*this)), b = nlohmann::json::parse(manifest_json(o));
  for (const auto& [k, v] : a.items()) {
    if (k == "source" || (b.contains(k) && b.at(k) == v)) continue;
    if (!b.contains(k)) continue;  // a field the other manifest does not record (on_corrupt of an older pack)
    *key = k;
    *mine = v.dump();
    *theirs = b.at(k).dump();
    if (k == "classes") {  // name the first differing class rather than two long lists
      const auto& ca = classes;
      const auto& cb = o.classes;
      size_t i = 0;
      while (i < ca.size() && i < cb.size() && ca[i] == cb[i]) ++i;
      *mine = std::to_string(ca.size()) + " classes, #" + std::to_string(i) + " '" + (i < ca.size() ? ca[i] : "") + "'";
      *theirs = std::to_string(cb.size()) + " classes, #" + std::to_string(i) + " '" + (i < cb.size() ? cb[i] : "") + "'";
    }
    return true;
  }
  return false;
}

std::string manifest_json(const ShardManifest& m) {
  nlohmann::ordered_json j;
  j["format"] = "vtrain-shards";
  j["version"] = 1;
  j["source"] = m.source;
  j["images"] = m.images;
  j["listing_fnv1a64"] = m.listing_fnv1a64;
  j["classes"] = m.classes;
  j["max_side"] = m.max_side;
  j["quality"] = m.quality;
  j["shard_size"] = m.shard_size;
  j["shards"] = m.shards;
  if (!m.on_corrupt.empty()) j["on_corrupt"] = m.on_corrupt;
  return j.dump(1) + "\n";
}

ShardManifest read_shard_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kShardManifestName).string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("packed shards: '" + path + "' does not exist (pack the split with `vtrain pack CONFIG out=DIR`)");
  ShardManifest m;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (j.value("format", std::string()) != "vtrain-shards" || j.value("version", 0) != 1)
      throw std::runtime_error("not a vtrain-shards version 1 manifest");
    m.source = j.at("source").get<std::string>();
    m.images = j.at("images").get<int64_t>();
    m.listing_fnv1a64 = j.at("listing_fnv1a64").get<std::string>();
    m.classes = j.at("classes").get<std::vector<std::string>>();
    m.max_side = j.at("max_side").get<int64_t>();
    m.quality = j.at("quality").get<int>();
    m.shard_size = j.at("shard_size").get<int64_t>();
    m.shards = j.at("shards").get<int64_t>();
    m.on_corrupt = j.value("on_corrupt", std::string());
  } catch (const std::exception& e) {
    throw std::runtime_error("packed shards: '" + path + "': " + e.what());
  }
  if (m.classes.empty() || m.shard_size < 1 || m.shards < 0 || m.images < 0)
    throw std::runtime_error("packed shards: '" + path + "': no classes, or a negative count");
  return m;
}

std::string encode_shard_index(const ShardIndex& idx) {
  std::string names;
  for (const auto& n : idx.names) names += n + '\0';
  std::string s(kIndexMagic, sizeof kIndexMagic);
  put<uint64_t>(s, idx.shard);
  put<uint64_t>(s, idx.samples.size());
  put<uint64_t>(s, idx.tar_bytes);
  put<uint64_t>(s, idx.options_digest);
  put<uint64_t>(s, idx.first_image);
  put<uint64_t>(s, idx.skipped);
  put<uint64_t>(s, names.size());
  for (const auto& e : idx.samples) {
    put<uint64_t>(s, e.offset);
    put<uint64_t>(s, e.size);
    put<uint64_t>(s, e.position);
    put<int32_t>(s, e.label);
    put<uint16_t>(s, e.format);
    put<uint16_t>(s, e.flags);
  }
  return s + names;
}

ShardIndex read_shard_index(const std::string& path) {
  const std::string b = read_file(path);
  auto bad = [&](const std::string& why) { return std::runtime_error("packed shards: index '" + path + "': " + why); };
  if (b.size() < kIndexHeader || std::memcmp(b.data(), kIndexMagic, sizeof kIndexMagic) != 0)
    throw bad("not a shard index (no VTSHIDX1 header)");
  ShardIndex idx;
  idx.shard = get<uint64_t>(b.data() + 8);
  const uint64_t n = get<uint64_t>(b.data() + 16);
  idx.tar_bytes = get<uint64_t>(b.data() + 24);
  idx.options_digest = get<uint64_t>(b.data() + 32);
  idx.first_image = get<uint64_t>(b.data() + 40);
  idx.skipped = get<uint64_t>(b.data() + 48);
  const uint64_t name_bytes = get<uint64_t>(b.data() + 56);
  if (n > (b.size() - kIndexHeader) / kIndexEntry || kIndexHeader + n * kIndexEntry + name_bytes != b.size())
    throw bad(std::to_string(b.size()) + " bytes do not hold the " + std::to_string(n) +
              " samples and names its header announces (truncated?)");
  idx.samples.resize(n);
  uint64_t next = kTarBlock;  // first data offset: after the first header
  for (uint64_t i = 0; i < n; ++i) {
    const char* p = b.data() + kIndexHeader + i * kIndexEntry;
    ShardSample& e = idx.samples[i];
    e.offset = get<uint64_t>(p), e.size = get<uint64_t>(p + 8), e.position = get<uint64_t>(p + 16);
    e.label = get<int32_t>(p + 24), e.format = get<uint16_t>(p + 28), e.flags = get<uint16_t>(p + 30);
    // (Compared without forming offset + size, which a crafted index could overflow.)
    if (e.offset < next || e.offset % kTarBlock != 0 || e.offset > idx.tar_bytes || e.size > idx.tar_bytes - e.offset ||
        e.label < 0 || e.format >= static_cast<uint16_t>(ImageFormat::Unknown))
      throw bad("sample " + std::to_string(i) + " (offset " + std::to_string(e.offset) + ", " +
                std::to_string(e.size) + " bytes, label " + std::to_string(e.label) +
                ") is not a member of a " + std::to_string(idx.tar_bytes) + "-byte shard in order");
    // The next image's data follows this one's padded data, the .cls member
    // (header and one data block) and its own header.
    next = e.offset + (tar_member_bytes(e.size) - kTarBlock) + 3 * kTarBlock;
  }
  const char* names = b.data() + kIndexHeader + n * kIndexEntry;
  const char* end = b.data() + b.size();
  for (uint64_t i = 0; i < n; ++i) {
    const char* z = static_cast<const char*>(std::memchr(names, '\0', static_cast<size_t>(end - names)));
    if (!z) throw bad("names table holds fewer than " + std::to_string(n) + " names");
    idx.names.emplace_back(names, z);
    names = z + 1;
  }
  return idx;
}

std::string shard_tar_name(int64_t k) {
  char b[32];
  std::snprintf(b, sizeof b, "shard-%06lld.tar", static_cast<long long>(k));
  return b;
}

std::string shard_index_name(int64_t k) {
  char b[32];
  std::snprintf(b, sizeof b, "shard-%06lld.idx", static_cast<long long>(k));
  return b;
}

std::string shard_sample_key(int64_t pos) {
  char b[32];
  std::snprintf(b, sizeof b, "%09lld", static_cast<long long>(pos));
  return b;
}

const char* shard_extension(ImageFormat f) {
  switch (f) {
    case ImageFormat::Jpeg: return "jpg";
    case ImageFormat::Png: return "png";
    case ImageFormat::Bmp: return "bmp";
    case ImageFormat::Pnm: return "ppm";
    case ImageFormat::Tiff: return "tiff";
    case ImageFormat::WebP: return "webp";
    case ImageFormat::Unknown: break;
  }
  throw std::invalid_argument("shard_extension: unknown image format");
}

}  // namespace vt
