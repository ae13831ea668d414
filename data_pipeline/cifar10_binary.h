// CIFAR-10's official binary release (cifar-10-binary.tar.gz, "the version
// for C programs", https://www.cs.toronto.edu/~kriz/cifar.html) to the image
// folder the CIFAR-10 configs read.
//
// The release's folder cifar-10-batches-bin/ holds data_batch_1.bin ..
// data_batch_5.bin (training, 10 000 records each), test_batch.bin and
// batches.meta.txt (the class names, one a line). A record is 3073 bytes:
// the label (0..9), then the 32x32 image as 1024 red, 1024 green and 1024
// blue bytes, rows top to bottom. It holds the same images in the same order
// as the pickled Python release, without a format that runs code on load.
//
// The folder: OUT/train/<class>/NNNN.jpg from the five training batches and
// OUT/test/<class>/NNNN.jpg from the test batch, numbered per class from 0000
// in record order (batch 1 first), JPEG quality 75 with 4:2:0 chroma
// subsampling (Pillow's defaults). It is written under OUT.partial and
// renamed to OUT when complete, so an interrupted conversion never leaves a
// folder that looks finished.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vt {

constexpr int kCifarSide = 32;
constexpr int64_t kCifarRecordBytes = 1 + 3 * kCifarSide * kCifarSide;  // 3073

struct CifarFolderCounts {
  std::map<std::string, int64_t> train, test;  // images written per class
};

// The class names of batches.meta.txt (non-empty lines, trailing blanks
// dropped). Throws naming the file when it is missing, empty, or a name is
// not a plain folder name.
std::vector<std::string> read_cifar10_class_names(const std::string& meta_txt);

// Converts SRC_DIR (the extracted cifar-10-batches-bin/) into OUT_DIR (see
// above). Throws std::runtime_error naming the file and the problem: a
// missing batch, a size that is not a whole number of records, a label
// beyond the class list; or naming OUT_DIR when it already exists.
CifarFolderCounts cifar10_binary_to_folder(const std::string& src_dir, const std::string& out_dir);

}  // namespace vt
