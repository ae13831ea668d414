// cifar10_to_folder SRC_DIR OUT_DIR
//
// Converts the extracted official CIFAR-10 binary release (SRC_DIR =
// cifar-10-batches-bin/) into the image folder the CIFAR-10 configs read:
// OUT_DIR/train/<class>/NNNN.jpg and OUT_DIR/test/<class>/NNNN.jpg
// (data_pipeline/cifar10_binary.h). scripts/get_data.sh cifar10 downloads,
// checks and extracts the release and runs this. Exit 0 done, 1 a data
// error (named), 2 usage.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "data_pipeline/cifar10_binary.h"

int main(int argc, char** argv) {
  if (argc == 2 && (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help"))) {
    std::printf("usage: cifar10_to_folder SRC_DIR OUT_DIR\n"
                "  SRC_DIR: the extracted cifar-10-batches-bin/ of cifar-10-binary.tar.gz\n"
                "  OUT_DIR: written as OUT_DIR/{train,test}/<class>/NNNN.jpg (must not exist)\n");
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: cifar10_to_folder SRC_DIR OUT_DIR\n");
    return 2;
  }
  try {
    const vt::CifarFolderCounts c = vt::cifar10_binary_to_folder(argv[1], argv[2]);
    int64_t train = 0, test = 0;
    for (const auto& [name, n] : c.train) train += n;
    for (const auto& [name, n] : c.test) test += n;
    std::printf("cifar10_to_folder: %s: %lld train and %lld test images in %zu classes\n", argv[2],
                static_cast<long long>(train), static_cast<long long>(test), c.train.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cifar10_to_folder: error: %s\n", e.what());
    return 1;
  }
}
