#include "core/output_claim.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace vt {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "vtrain-output-record";

nlohmann::json to_object(const OutputKeys& keys) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [k, v] : keys) o[k] = v;
  return o;
}

std::string text_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string output_differs_message(const OutputFlags& f, const std::string& output, const std::string& key,
                                   const std::string& was, const std::string& now, const std::string& advice) {
  return f.program + ": '" + output + "' was made with " + key + " = " + was + "; this run has " + key + " = " + now +
         ": " +
         (advice.empty() ? "rerun with that run's arguments (then it is done), give another " + f.out_flag + ", or " +
                               f.overwrite_flag + " to replace it"
                         : advice);
}

std::string output_file_name(const std::string& given, const std::string& ext, const std::string& default_stem) {
  if (given.empty()) throw std::invalid_argument("an output needs a name");
  std::error_code ec;
  if (given.back() == '/' || fs::is_directory(given, ec)) return (fs::path(given) / (default_stem + ext)).string();
  if (given.size() >= ext.size() && given.compare(given.size() - ext.size(), ext.size(), ext) == 0) return given;
  return given + ext;
}

std::string path_stamp(const std::string& path) {
  std::error_code ec;
  auto ns = [](fs::file_time_type t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  if (fs::is_regular_file(path, ec))
    return std::to_string(fs::file_size(path, ec)) + " bytes, modified " + ns(fs::last_write_time(path, ec));
  if (!fs::is_directory(path, ec)) return "absent";
  uint64_t files = 0, bytes = 0;
  fs::file_time_type newest = fs::file_time_type::min();
  for (fs::recursive_directory_iterator it(path, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    ++files;
    bytes += it->file_size(ec);
    newest = std::max(newest, it->last_write_time(ec));
  }
  return std::to_string(files) + " files, " + std::to_string(bytes) + " bytes, newest " + ns(newest);
}

std::string OutputClaim::record_path_for(const std::string& output, bool is_dir) {
  return is_dir ? (fs::path(output) / "output.manifest.json").string() : output + ".manifest.json";
}

OutputClaim::OutputClaim(OutputFlags flags, std::string output, bool is_dir)
    : flags_(std::move(flags)), output_(std::move(output)), record_(record_path_for(output_, is_dir)), is_dir_(is_dir) {
  // Beside the output, also for a directory: what a pack or an extraction
  // writes stays only its own files.
  fs::path p = fs::path(output_).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "DIR/"
  std::error_code ec;
  if (!p.parent_path().empty()) fs::create_directories(p.parent_path(), ec);
  const std::string lock = (p.parent_path() / ("." + p.filename().string() + ".lock")).string();
  try {
    lock_ = FileLock(lock);
  } catch (const FileLockBusy& e) {
    throw std::runtime_error(flags_.program + ": '" + output_ + "' is being written by another process (" +
                             e.holder() + "); two writers of one output would mix their results: give another " +
                             flags_.out_flag + ", or wait for that one to end");
  }
}

bool OutputClaim::check(const OutputKeys& keys, bool overwrite) {
  if (is_dir_) throw std::logic_error("OutputClaim::check: '" + output_ + "' is a directory output");
  std::error_code ec;
  if (!fs::exists(output_, ec)) {
    fs::remove(record_, ec);  // a record whose output is gone records nothing
    return false;
  }
  auto redo = [&] {
    fs::remove(record_, ec);
    return false;
  };
  if (!fs::exists(record_, ec)) {
    if (overwrite) return redo();
    throw OutputDiffers(flags_.program + ": '" + output_ + "' exists and records nothing of what made it (no '" +
                        record_ + "'): give another " + flags_.out_flag + ", or " + flags_.overwrite_flag +
                        " to replace it");
  }
  nlohmann::json have;
  std::string recorded_stamp;
  try {
    const nlohmann::json m = nlohmann::json::parse(read_file(record_));
    if (m.value("format", "") != kFormat || !m.contains("keys") || !m["keys"].is_object())
      throw std::runtime_error(std::string("not a ") + kFormat + " file");
    have = m["keys"];
    recorded_stamp = m.value("output", "");
  } catch (const std::exception& e) {
    if (overwrite) return redo();
    throw OutputDiffers(flags_.program + ": '" + record_ + "' (what made '" + output_ + "'): " + e.what() +
                        ": give another " + flags_.out_flag + ", or " + flags_.overwrite_flag + " to replace it");
  }
  for (const auto& [k, v] : keys) {
    const std::string was = have.contains(k) ? text_of(have[k]) : "(none)";
    if (was == v) continue;
    if (overwrite) return redo();
    throw OutputDiffers(output_differs_message(flags_, output_, k, was, v));
  }
  for (const auto& item : have.items()) {
    bool known = false;
    for (const auto& kv : keys) known = known || kv.first == item.key();
    if (known) continue;
    if (overwrite) return redo();
    throw OutputDiffers(output_differs_message(flags_, output_, item.key(), text_of(item.value()), "(none)"));
  }
  // Made with these keys, but is it still what was written? (Records
  // without a stamp predate it: taken as they are.)
  if (!recorded_stamp.empty()) {
    const std::string now = path_stamp(output_);
    if (now != recorded_stamp) {
      if (overwrite) return redo();
      throw OutputDiffers(flags_.program + ": '" + output_ + "' was changed after it was written (it holds " + now +
                          "; " + record_ + " recorded " + recorded_stamp + "): give another " + flags_.out_flag +
                          ", or " + flags_.overwrite_flag + " to make it again");
    }
  }
  return true;
}

void OutputClaim::record(const OutputKeys& keys, const OutputKeys& info) {
  // The output's own stamp, so that a file changed after it was written
  // (truncated, copied over) is not taken for done.
  const nlohmann::json m = {{"format", kFormat},
                            {"keys", to_object(keys)},
                            {"info", to_object(info)},
                            {"output", path_stamp(output_)}};
  write_file_atomic(record_, m.dump(2) + "\n");
}

}  // namespace vt
