#include "data_pipeline/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace vt {

bool has_image_extension(const std::string& filename) {
  static const char* kExt[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                               ".pgm", ".tif",  ".tiff", ".webp"};
  std::string lower = filename;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : kExt) {
    const size_t n = std::char_traits<char>::length(e);
    if (lower.size() >= n && lower.compare(lower.size() - n, n, e) == 0) return true;
  }
  return false;
}

namespace {

// Sorted names of the entries of `dir`. std::string comparison is byte order,
// which equals Python's code-point order for UTF-8 names.
std::vector<std::string> sorted_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// torchvision iterates sorted(os.walk(class_dir, followlinks=True)): folders
// ordered by their full path string (so "a-b" precedes "a/x"), each folder's
// files sorted by name.
void walk(const fs::path& class_dir, const std::string& prefix, int32_t label,
          std::vector<ImageFolderSample>& out) {
  std::vector<std::string> rel_dirs{""};
  for (size_t i = 0; i < rel_dirs.size(); ++i) {
    const fs::path dir = rel_dirs[i].empty() ? class_dir : class_dir / rel_dirs[i];
    for (const auto& name : sorted_entries(dir)) {
      std::error_code ec;
      if (fs::is_directory(dir / name, ec))
        rel_dirs.push_back(rel_dirs[i].empty() ? name : rel_dirs[i] + "/" + name);
    }
  }
  std::sort(rel_dirs.begin(), rel_dirs.end());
  for (const auto& rel : rel_dirs) {
    const fs::path dir = rel.empty() ? class_dir : class_dir / rel;
    const std::string pre = rel.empty() ? prefix : prefix + "/" + rel;
    for (const auto& name : sorted_entries(dir)) {
      std::error_code ec;
      if (!fs::is_directory(dir / name, ec) && has_image_extension(name))
        out.push_back({pre + "/" + name, label});
    }
  }
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root) : root_(root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) throw std::runtime_error("ImageFolder: root '" + root + "' does not exist");
  if (!fs::is_directory(root, ec))
    throw std::runtime_error("ImageFolder: root '" + root + "' is not a directory");
  for (const auto& name : sorted_entries(root)) {
    if (fs::is_directory(fs::path(root) / name, ec)) classes_.push_back(name);
  }
  if (classes_.empty()) throw std::runtime_error("ImageFolder: no class folders in '" + root + "'");
  for (size_t c = 0; c < classes_.size(); ++c) {
    const size_t before = samples_.size();
    walk(fs::path(root) / classes_[c], root + "/" + classes_[c], static_cast<int32_t>(c), samples_);
    if (samples_.size() == before)
      throw std::runtime_error("ImageFolder: class folder '" + root + "/" + classes_[c] +
                               "' contains no valid image file (.jpg .jpeg .png .ppm .bmp .pgm "
                               ".tif .tiff .webp)");
  }
}

}  // namespace vt
