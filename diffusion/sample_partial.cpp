#include "diffusion/sample_partial.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/log.h"

namespace vt {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "vtrain-sample-partial";

nlohmann::json to_object(const SamplePartial::Keys& keys) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [k, v] : keys) o[k] = v;
  return o;
}

// "chunk_000012.npz" -> 12; -1 for other names.
int64_t chunk_index(const std::string& name) {
  const std::string pre = "chunk_", suf = ".npz";
  if (name.size() != pre.size() + 6 + suf.size() || name.compare(0, pre.size(), pre) != 0 ||
      name.compare(name.size() - suf.size(), suf.size(), suf) != 0)
    return -1;
  int64_t k = 0;
  for (size_t i = pre.size(); i < pre.size() + 6; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    k = 10 * k + (name[i] - '0');
  }
  return k;
}

}  // namespace

std::string SamplePartial::dir_for(const std::string& out) { return out + ".partial"; }

SamplePartial::SamplePartial(const std::string& out, const Keys& keys, const Keys& info, int64_t num_chunks,
                             bool start_over_asked)
    : dir_(dir_for(out)), done_(static_cast<size_t>(num_chunks), false) {
  if (start_over_asked) {
    try {
      *this = SamplePartial(out, keys, info, num_chunks, false);
      return;
    } catch (const std::exception& e) {
      log().warn("sample: overwrite=true: starting over ({})", e.what());
      std::error_code ec;
      fs::remove_all(dir_, ec);
      if (ec) throw std::runtime_error("sample: cannot remove '" + dir_ + "': " + ec.message());
      *this = SamplePartial(out, keys, info, num_chunks, false);
      return;
    }
  }
  const std::string manifest = (fs::path(dir_) / "manifest.json").string();
  const std::string start_over = "delete '" + dir_ + "' (or give overwrite=true) to start over";
  std::error_code ec;
  if (fs::exists(dir_) && !fs::is_directory(dir_))
    throw std::runtime_error("sample: '" + dir_ + "' (the partial samples of out=" + out +
                             ") is not a directory; remove it");
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("sample: cannot create '" + dir_ + "': " + ec.message());
  bool any_chunk = false;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) {
      // A write cut short (core/atomic_file.h's temporary name): never a result.
      fs::remove(e.path(), ec);
      continue;
    }
    const int64_t k = chunk_index(name);
    if (k < 0) continue;
    if (k >= num_chunks)
      throw std::runtime_error("sample: '" + e.path().string() + "': chunk " + std::to_string(k) + " of " +
                               std::to_string(num_chunks) + " expected; " + start_over);
    done_[static_cast<size_t>(k)] = true;
    any_chunk = true;
  }
  if (!fs::exists(manifest)) {
    if (any_chunk)
      throw std::runtime_error("sample: '" + manifest + "' is missing, so the chunk files in '" + dir_ +
                               "' cannot be matched to these arguments; " + start_over);
    nlohmann::json m = {{"format", kFormat}, {"keys", to_object(keys)}, {"info", to_object(info)}};
    write_file_atomic(manifest, m.dump(2) + "\n");
    return;
  }
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(read_file(manifest));
    if (m.value("format", "") != kFormat || !m.contains("keys") || !m["keys"].is_object())
      throw std::runtime_error("not a " + std::string(kFormat) + " manifest");
  } catch (const std::exception& e) {
    throw std::runtime_error("sample: '" + manifest + "': " + e.what() + "; " + start_over);
  }
  const nlohmann::json& have = m["keys"];
  auto differs = [&](const std::string& key, const std::string& was, const std::string& now) {
    return std::runtime_error("sample: '" + dir_ + "' holds samples of a run with " + key + " = " + was +
                              ", this run has " + key + " = " + now +
                              "; rerun with that run's arguments to continue it, or " + start_over);
  };
  for (const auto& [k, v] : keys) {
    const std::string was = have.contains(k) && have[k].is_string() ? have[k].get<std::string>() : "(none)";
    if (was != v) throw differs(k, was, v);
  }
  for (const auto& item : have.items()) {
    bool known = false;
    for (const auto& kv : keys) known = known || kv.first == item.key();
    if (known) continue;
    const nlohmann::json& v = item.value();
    throw differs(item.key(), v.is_string() ? v.get<std::string>() : v.dump(), "(none)");
  }
}

std::string SamplePartial::chunk_path(int64_t k) const {
  char name[32];
  std::snprintf(name, sizeof name, "chunk_%06lld.npz", static_cast<long long>(k));
  return (fs::path(dir_) / name).string();
}

int64_t SamplePartial::chunks_done() const {
  int64_t n = 0;
  for (bool d : done_) n += d;
  return n;
}

void SamplePartial::write(int64_t k, const std::map<std::string, NpyArray>& arrays) {
  save_npz(chunk_path(k), arrays);
  done_.at(static_cast<size_t>(k)) = true;
}

void SamplePartial::remove() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) throw std::runtime_error("sample: cannot remove '" + dir_ + "': " + ec.message());
}

}  // namespace vt
