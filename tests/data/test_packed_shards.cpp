// vtrain pack's shards (data_pipeline/shard_pack.h, packed_shards.h) and
// the data.format: shards reader (shard_dataset.h). The tar is checked by a
// ustar parser written here from the POSIX layout (not data_pipeline/ustar),
// the samples against the folder reader; bad input (truncated, foreign or
// mismatched shards, a rerun with other options) must name the file and
// leave the written shards as they were.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <opencv2/imgcodecs.hpp>

#include "core/philox.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/shard_dataset.h"
#include "data_pipeline/shard_pack.h"
#include "data_test_util.h"
#include "test_fs.h"

namespace vt {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;
using vt_test::error_of;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void spit(const fs::path& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

// An independent ustar reader: header fields at their POSIX offsets, the
// checksum recomputed, data padded to 512.
struct Member {
  std::string name;
  std::string data;
};
std::vector<Member> read_tar(const std::string& t) {
  EXPECT_EQ(t.size() % 512, 0u);
  std::vector<Member> out;
  size_t at = 0;
  while (at + 512 <= t.size()) {
    const unsigned char* h = reinterpret_cast<const unsigned char*>(t.data() + at);
    bool zero = true;
    for (int i = 0; i < 512; ++i) zero = zero && h[i] == 0;
    if (zero) {
      // End of archive: this block and the next are zero, nothing follows.
      EXPECT_EQ(at + 1024, t.size());
      EXPECT_EQ(t.substr(at), std::string(1024, '\0'));
      return out;
    }
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? 32u : h[i];
    EXPECT_EQ(std::stoul(std::string(t.data() + at + 148, 6), nullptr, 8), sum) << "checksum at " << at;
    EXPECT_EQ(std::string(t.data() + at + 257, 6), std::string("ustar\0", 6));
    EXPECT_EQ(std::string(t.data() + at + 263, 2), "00");
    EXPECT_EQ(t[at + 156], '0');  // regular file
    const size_t size = std::stoul(std::string(t.data() + at + 124, 11), nullptr, 8);
    Member m;
    m.name = std::string(t.data() + at, strnlen(t.data() + at, 100));
    m.data = t.substr(at + 512, size);
    out.push_back(m);
    at += 512 + (size + 511) / 512 * 512;
  }
  ADD_FAILURE() << "no end-of-archive blocks";
  return out;
}

// Classes a (3 images, one a 100x61 JPEG, one a PNG), b (2: one a JPEG cut
// short), c (1).
struct Folder {
  TempDir dir{"pack_src"};
  std::string root() const { return (dir.path / "img").string(); }
  fs::path broken() const { return dir.path / "img/b/1.jpg"; }
  explicit Folder(bool with_broken) {
    const fs::path r = dir.path / "img";
    testutil::write_bytes(r / "a/0.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(20, 14, 1)));
    testutil::write_bytes(r / "a/1.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(100, 61, 2)));
    std::vector<uint8_t> png;
    cv::imencode(".png", testutil::synthetic_rgb(9, 7, 3), png);
    testutil::write_bytes(r / "a/2.png", png);
    testutil::write_bytes(r / "b/0.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(16, 24, 4)));
    std::vector<uint8_t> cut = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(30, 30, 5));
    if (with_broken) cut.resize(cut.size() / 3);  // cut inside the entropy-coded data
    testutil::write_bytes(r / "b/1.jpg", cut);
    testutil::write_bytes(r / "c/0.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(12, 12, 6)));
  }
};

PackOptions opts(const std::string& src, const std::string& out) {
  PackOptions o;
  o.images_dir = src;
  o.out_dir = out;
  o.shard_size = 2;
  o.progress = false;
  return o;
}

std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir)) m[e.path().filename().string()] = slurp(e.path());
  return m;
}

TEST(PackedShards, TarMembersAreTheFolderInWebDatasetLayout) {
  Folder f(true);
  TempDir out("pack_out");
  PackOptions o = opts(f.root(), out.path.string());
  o.max_side = 50;
  o.quality = 90;
  o.on_corrupt = "skip";
  const PackReport r = pack_shards(o);
  const ImageFolder folder(f.root());
  ASSERT_EQ(folder.size(), 6);
  EXPECT_EQ(r.images, 5);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.reencoded, 1);
  EXPECT_EQ(r.shards_written, 3);
  // Shard k holds listing positions [2k, 2k + 2), the broken b/1.jpg (4) left out.
  std::vector<Member> all;
  int64_t tar_bytes = 0, image_bytes = 0;
  for (int k = 0; k < 3; ++k) {
    const std::string t = slurp(out.path / shard_tar_name(k));
    tar_bytes += static_cast<int64_t>(t.size());
    for (const Member& m : read_tar(t)) all.push_back(m);
  }
  EXPECT_EQ(r.tar_bytes, tar_bytes);
  const std::vector<std::pair<int, std::string>> want{{0, "jpg"}, {1, "jpg"}, {2, "png"}, {3, "jpg"}, {5, "jpg"}};
  ASSERT_EQ(all.size(), 2 * want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    const auto& [pos, ext] = want[j];
    char key[16];
    std::snprintf(key, sizeof key, "%09d", pos);
    EXPECT_EQ(all[2 * j].name, std::string(key) + "." + ext);
    EXPECT_EQ(all[2 * j + 1].name, std::string(key) + ".cls");
    EXPECT_EQ(all[2 * j + 1].data, std::to_string(folder.samples()[pos].label));
    const std::vector<uint8_t> src = read_file_bytes(folder.samples()[pos].path);
    image_bytes += static_cast<int64_t>(all[2 * j].data.size());
    if (pos == 1) {
      // 100x61 > 50: longer side 50, shorter floor(61 * 50 / 100) = 30, a JPEG.
      const auto* p = reinterpret_cast<const uint8_t*>(all[2 * j].data.data());
      const ImageSize s = probe_image(p, all[2 * j].data.size(), "reencoded");
      EXPECT_EQ(s.width, 50);
      EXPECT_EQ(s.height, 30);
      EXPECT_EQ(sniff_format(p, all[2 * j].data.size()), ImageFormat::Jpeg);
    } else {
      EXPECT_EQ(all[2 * j].data, std::string(src.begin(), src.end())) << "stored byte for byte: " << pos;
    }
  }
  EXPECT_EQ(r.image_bytes, image_bytes);
  // The manifest keeps the folder's class mapping.
  const ShardManifest m = read_shard_manifest(out.path.string());
  EXPECT_EQ(m.classes, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(m.images, 6);
  EXPECT_EQ(m.shards, 3);
  EXPECT_EQ(m.max_side, 50);
  EXPECT_EQ(m.quality, 90);
}

// Shard files without the pack's manifest are not replaced: refused,
// naming the file, which keeps its bytes.
TEST(PackedShards, ForeignShardFilesAreNotReplaced) {
  Folder f(false);
  TempDir out("pack_foreign");
  testutil::write_bytes(out.path / shard_tar_name(0), std::vector<uint8_t>{'m', 'i', 'n', 'e'});
  const std::string e = error_of([&] { pack_shards(opts(f.root(), out.path.string())); });
  EXPECT_NE(e.find((out.path / shard_tar_name(0)).string() + "' exists but"), std::string::npos) << e;
  EXPECT_EQ(slurp(out.path / shard_tar_name(0)), "mine");
  EXPECT_FALSE(fs::exists(out.path / kShardManifestName));
}

// A class whose every file is a bad image is left empty by a skip-pack:
// named in the report (and warned about in the log); with one readable
// file left it is not.
TEST(PackedShards, AClassLeftWithoutImagesBySkipIsNamed) {
  Folder f(true);
  TempDir out("pack_empty_class");
  PackOptions o = opts(f.root(), out.path.string());
  o.on_corrupt = "skip";
  EXPECT_TRUE(pack_shards(o).empty_classes.empty());  // b keeps 0.jpg
  fs::remove(fs::path(f.root()) / "b/0.jpg");
  TempDir out2("pack_empty_class2");
  o.out_dir = out2.path.string();
  const PackReport r = pack_shards(o);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.empty_classes, std::vector<std::string>{"b"});
}

TEST(PackedShards, BadImageUnderErrorNamesItAndWritesNoShard) {
  Folder f(true);
  TempDir out("pack_err");
  const std::string e = error_of([&] { pack_shards(opts(f.root(), out.path.string())); });
  EXPECT_NE(e.find(f.broken().string()), std::string::npos) << e;
  // Shards 0 and 1 (images 0-3) are complete; shard 2 (the broken image's) is not there, nor any temporary file.
  EXPECT_TRUE(fs::exists(out.path / shard_index_name(1)));
  EXPECT_FALSE(fs::exists(out.path / shard_tar_name(2)));
  for (const auto& d : fs::directory_iterator(out.path))
    EXPECT_EQ(d.path().string().find(".tmp."), std::string::npos) << d.path();
}

// Sample i of the shards is sample i of the folder: bytes, label, and the
// pipeline's floats under the same Philox.
TEST(PackedShards, ReaderGivesTheFolderReadersSamples) {
  Folder f(false);
  TempDir out("pack_same");
  pack_shards(opts(f.root(), out.path.string()));
  ImagePipelineConfig pc;
  pc.size = 16;
  const ImageFolderDataset folder(f.root(), pc);
  const ShardDataset shards(out.path.string(), pc);
  ASSERT_EQ(shards.size(), folder.size());
  EXPECT_EQ(shards.num_classes(), folder.num_classes());
  EXPECT_EQ(shards.classes(), folder.folder().classes());
  EXPECT_TRUE(shards.empty_classes().empty());
  std::vector<int64_t> all(static_cast<size_t>(shards.size()));
  for (int64_t i = 0; i < shards.size(); ++i) all[static_cast<size_t>(i)] = shards.size() - 1 - i;
  shards.will_need(all.data(), shards.size());  // advice only: changes nothing
  const int64_t n = 3 * 16 * 16;
  for (int64_t i = 0; i < folder.size(); ++i) {
    const std::vector<uint8_t> want = read_file_bytes(folder.folder().samples()[static_cast<size_t>(i)].path);
    const ShardDataset::Bytes b = shards.bytes(i);
    ASSERT_EQ(std::vector<uint8_t>(b.data, b.data + b.size), want) << i;
    EXPECT_EQ(shards.label(i), folder.label(i)) << i;
    std::vector<float> a(n), s(n);
    Philox ra(7, philox_stream(1, 2, static_cast<uint64_t>(i))), rs(7, philox_stream(1, 2, static_cast<uint64_t>(i)));
    folder.load(i, ra, a.data());
    shards.load(i, rs, s.data());
    EXPECT_EQ(0, std::memcmp(a.data(), s.data(), n * sizeof(float))) << i;
  }
  EXPECT_NE(shards.name(4).find("shard-000002.tar:000000004 (b/1.jpg)"), std::string::npos) << shards.name(4);
}

TEST(PackedShards, RerunContinuesAndGivesTheSameBytes) {
  Folder f(false);
  TempDir a("pack_a"), b("pack_b");
  pack_shards(opts(f.root(), a.path.string()));
  pack_shards(opts(f.root(), b.path.string()));
  const auto full = files_of(a.path);
  EXPECT_EQ(full, files_of(b.path));  // deterministic (mtime 0, listing order)
  // Killed while writing shard 1 (its .tar renamed, its .idx not yet) before shard 2.
  fs::remove(b.path / shard_index_name(1));
  spit(b.path / shard_tar_name(1), "partial");
  fs::remove(b.path / shard_index_name(2));
  fs::remove(b.path / shard_tar_name(2));
  const auto before0 = fs::last_write_time(b.path / shard_tar_name(0));
  const PackReport r = pack_shards(opts(f.root(), b.path.string()));
  EXPECT_EQ(r.shards_existing, 1);
  EXPECT_EQ(r.shards_written, 2);
  EXPECT_EQ(r.images, 6);
  EXPECT_EQ(files_of(b.path), full);
  EXPECT_EQ(fs::last_write_time(b.path / shard_tar_name(0)), before0);  // kept, not rewritten
}

// A pack killed mid-shard leaves "shard-N.tar.tmp.<pid>"; the rerun that
// completes the pack removes it (it stayed), and keeps a temporary of a
// live process (pid 1) and files that are not the pack's.
TEST(PackedShards, RerunRemovesTheTemporariesOfAKilledPack) {
  Folder f(false);
  TempDir out("pack_tmp");
  pack_shards(opts(f.root(), out.path.string()));
  const auto full = files_of(out.path);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);  // reaped: no such process now
  const std::string d = std::to_string(dead);
  fs::remove(out.path / shard_index_name(2));
  fs::remove(out.path / shard_tar_name(2));
  spit(out.path / (shard_tar_name(2) + ".tmp." + d), "half a shard");
  spit(out.path / (shard_index_name(1) + ".tmp." + d), "half an index");
  spit(out.path / (shard_tar_name(0) + ".tmp.1"), "a live writer's");
  spit(out.path / ("notes.txt.tmp." + d), "not the pack's");
  const PackReport r = pack_shards(opts(f.root(), out.path.string()));
  EXPECT_EQ(r.shards_written, 1);
  EXPECT_FALSE(fs::exists(out.path / (shard_tar_name(2) + ".tmp." + d)));
  EXPECT_FALSE(fs::exists(out.path / (shard_index_name(1) + ".tmp." + d)));
  EXPECT_TRUE(fs::exists(out.path / (shard_tar_name(0) + ".tmp.1")));
  EXPECT_TRUE(fs::exists(out.path / ("notes.txt.tmp." + d)));
  fs::remove(out.path / (shard_tar_name(0) + ".tmp.1"));
  fs::remove(out.path / ("notes.txt.tmp." + d));
  EXPECT_EQ(files_of(out.path), full);
}

// The manifest records data.on_corrupt. A pack that skipped a bad image is
// not continued under error (it was accepted: its shards lack an image
// error refuses); one under error that stopped at the bad image continues
// under skip, and then says skip.
TEST(PackedShards, OnCorruptIsRecordedAndSkipIsNotContinuedUnderError) {
  Folder f(true);
  TempDir skip("pack_skip"), err("pack_error");
  PackOptions s = opts(f.root(), skip.path.string());
  s.on_corrupt = "skip";
  EXPECT_EQ(pack_shards(s).skipped, 1);
  EXPECT_EQ(read_shard_manifest(skip.path.string()).on_corrupt, "skip");
  const auto packed = files_of(skip.path);
  const std::string e = error_of([&] { pack_shards(opts(f.root(), skip.path.string())); });
  EXPECT_NE(e.find("data.on_corrupt"), std::string::npos) << e;
  EXPECT_NE(e.find("\"skip\""), std::string::npos) << e;
  EXPECT_NE(e.find("\"error\""), std::string::npos) << e;
  EXPECT_NE(e.find("rerun with data.on_corrupt=skip"), std::string::npos) << e;
  EXPECT_EQ(files_of(skip.path), packed);
  // error stops at b/1.jpg (shard 2 of 3), skip completes it.
  EXPECT_THROW(pack_shards(opts(f.root(), err.path.string())), CorruptImage);
  EXPECT_EQ(read_shard_manifest(err.path.string()).on_corrupt, "error");
  PackOptions s2 = opts(f.root(), err.path.string());
  s2.on_corrupt = "skip";
  const PackReport r = pack_shards(s2);
  EXPECT_EQ(r.shards_existing, 2);  // shards 0 and 1 were complete
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(read_shard_manifest(err.path.string()).on_corrupt, "skip");
  // The same shards as the pack made under skip from the start.
  auto a = files_of(err.path), b = files_of(skip.path);
  a.erase(kShardManifestName), b.erase(kShardManifestName);
  EXPECT_EQ(a, b);
}

TEST(PackedShards, RerunWithOtherOptionsIsRefusedAndChangesNothing) {
  Folder f(false);
  TempDir out("pack_opts");
  pack_shards(opts(f.root(), out.path.string()));
  const auto before = files_of(out.path);
  PackOptions o = opts(f.root(), out.path.string());
  o.max_side = 10;
  std::string e = error_of([&] { pack_shards(o); });
  EXPECT_NE(e.find((out.path / "manifest.json").string()), std::string::npos) << e;
  EXPECT_NE(e.find("max_side"), std::string::npos) << e;
  // The wording every named output shares (core/output_claim.h).
  EXPECT_NE(e.find("pack: '" + (out.path / "manifest.json").string() +
                   "' was made with max_side = 0; this run has max_side = 10: rerun with that pack's arguments"),
            std::string::npos)
      << e;
  o = opts(f.root(), out.path.string());
  o.shard_size = 3;
  e = error_of([&] { pack_shards(o); });
  EXPECT_NE(e.find("shard_size"), std::string::npos) << e;
  // Another folder (one more image) into the same place.
  testutil::write_bytes(fs::path(f.root()) / "c/1.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(8, 8, 9)));
  e = error_of([&] { pack_shards(opts(f.root(), out.path.string())); });
  EXPECT_NE(e.find("images"), std::string::npos) << e;
  EXPECT_EQ(files_of(out.path), before);
}

TEST(PackedShards, ShardOfAnotherPackIsRefusedByPackAndReader) {
  Folder f(false);
  TempDir out("pack_mix"), other("pack_other");
  pack_shards(opts(f.root(), out.path.string()));
  PackOptions o = opts(f.root(), other.path.string());
  o.max_side = 10;
  pack_shards(o);
  for (const auto& n : {shard_tar_name(1), shard_index_name(1)})
    fs::copy_file(other.path / n, out.path / n, fs::copy_options::overwrite_existing);
  const auto before = files_of(out.path);
  const std::string idx = (out.path / shard_index_name(1)).string();
  std::string e = error_of([&] { pack_shards(opts(f.root(), out.path.string())); });
  EXPECT_NE(e.find(idx), std::string::npos) << e;
  EXPECT_NE(e.find("other options"), std::string::npos) << e;
  EXPECT_EQ(files_of(out.path), before);
  ImagePipelineConfig pc;
  e = error_of([&] { ShardDataset(out.path.string(), pc); });
  EXPECT_NE(e.find(idx), std::string::npos) << e;
}

class ShardReaderErrors : public ::testing::Test {
 protected:
  void SetUp() override { pack_shards(opts(f_.root(), out_.path.string())); }
  std::string open_error() const {
    return error_of([&] { ShardDataset(out_.path.string(), ImagePipelineConfig{}); });
  }
  fs::path tar(int k) const { return out_.path / shard_tar_name(k); }
  fs::path idx(int k) const { return out_.path / shard_index_name(k); }
  Folder f_{false};
  TempDir out_{"pack_read"};
};

TEST_F(ShardReaderErrors, TruncatedTar) {
  const std::string t = slurp(tar(1));
  spit(tar(1), t.substr(0, t.size() - 700));
  const std::string e = open_error();
  EXPECT_NE(e.find(tar(1).string()), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(ShardReaderErrors, ForeignTarOfTheSameSize) {
  // A valid ustar archive, as `tar` would write it, but not this shard: one
  // member "notes.txt" filling the shard's size.
  const size_t size = slurp(tar(0)).size(), data = size - 3 * 512;
  std::string h(512, '\0');
  std::memcpy(h.data(), "notes.txt", 9);
  std::snprintf(h.data() + 100, 8, "%07o", 0644);
  std::snprintf(h.data() + 108, 8, "%07o", 0);
  std::snprintf(h.data() + 116, 8, "%07o", 0);
  std::snprintf(h.data() + 124, 12, "%011zo", data);
  std::snprintf(h.data() + 136, 12, "%011o", 0);
  h[156] = '0';
  std::memcpy(h.data() + 257, "ustar\0" "00", 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? 32u : static_cast<unsigned char>(h[i]);
  std::snprintf(h.data() + 148, 8, "%06o", sum);
  h[155] = ' ';
  spit(tar(0), h + std::string(data, 'x') + std::string(1024, '\0'));
  ASSERT_EQ(read_tar(slurp(tar(0))).size(), 1u);  // it is a well-formed tar
  const std::string e = open_error();
  EXPECT_NE(e.find(tar(0).string()), std::string::npos) << e;
  EXPECT_NE(e.find(idx(0).string()), std::string::npos) << e;
  EXPECT_NE(e.find("notes.txt"), std::string::npos) << e;
}

TEST_F(ShardReaderErrors, NotATarAtAll) {
  spit(tar(2), std::string(slurp(tar(2)).size(), 'z'));
  const std::string e = open_error();
  EXPECT_NE(e.find(tar(2).string()), std::string::npos) << e;
}

TEST_F(ShardReaderErrors, IndexOfAnotherShard) {
  fs::copy_file(idx(0), idx(1), fs::copy_options::overwrite_existing);
  const std::string e = open_error();
  EXPECT_NE(e.find(idx(1).string()), std::string::npos) << e;
}

TEST_F(ShardReaderErrors, IndexOffsetsThatDoNotMatchTheTar) {
  // Sample 1 of shard 0 moved by one block: still aligned and increasing,
  // but its header is not there.
  std::string b = slurp(idx(0));
  uint64_t off = 0;
  std::memcpy(&off, b.data() + 64 + 32, 8);
  off += 512;
  std::memcpy(b.data() + 64 + 32, &off, 8);
  spit(idx(0), b);
  const std::string e = open_error();
  EXPECT_NE(e.find(tar(0).string()), std::string::npos) << e;
  EXPECT_NE(e.find(idx(0).string()), std::string::npos) << e;
}

// An offset near 2^64 whose offset + size wraps around to a small number
// must not pass as inside the tar.
TEST_F(ShardReaderErrors, IndexOffsetThatWrapsAround) {
  std::string b = slurp(idx(1));
  uint64_t n = 0;
  std::memcpy(&n, b.data() + 16, 8);
  ASSERT_EQ(n, 2u);
  const uint64_t off = ~uint64_t{0} - 511, size = 1024;  // multiple of 512; off + size = 512
  std::memcpy(b.data() + 64 + 32, &off, 8);  // the shard's second (last) sample
  std::memcpy(b.data() + 64 + 32 + 8, &size, 8);
  spit(idx(1), b);
  const std::string e = open_error();
  EXPECT_NE(e.find(idx(1).string()), std::string::npos) << e;
  EXPECT_NE(e.find("sample 1"), std::string::npos) << e;
}

TEST_F(ShardReaderErrors, TruncatedIndexMissingShardAndStrayShard) {
  const std::string b = slurp(idx(2));
  spit(idx(2), b.substr(0, b.size() - 5));
  std::string e = open_error();
  EXPECT_NE(e.find(idx(2).string()), std::string::npos) << e;
  spit(idx(2), b);
  fs::rename(tar(2), out_.path / "elsewhere");
  e = open_error();
  EXPECT_NE(e.find(tar(2).string()), std::string::npos) << e;
  fs::rename(out_.path / "elsewhere", tar(2));
  fs::copy_file(tar(2), tar(7));
  e = open_error();
  EXPECT_NE(e.find(tar(7).string()), std::string::npos) << e;
  fs::remove(tar(7));
  EXPECT_EQ(open_error(), "");
  fs::remove(out_.path / kShardManifestName);
  e = open_error();
  EXPECT_NE(e.find((out_.path / kShardManifestName).string()), std::string::npos) << e;
}

}  // namespace
}  // namespace vt
