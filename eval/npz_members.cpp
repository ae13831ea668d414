#include "eval/npz_members.h"

#include <memory>
#include <stdexcept>

#include <zip.h>

namespace vt {
namespace {

using ZipPtr = std::unique_ptr<zip_t, void (*)(zip_t*)>;

ZipPtr open_zip(const std::string& path) {
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!za) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    throw std::runtime_error("npz '" + path + "': cannot open as a zip archive: " + msg);
  }
  return ZipPtr(za, [](zip_t* z) { zip_discard(z); });
}

std::string strip_npy(const std::string& name) {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
}

}  // namespace

std::vector<std::string> npz_keys(const std::string& path) {
  ZipPtr za = open_zip(path);
  std::vector<std::string> keys;
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), 0);
    if (!name) throw std::runtime_error("npz '" + path + "': unreadable directory entry " + std::to_string(i));
    keys.push_back(strip_npy(name));
  }
  return keys;
}

std::map<std::string, NpyArray> load_npz_members(const std::string& path, const std::vector<std::string>& keys) {
  ZipPtr za = open_zip(path);
  std::map<std::string, NpyArray> out;
  for (const std::string& key : keys) {
    const std::string what = path + ":" + key + ".npy";
    const zip_int64_t idx = zip_name_locate(za.get(), (key + ".npy").c_str(), 0);
    if (idx < 0) {
      std::string present;
      for (const auto& k : npz_keys(path)) present += (present.empty() ? "" : ", ") + k;
      throw std::runtime_error("npz '" + path + "': no member '" + key + "' (keys: " + present + ")");
    }
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za.get(), static_cast<zip_uint64_t>(idx), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
      throw std::runtime_error("npz '" + what + "': cannot stat member");
    std::string data(static_cast<size_t>(st.size), '\0');
    zip_file_t* zf = zip_fopen_index(za.get(), static_cast<zip_uint64_t>(idx), 0);
    if (!zf) throw std::runtime_error("npz '" + what + "': cannot open member: " + zip_strerror(za.get()));
    zip_uint64_t done = 0;
    while (done < st.size) {
      const zip_int64_t got = zip_fread(zf, &data[done], st.size - done);
      if (got <= 0) {
        zip_fclose(zf);
        throw std::runtime_error("npz '" + what + "': truncated or corrupt member");
      }
      done += static_cast<zip_uint64_t>(got);
    }
    zip_fclose(zf);
    out.emplace(key, parse_npy(data.data(), data.size(), what));
  }
  return out;
}

}  // namespace vt
