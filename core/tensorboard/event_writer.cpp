#include "core/tensorboard/event_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/tensorboard/crc32c.h"
#include "core/tensorboard/event.pb.h"

namespace vt {
namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

std::string serialize(const tbproto::Event& ev, const std::string& path) {
  std::string s;
  if (!ev.SerializeToString(&s)) throw std::runtime_error("TensorBoardWriter: cannot serialize event for " + path);
  return s;
}

}  // namespace

std::string tfrecord_frame(const std::string& payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out += payload;
  put_le(out, masked_crc32c(payload.data(), payload.size()), 4);
  return out;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error("TensorBoardWriter: cannot create directory '" + dir + "': " +
                             (ec ? ec.message() : std::string("not a directory")));
  const double wall = now_seconds();
  const std::string base = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(wall)) + "." + host_name();
  // "x": exclusive create (glibc/C11), so a second writer in the same second
  // takes the next suffix instead of truncating the first one's file.
  for (int k = 0; k < 1000 && !f_; ++k) {
    path_ = k == 0 ? base : base + "." + std::to_string(k);
    f_ = std::fopen(path_.c_str(), "wbx");
    if (!f_ && errno != EEXIST)
      throw std::runtime_error("TensorBoardWriter: cannot create '" + path_ + "': " + std::strerror(errno));
  }
  if (!f_) throw std::runtime_error("TensorBoardWriter: no free event file name for '" + base + "'");

  tbproto::Event ev;
  ev.set_wall_time(wall);
  ev.set_step(0);
  ev.set_file_version("brain.Event:2");
  try {
    write_record(serialize(ev, path_));
  } catch (...) {
    std::fclose(f_);  // the destructor does not run for a throwing constructor
    throw;
  }
  // The version record alone lets TensorBoard list the run straight away.
  std::fflush(f_);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_) std::fclose(f_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  add_scalars({{tag, value}}, step);
}

void TensorBoardWriter::add_scalars(const std::vector<std::pair<std::string, double>>& scalars,
                                    int64_t step) {
  tbproto::Event ev;
  ev.set_wall_time(now_seconds());
  ev.set_step(step);
  tbproto::Summary* summary = ev.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    if (tag.empty())
      throw std::invalid_argument("TensorBoardWriter::add_scalar: empty tag (file " + path_ + ")");
    tbproto::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  const std::string payload = serialize(ev, path_);
  std::lock_guard<std::mutex> lock(mu_);
  write_record(payload);
}

void TensorBoardWriter::add_session_start(int64_t purge_step) {
  tbproto::Event ev;
  ev.set_wall_time(now_seconds());
  ev.set_step(purge_step);
  ev.mutable_session_log()->set_status(tbproto::SessionLog::START);
  const std::string payload = serialize(ev, path_);
  std::lock_guard<std::mutex> lock(mu_);
  write_record(payload);
}

void TensorBoardWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::fflush(f_) != 0)
    throw std::runtime_error("TensorBoardWriter: flush failed for '" + path_ + "': " + std::strerror(errno));
}

void TensorBoardWriter::write_record(const std::string& payload) {
  const std::string rec = tfrecord_frame(payload);
  if (std::fwrite(rec.data(), 1, rec.size(), f_) != rec.size())
    throw std::runtime_error("TensorBoardWriter: write failed for '" + path_ + "': " + std::strerror(errno));
}

}  // namespace vt
