#include "data_pipeline/shard_dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "data_pipeline/ustar.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

// Byte ranges closer than this are read as one (the gap costs less than a
// second request).
constexpr uint64_t kMergeGap = 64 * 1024;

}  // namespace

ShardDataset::ShardDataset(const std::string& dir, ImagePipelineConfig cfg)
    : dir_(dir), cfg_(std::move(cfg)), manifest_(read_shard_manifest(dir)) {
  if (cfg_.size <= 0) throw std::invalid_argument("ShardDataset: size must be positive");
  const uint64_t digest = manifest_.options_digest();
  const std::string manifest_path = (fs::path(dir) / kShardManifestName).string();
  // Release what was mapped so far when a later shard is refused.
  struct Cleanup {
    ShardDataset* self;
    bool armed = true;
    ~Cleanup() {
      if (armed)
        for (auto& s : self->shards_)
          if (s.map) munmap(const_cast<uint8_t*>(s.map), s.map_bytes);
    }
  } cleanup{this};
  for (int64_t k = 0; k < manifest_.shards; ++k) {
    Shard s;
    s.tar_path = (fs::path(dir) / shard_tar_name(k)).string();
    s.idx_path = (fs::path(dir) / shard_index_name(k)).string();
    std::error_code ec;
    for (const std::string& p : {s.tar_path, s.idx_path})
      if (!fs::is_regular_file(p, ec))
        throw std::runtime_error("packed shards: '" + p + "' is missing (" + manifest_path + " lists " +
                                 std::to_string(manifest_.shards) +
                                 " shards; an interrupted pack continues when `vtrain pack` is run again)");
    s.index = read_shard_index(s.idx_path);
    if (s.index.shard != static_cast<uint64_t>(k) || s.index.options_digest != digest)
      throw std::runtime_error("packed shards: index '" + s.idx_path + "' belongs to shard " +
                               std::to_string(s.index.shard) + " of a pack with other options than " + manifest_path);
    for (const ShardSample& e : s.index.samples)
      if (e.label >= num_classes())
        throw std::runtime_error("packed shards: index '" + s.idx_path + "' has label " + std::to_string(e.label) +
                                 ", " + manifest_path + " names " + std::to_string(num_classes()) + " classes");
    const int fd = ::open(s.tar_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("packed shards: cannot open '" + s.tar_path + "': " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != s.index.tar_bytes) {
      const long long have = static_cast<long long>(st.st_size);
      ::close(fd);
      throw std::runtime_error("packed shards: '" + s.tar_path + "' is " + std::to_string(have) + " bytes, its index '" +
                               s.idx_path + "' says " + std::to_string(s.index.tar_bytes) +
                               " (truncated, or another tar in its place)");
    }
    if (s.index.tar_bytes < 2 * kTarBlock) {
      ::close(fd);
      throw std::runtime_error("packed shards: '" + s.tar_path + "' is too short to be a tar archive");
    }
    void* p = mmap(nullptr, s.index.tar_bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw std::runtime_error("packed shards: cannot map '" + s.tar_path + "': " + std::strerror(errno));
    s.map = static_cast<const uint8_t*>(p);
    s.map_bytes = s.index.tar_bytes;
    madvise(p, s.map_bytes, MADV_RANDOM);
    s.first = total_;
    total_ += static_cast<int64_t>(s.index.samples.size());
    shards_.push_back(std::move(s));
    const Shard& sh = shards_.back();
    const uint8_t* end = sh.map + sh.map_bytes;
    if (!is_zero_block(end - kTarBlock) || !is_zero_block(end - 2 * kTarBlock))
      throw std::runtime_error("packed shards: '" + sh.tar_path + "' does not end in two zero blocks (truncated, or not written by vtrain pack)");
    if (!sh.index.samples.empty()) {
      check_header(sh, 0);
      check_header(sh, static_cast<int64_t>(sh.index.samples.size()) - 1);
    }
  }
  // A shard beyond the manifest's count: a mix of two packs.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("shard-", 0) == 0 && e.path().extension() == ".tar") {
      const long long k = std::atoll(n.c_str() + 6);
      if (k >= manifest_.shards || n != shard_tar_name(k))
        throw std::runtime_error("packed shards: '" + e.path().string() + "' is not one of the " +
                                 std::to_string(manifest_.shards) + " shards " + manifest_path + " lists");
    }
  }
  cleanup.armed = false;
}

ShardDataset::~ShardDataset() {
  for (auto& s : shards_)
    if (s.map) munmap(const_cast<uint8_t*>(s.map), s.map_bytes);
}

const ShardDataset::Shard& ShardDataset::locate(int64_t i, int64_t* row) const {
  if (i < 0 || i >= total_)
    throw std::out_of_range("ShardDataset: index " + std::to_string(i) + " outside [0, " + std::to_string(total_) + ")");
  auto it = std::upper_bound(shards_.begin(), shards_.end(), i, [](int64_t v, const Shard& s) { return v < s.first; });
  const Shard& s = *(it - 1);
  *row = i - s.first;
  return s;
}

void ShardDataset::check_header(const Shard& s, int64_t row) const {
  const ShardSample& e = s.index.samples[static_cast<size_t>(row)];
  const std::string want =
      shard_sample_key(static_cast<int64_t>(e.position)) + "." + shard_extension(static_cast<ImageFormat>(e.format));
  const UstarEntry h = parse_ustar_header(s.map + e.offset - kTarBlock);
  if (!h.ok || h.name != want || h.size != e.size)
    throw std::runtime_error("packed shards: '" + s.tar_path + "' does not match its index '" + s.idx_path +
                             "': at byte " + std::to_string(e.offset - kTarBlock) + " the index expects member '" +
                             want + "' of " + std::to_string(e.size) + " bytes, the tar has " +
                             (h.ok ? "'" + h.name + "' of " + std::to_string(h.size) + " bytes" : h.why));
}

ShardDataset::Bytes ShardDataset::bytes(int64_t i) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  check_header(s, row);
  const ShardSample& e = s.index.samples[static_cast<size_t>(row)];
  return {s.map + e.offset, static_cast<size_t>(e.size)};
}

int32_t ShardDataset::label(int64_t i) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  return s.index.samples[static_cast<size_t>(row)].label;
}

std::string ShardDataset::name(int64_t i) const {
  int64_t row = 0;
  const Shard& s = locate(i, &row);
  const ShardSample& e = s.index.samples[static_cast<size_t>(row)];
  return s.tar_path + ":" + shard_sample_key(static_cast<int64_t>(e.position)) + " (" +
         s.index.names[static_cast<size_t>(row)] + ")";
}

void ShardDataset::load(int64_t i, Philox& rng, float* out) const {
  const Bytes b = bytes(i);
  process_image(b.data, b.size, name(i), cfg_, rng, out);
}

void ShardDataset::load_planned(int64_t i, Philox& rng, uint8_t* hwc, AugmentPlan* plan) const {
  const Bytes b = bytes(i);
  process_image_planned(b.data, b.size, name(i), cfg_, rng, hwc, plan);
}

void ShardDataset::load_encoded(int64_t i, Philox& rng, EncodedSample* enc, uint8_t* hwc, AugmentPlan* plan) const {
  const Bytes b = bytes(i);
  *enc = EncodedSample{};
  std::string n = name(i);
  if (process_image_encoded(b.data, b.size, n, cfg_, rng, &enc->box, hwc, plan))
    enc->data = b.data, enc->size = b.size, enc->name = std::move(n);
}

void ShardDataset::will_need(const int64_t* indices, int64_t n) const {
  struct Range {
    size_t shard;
    uint64_t begin, end;
  };
  std::vector<Range> r;
  r.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    if (indices[k] < 0 || indices[k] >= total_) continue;
    int64_t row = 0;
    const Shard& s = locate(indices[k], &row);
    const ShardSample& e = s.index.samples[static_cast<size_t>(row)];
    r.push_back({static_cast<size_t>(&s - shards_.data()), e.offset - kTarBlock, e.offset + e.size});
  }
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) {
    return a.shard != b.shard ? a.shard < b.shard : a.begin < b.begin;
  });
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (size_t a = 0; a < r.size();) {
    size_t b = a + 1;
    uint64_t end = r[a].end;
    while (b < r.size() && r[b].shard == r[a].shard && r[b].begin <= end + kMergeGap) end = std::max(end, r[b++].end);
    const uint64_t begin = r[a].begin / page * page;
    const Shard& s = shards_[r[a].shard];
    madvise(const_cast<uint8_t*>(s.map) + begin, static_cast<size_t>(end - begin), MADV_WILLNEED);
    a = b;
  }
}

std::vector<std::string> ShardDataset::empty_classes() const {
  std::vector<char> seen(manifest_.classes.size(), 0);
  for (const auto& s : shards_)
    for (const auto& e : s.index.samples) seen[static_cast<size_t>(e.label)] = 1;
  std::vector<std::string> out;
  for (size_t c = 0; c < seen.size(); ++c)
    if (!seen[c]) out.push_back(manifest_.classes[c]);
  return out;
}

}  // namespace vt
