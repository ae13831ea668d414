// Helpers for the vision tests: a temporary directory, and a tiny
// ImageFolder (train/ and test/) made of real CIFAR-10 JPEGs copied from
// ../shared/data/cifar10.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace vt_test {

class TmpDir {
 public:
  TmpDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/vt_vision_XXXXXX";
    if (!mkdtemp(&tmpl[0])) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// root/train/<class>/ with `train_per_class` images and root/test/<class>/
// with `test_per_class`, for the first `classes` CIFAR-10 classes (sorted).
inline void make_cifar_subset(const std::string& root, int classes, int train_per_class, int test_per_class) {
  namespace fs = std::filesystem;
  const std::string src = std::string(VT_SHARED_DATA_DIR) + "/cifar10";
  const char* names[] = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  for (const auto& [split, count] : {std::pair<std::string, int>{"train", train_per_class}, {"test", test_per_class}}) {
    for (int c = 0; c < classes; ++c) {
      const std::string dst = root + "/" + split + "/" + names[c];
      fs::create_directories(dst);
      for (int i = 0; i < count; ++i) {
        char f[16];
        std::snprintf(f, sizeof f, "%04d.jpg", i);
        fs::copy_file(src + "/" + split + "/" + names[c] + "/" + f, dst + "/" + f);
      }
    }
  }
}

}  // namespace vt_test
