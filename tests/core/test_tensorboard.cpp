#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "core/tensorboard/crc32c.h"
#include "core/tensorboard/event.pb.h"
#include "core/tensorboard/event_writer.h"
#include "test_fs.h"

using namespace vt;
using vt_test::TmpDir;

namespace {

// Bit-at-a-time CRC32C straight from the definition (RFC 3720 sec. 12.1,
// reflected polynomial 0x82F63B78), as a reference for the table version.
uint32_t crc32c_bitwise(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Masking as a rotate right by 15 plus TensorFlow's constant (crc32c.h there).
uint32_t masked_reference(const unsigned char* p, size_t n) {
  const uint32_t c = crc32c_bitwise(p, n);
  const uint32_t rot = (c >> 15) | (c << 17);
  return static_cast<uint32_t>((static_cast<uint64_t>(rot) + 0xa282ead8u) & 0xFFFFFFFFu);
}

uint64_t read_le(const std::string& s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[pos + i]);
  return v;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Splits a TFRecord file into payloads, checking both CRCs of every record
// with the bitwise reference; fails the test on any framing error.
std::vector<std::string> read_payloads(const std::string& path) {
  const std::string s = slurp(path);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    EXPECT_LE(pos + 12, s.size()) << "truncated header at " << pos;
    if (pos + 12 > s.size()) break;
    const uint64_t len = read_le(s, pos, 8);
    const auto* hdr = reinterpret_cast<const unsigned char*>(s.data() + pos);
    EXPECT_EQ(read_le(s, pos + 8, 4), masked_reference(hdr, 8)) << "length CRC at " << pos;
    EXPECT_LE(pos + 12 + len + 4, s.size()) << "truncated record at " << pos;
    if (pos + 12 + len + 4 > s.size()) break;
    const std::string payload = s.substr(pos + 12, len);
    EXPECT_EQ(read_le(s, pos + 12 + len, 4),
              masked_reference(reinterpret_cast<const unsigned char*>(payload.data()), len))
        << "data CRC at " << pos;
    out.push_back(payload);
    pos += 12 + len + 4;
  }
  return out;
}

std::vector<tbproto::Event> read_events(const std::string& path) {
  std::vector<tbproto::Event> out;
  for (const std::string& payload : read_payloads(path)) {
    tbproto::Event ev;
    EXPECT_TRUE(ev.ParseFromString(payload));
    out.push_back(ev);
  }
  return out;
}

double now_s() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::vector<unsigned char> hex_bytes(const std::string& hex) {
  std::vector<unsigned char> b;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) b.push_back(std::stoi(hex.substr(i, 2), nullptr, 16));
  return b;
}

}  // namespace

TEST(Crc32c, StandardCheckValueAndRfc3720Vectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<unsigned char> v(32, 0x00);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x8A9136AAu);
  std::fill(v.begin(), v.end(), 0xFF);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x113FDB5Cu);
}

TEST(Crc32c, TableMatchesBitwiseDefinition) {
  std::vector<unsigned char> buf(1000);
  uint32_t x = 12345;
  for (auto& b : buf) b = static_cast<unsigned char>((x = x * 1103515245u + 12345u) >> 24);
  for (size_t n : {1u, 7u, 8u, 63u, 1000u}) {
    EXPECT_EQ(crc32c(buf.data(), n), crc32c_bitwise(buf.data(), n)) << n;
    EXPECT_EQ(masked_crc32c(buf.data(), n), masked_reference(buf.data(), n)) << n;
  }
}

TEST(TfRecord, FramingMatchesTensorBoardRecordWriter) {
  // From TensorBoard's own RecordWriter:
  //   python tools/tb_read_check.py --frame-hex vtrain   (and --frame-hex "")
  const auto want = hex_bytes("06000000000000007369d53776747261696e63a3a98a");
  const std::string got = tfrecord_frame("vtrain");
  EXPECT_EQ(std::vector<unsigned char>(got.begin(), got.end()), want);
  const auto want_empty = hex_bytes("000000000000000029039807d8ea82a2");
  const std::string got_empty = tfrecord_frame("");
  EXPECT_EQ(std::vector<unsigned char>(got_empty.begin(), got_empty.end()), want_empty);
}

// The scalars below are repeated in tools/tb_read_check.py, which reads the
// same file with TensorBoard's EventAccumulator (VT_TB_CHECK_DIR, see there).
TEST(TensorBoard, WritesScalarsReadBack) {
  TmpDir d;
  const std::string dir = d.path() + "/runs/exp";  // parents are created
  const double t0 = now_s();
  std::string path;
  {
    TensorBoardWriter w(dir);
    path = w.path();
    for (int step = 0; step < 5; ++step) {
      w.add_scalar("train/loss", 2.5 - 0.25 * step, step);
      w.add_scalar("train/lr", 1e-4 * (step + 1), step);
    }
    w.add_scalars({{"eval/top1", 71.25}, {"eval/top5", 90.125}}, 4);
  }
  const double t1 = now_s();

  char host[256] = {0};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  const std::string name = std::filesystem::path(path).filename().string();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d+)\.(.+))"))) << name;
  EXPECT_EQ(m[2].str(), host);
  const double secs = std::stod(m[1].str());
  EXPECT_GE(secs, std::floor(t0));
  EXPECT_LE(secs, t1);
  EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(dir));

  const auto ev = read_events(path);
  ASSERT_EQ(ev.size(), 1u + 10u + 1u);
  EXPECT_EQ(ev[0].what_case(), tbproto::Event::kFileVersion);
  EXPECT_EQ(ev[0].file_version(), "brain.Event:2");
  EXPECT_EQ(ev[0].step(), 0);
  for (const auto& e : ev) {
    EXPECT_GE(e.wall_time(), t0 - 1e-3);
    EXPECT_LE(e.wall_time(), t1 + 1e-3);
  }
  for (int step = 0; step < 5; ++step) {
    const auto& loss = ev[1 + 2 * step];
    const auto& lr = ev[2 + 2 * step];
    ASSERT_EQ(loss.what_case(), tbproto::Event::kSummary);
    ASSERT_EQ(loss.summary().value_size(), 1);
    EXPECT_EQ(loss.step(), step);
    EXPECT_EQ(loss.summary().value(0).tag(), "train/loss");
    EXPECT_EQ(loss.summary().value(0).simple_value(), static_cast<float>(2.5 - 0.25 * step));
    ASSERT_EQ(lr.summary().value_size(), 1);
    EXPECT_EQ(lr.step(), step);
    EXPECT_EQ(lr.summary().value(0).tag(), "train/lr");
    EXPECT_EQ(lr.summary().value(0).simple_value(), static_cast<float>(1e-4 * (step + 1)));
  }
  const auto& eval = ev.back();
  EXPECT_EQ(eval.step(), 4);
  ASSERT_EQ(eval.summary().value_size(), 2);
  EXPECT_EQ(eval.summary().value(0).tag(), "eval/top1");
  EXPECT_EQ(eval.summary().value(0).simple_value(), 71.25f);
  EXPECT_EQ(eval.summary().value(1).tag(), "eval/top5");
  EXPECT_EQ(eval.summary().value(1).simple_value(), 90.125f);

  if (const char* keep = std::getenv("VT_TB_CHECK_DIR")) {
    std::filesystem::create_directories(keep);
    std::filesystem::copy_file(path, std::string(keep) + "/" + name,
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// Hand-encoded protobuf wire bytes with TensorFlow's field numbers, so that a
// renumbered event.proto fails here even though the generated reader agrees.
TEST(TensorBoard, WireBytesUseTensorFlowFieldNumbers) {
  TmpDir d;
  const double t0 = now_s();
  std::string path;
  {
    TensorBoardWriter w(d.path());
    path = w.path();
    w.add_scalar("a", 1.5, 3);
  }
  const auto p = read_payloads(path);
  ASSERT_EQ(p.size(), 2u);
  auto wall_time_of = [](const std::string& payload) {
    double t;
    std::memcpy(&t, payload.data() + 1, 8);  // fixed64, little endian (x86/ARM hosts)
    return t;
  };
  // Event{wall_time (1, fixed64), file_version (3, bytes) = "brain.Event:2"};
  // step 0 is the proto3 default and is not written.
  ASSERT_EQ(p[0].size(), 9u + 2u + 13u);
  EXPECT_EQ(static_cast<unsigned char>(p[0][0]), 0x09);
  EXPECT_GE(wall_time_of(p[0]), t0 - 1.0);
  EXPECT_EQ(p[0].substr(9), std::string("\x1a\x0d") + "brain.Event:2");
  // Event{wall_time, step (2, varint) = 3, summary (5, bytes) =
  //   Summary{value (1, bytes) = Value{tag (1) = "a", simple_value (2, fixed32) = 1.5f}}}
  const std::string want_tail("\x10\x03\x2a\x0a\x0a\x08\x0a\x01" "a" "\x15\x00\x00\xc0\x3f", 14);
  ASSERT_EQ(p[1].size(), 9u + want_tail.size());
  EXPECT_EQ(static_cast<unsigned char>(p[1][0]), 0x09);
  EXPECT_GE(wall_time_of(p[1]), wall_time_of(p[0]));
  EXPECT_EQ(p[1].substr(9), want_tail);
}

TEST(TensorBoard, FlushMakesRecordsVisibleWhileOpen) {
  TmpDir d;
  TensorBoardWriter w(d.path());
  // The version record is flushed by the constructor.
  EXPECT_EQ(read_events(w.path()).size(), 1u);
  w.add_scalar("images_per_s", 1234.5, 7);
  w.flush();
  const auto ev = read_events(w.path());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].step(), 7);
  EXPECT_EQ(ev[1].summary().value(0).simple_value(), 1234.5f);
}

TEST(TensorBoard, SecondWriterInSameDirDoesNotClobberFirst) {
  TmpDir d;
  TensorBoardWriter a(d.path());
  TensorBoardWriter b(d.path());
  EXPECT_NE(a.path(), b.path());
  a.add_scalar("x", 1.0, 1);
  b.add_scalar("x", 2.0, 1);
  a.flush();
  b.flush();
  const auto ea = read_events(a.path());
  const auto eb = read_events(b.path());
  ASSERT_EQ(ea.size(), 2u);
  ASSERT_EQ(eb.size(), 2u);
  EXPECT_EQ(ea[1].summary().value(0).simple_value(), 1.0f);
  EXPECT_EQ(eb[1].summary().value(0).simple_value(), 2.0f);
}

TEST(TensorBoard, BadInputThrowsNamingThePath) {
  TmpDir d;
  const std::string file = d.write("not_a_dir", "x");
  const std::string msg = vt_test::error_of([&] { TensorBoardWriter w(file); });
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  TensorBoardWriter w(d.path());
  EXPECT_THROW(w.add_scalar("", 1.0, 0), std::invalid_argument);
}

// A resumed run's restart marker, as PyTorch's SummaryWriter(purge_step=7)
// writes it: Event{wall_time, step (2, varint) = 7, session_log (6, bytes) =
// SessionLog{status (1, varint) = START (1)}} -- TensorFlow's field numbers.
TEST(TensorBoard, SessionStartMarksThePurgeStep) {
  TmpDir d;
  std::string path;
  {
    TensorBoardWriter w(d.path());
    path = w.path();
    w.add_session_start(7);
  }
  const auto p = read_payloads(path);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].substr(9), std::string("\x10\x07\x32\x02\x08\x01", 6));
  const auto ev = read_events(path);
  EXPECT_EQ(ev[1].step(), 7);
  EXPECT_EQ(ev[1].session_log().status(), tbproto::SessionLog::START);
}
