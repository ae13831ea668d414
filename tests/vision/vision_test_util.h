// Helpers for the vision tests (and test_fs.h): a tiny
// ImageFolder (train/ and test/) made of real CIFAR-10 JPEGs copied from
// ../shared/data/cifar10.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_fs.h"

namespace vt_test {

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
