#include "data_pipeline/shard_pack.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/output_claim.h"
#include "core/log.h"
#include "core/progress.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/jpeg_encode.h"
#include "data_pipeline/packed_shards.h"
#include "data_pipeline/resample.h"
#include "data_pipeline/ustar.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

// Images prepared in parallel at a time (bounds the memory held).
constexpr int64_t kChunk = 128;

struct Prepared {
  bool ok = false;
  std::string why;  // bad image (on_corrupt: skip)
  std::vector<uint8_t> bytes;
  ImageFormat format = ImageFormat::Unknown;
  bool reencoded = false;
};

ShardManifest manifest_for(const PackOptions& o, const ImageFolder& folder) {
  ShardManifest m;
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(o.images_dir, ec);
  m.source = ec ? o.images_dir : root.string();
  m.images = folder.size();
  uint64_t h = fnv1a64(nullptr, 0);
  const size_t skip = folder.root().size() + 1;
  for (const auto& s : folder.samples()) {
    const std::string rel = s.path.substr(skip) + '\0' + std::to_string(s.label) + '\0';
    h = fnv1a64(rel.data(), rel.size(), h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  m.listing_fnv1a64 = hex;
  m.classes = folder.classes();
  m.max_side = o.max_side;
  m.quality = o.max_side > 0 ? o.quality : 0;
  m.shard_size = o.shard_size;
  m.shards = (folder.size() + o.shard_size - 1) / o.shard_size;
  m.on_corrupt = o.on_corrupt;
  return m;
}

Prepared prepare(const std::string& path, const PackOptions& o) {
  Prepared p;
  try {
    p.bytes = read_file_bytes(path);
    p.format = sniff_format(p.bytes.data(), p.bytes.size());
    const DecodedImage d = decode_image(p.bytes.data(), p.bytes.size(), path);  // refuses what training would
    const int w = d.rgb.cols, h = d.rgb.rows, longer = std::max(w, h);
    if (o.max_side > 0 && longer > o.max_side) {
      const int side = static_cast<int>(o.max_side);
      const int nw = w == longer ? side : std::max<int>(1, static_cast<int>(int64_t{w} * side / longer));
      const int nh = h == longer ? side : std::max<int>(1, static_cast<int>(int64_t{h} * side / longer));
      cv::Mat r = resize_pil(d.rgb, nw, nh, ResampleFilter::Bicubic);
      if (!r.isContinuous()) r = r.clone();
      p.bytes = encode_jpeg_rgb(r.data, nw, nh, o.quality, path);
      p.format = ImageFormat::Jpeg;
      p.reencoded = true;
    }
    p.ok = true;
  } catch (const CorruptImage& e) {
    if (o.on_corrupt != "skip") throw with_skip_hint(e);
    p.why = e.what();
  }
  return p;
}

// The complete shard k already in the folder, checked against this pack.
ShardIndex existing_shard(const std::string& tar, const std::string& idx_path, int64_t k, uint64_t digest) {
  ShardIndex idx = read_shard_index(idx_path);
  if (idx.shard != static_cast<uint64_t>(k) || idx.options_digest != digest)
    throw std::runtime_error("pack: index '" + idx_path + "' was written by a pack with other options (" +
                             "shard " + std::to_string(idx.shard) + ") than manifest.json; use another out folder");
  std::error_code ec;
  const uint64_t have = fs::is_regular_file(tar, ec) ? fs::file_size(tar, ec) : 0;
  if (have != idx.tar_bytes)
    throw std::runtime_error("pack: '" + tar + "' is " + std::to_string(have) + " bytes, its index '" +
                             idx_path + "' says " + std::to_string(idx.tar_bytes) +
                             " (truncated or replaced); delete both files to have this run write the shard again");
  return idx;
}

// A pack killed while writing a shard leaves that shard's temporary file
// ("shard-000002.tar.tmp.<pid>", core/atomic_file.h) behind; the rerun that
// completes the shard removes those of processes that are gone (a live
// pid's may still be written). Returns how many it removed.
int64_t remove_stale_temporaries(const std::string& dir) {
  int64_t removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (name.rfind("shard-", 0) != 0 && name.rfind(kShardManifestName, 0) != 0) continue;
    if (at == std::string::npos || at + 5 >= name.size()) continue;
    const std::string pid_text = name.substr(at + 5);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;  // ours, or alive (EPERM: another user's)
    if (fs::remove(e.path(), ec)) {
      log().info("pack: removed {}, left by an earlier pack (process {}) that did not finish", e.path().string(), pid);
      ++removed;
    }
  }
  return removed;
}

}  // namespace

PackReport pack_shards(const PackOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.max_side < 0 || o.quality < 1 || o.quality > 100 || o.shard_size < 1)
    throw std::invalid_argument("pack: max_side must be >= 0, quality in [1, 100], shard_size >= 1");
  if (o.on_corrupt != "error" && o.on_corrupt != "skip")
    throw std::invalid_argument("pack: on_corrupt must be error | skip, got '" + o.on_corrupt + "'");
  const ImageFolder folder(o.images_dir);
  const ShardManifest m = manifest_for(o, folder);
  const uint64_t digest = m.options_digest();
  fs::create_directories(o.out_dir);
  const std::string manifest_path = (fs::path(o.out_dir) / kShardManifestName).string();
  std::error_code ec;
  if (fs::exists(manifest_path, ec)) {
    const ShardManifest old = read_shard_manifest(o.out_dir);
    // on_corrupt: a pack under error that stopped at a bad image continues
    // under skip (its shards skipped nothing, which skip allows; the
    // manifest then says skip); a pack under skip is not continued under
    // error, whose rule its shards may break (images left out).
    ShardManifest mine_cmp = m;
    const bool error_to_skip = old.on_corrupt == "error" && m.on_corrupt == "skip";
    if (error_to_skip) mine_cmp.on_corrupt = old.on_corrupt;
    std::string key, mine, theirs;
    if (mine_cmp.differs(old, &key, &mine, &theirs))
      throw std::runtime_error(output_differs_message(
          {"pack", "out=", ""}, manifest_path, key == "on_corrupt" ? "data.on_corrupt" : key, theirs, mine,
          key == "on_corrupt" ? "its shards may leave unreadable images out: rerun with data.on_corrupt=skip to "
                                "continue it, or give another out="
                              : "rerun with that pack's arguments to continue it, or give another out="));
    if (error_to_skip) write_file_atomic(manifest_path, manifest_json(m));
  } else {
    // Shards without a manifest are not a pack of this program (or one
    // whose manifest was removed): writing would replace files it did not
    // make, and keeping them would take them for this pack's.
    for (int64_t k = 0; k < m.shards; ++k)
      for (const std::string& name : {shard_tar_name(k), shard_index_name(k)})
        if (fs::exists(fs::path(o.out_dir) / name, ec))
          throw std::runtime_error("pack: '" + (fs::path(o.out_dir) / name).string() + "' exists but '" +
                                   manifest_path + "' does not: not a pack of this program, so it is not "
                                   "replaced; give an empty out=, or remove the shard files yourself");
    write_file_atomic(manifest_path, manifest_json(m));
  }

  remove_stale_temporaries(o.out_dir);
  PackReport rep;
  std::vector<int64_t> per_class(m.classes.size(), 0);  // samples in the shards per label
  ProgressOptions po;
  po.unit = "img";
  if (!o.progress) po.out = nullptr;
  ProgressBar bar("pack", folder.size(), po);
  const auto& samples = folder.samples();
  const size_t rel = folder.root().size() + 1;
  for (int64_t k = 0; k < m.shards; ++k) {
    const int64_t first = k * o.shard_size, last = std::min(folder.size(), first + o.shard_size);
    const std::string tar = (fs::path(o.out_dir) / shard_tar_name(k)).string();
    const std::string idx_path = (fs::path(o.out_dir) / shard_index_name(k)).string();
    ShardIndex idx;
    if (fs::exists(idx_path, ec)) {
      idx = existing_shard(tar, idx_path, k, digest);
      ++rep.shards_existing;
    } else {
      idx.shard = static_cast<uint64_t>(k);
      idx.options_digest = digest;
      idx.first_image = static_cast<uint64_t>(first);
      AtomicFileWriter w(tar);
      uint64_t at = 0;
      auto write = [&](const void* p, size_t n) {
        w.write(p, n);
        at += n;
      };
      const std::string zeros(kTarBlock, '\0');
      auto pad = [&](uint64_t n) { write(zeros.data(), (kTarBlock - n % kTarBlock) % kTarBlock); };
      for (int64_t c0 = first; c0 < last; c0 += kChunk) {
        const int64_t nc = std::min(kChunk, last - c0);
        std::vector<Prepared> prep(static_cast<size_t>(nc));
        std::exception_ptr err;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t i = 0; i < nc; ++i) {
          try {
            prep[static_cast<size_t>(i)] = prepare(samples[static_cast<size_t>(c0 + i)].path, o);
          } catch (...) {
#pragma omp critical
            if (!err) err = std::current_exception();
          }
        }
        if (err) std::rethrow_exception(err);  // the shard's temporary file is removed
        for (int64_t i = 0; i < nc; ++i) {
          const Prepared& p = prep[static_cast<size_t>(i)];
          const ImageFolderSample& s = samples[static_cast<size_t>(c0 + i)];
          if (!p.ok) {
            log().warn("pack: skipping {}", p.why);
            ++idx.skipped;
            continue;
          }
          const std::string key = shard_sample_key(c0 + i);
          write(ustar_header(key + "." + shard_extension(p.format), p.bytes.size()).data(), kTarBlock);
          ShardSample e;
          e.offset = at;
          e.size = p.bytes.size();
          e.position = static_cast<uint64_t>(c0 + i);
          e.label = s.label;
          e.format = static_cast<uint16_t>(p.format);
          e.flags = p.reencoded ? kShardReencoded : 0;
          write(p.bytes.data(), p.bytes.size());
          pad(p.bytes.size());
          const std::string cls = std::to_string(s.label);
          write(ustar_header(key + ".cls", cls.size()).data(), kTarBlock);
          write(cls.data(), cls.size());
          pad(cls.size());
          idx.samples.push_back(e);
          idx.names.push_back(s.path.substr(rel));
        }
        bar.update(c0 + nc);
      }
      write(zeros.data(), kTarBlock);  // end of archive: two zero blocks
      write(zeros.data(), kTarBlock);
      idx.tar_bytes = at;
      w.commit();
      write_file_atomic(idx_path, encode_shard_index(idx));
      ++rep.shards_written;
    }
    rep.images += static_cast<int64_t>(idx.samples.size());
    rep.skipped += static_cast<int64_t>(idx.skipped);
    for (const ShardSample& e : idx.samples)
      if (e.label >= 0 && static_cast<size_t>(e.label) < per_class.size()) ++per_class[e.label];
    rep.tar_bytes += static_cast<int64_t>(idx.tar_bytes);
    for (const ShardSample& e : idx.samples) {
      rep.image_bytes += static_cast<int64_t>(e.size);
      rep.reencoded += (e.flags & kShardReencoded) ? 1 : 0;
    }
    bar.update(last);
  }
  bar.finish();
  for (size_t c = 0; c < per_class.size(); ++c) {
    if (per_class[c] > 0) continue;
    rep.empty_classes.push_back(m.classes[c]);
    log().warn("pack: class '{}' ({} of {}) has no readable image left in {} (data.on_corrupt=skip left out every "
               "one of its files): training never sees it, though the model keeps its output",
               m.classes[c], c, m.classes.size(), o.out_dir);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace vt
