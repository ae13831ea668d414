#include "data_pipeline/cifar10_binary.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "data_pipeline/jpeg_encode.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("CIFAR-10: cannot read '" + path + "' (is it the extracted cifar-10-batches-bin/?)");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// rgb: packed [32, 32, 3].
void write_jpeg(const uint8_t* rgb, const std::string& path) {
  const std::vector<uint8_t> jpg = encode_jpeg_rgb(rgb, kCifarSide, kCifarSide, 75, path);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(jpg.data()), static_cast<std::streamsize>(jpg.size()));
  if (!f) throw std::runtime_error("CIFAR-10: cannot write '" + path + "'");
}

void convert_split(const std::vector<std::string>& batches, const std::vector<std::string>& classes,
                   const fs::path& split_dir, std::map<std::string, int64_t>& counts) {
  for (const std::string& c : classes) {
    fs::create_directories(split_dir / c);
    counts[c] = 0;
  }
  std::vector<uint8_t> rgb(kCifarSide * kCifarSide * 3);
  for (const std::string& batch : batches) {
    const std::vector<uint8_t> bytes = read_all(batch);
    if (bytes.empty() || bytes.size() % kCifarRecordBytes != 0)
      throw std::runtime_error("CIFAR-10: '" + batch + "' has " + std::to_string(bytes.size()) +
                               " bytes, not a whole number of " + std::to_string(kCifarRecordBytes) +
                               "-byte records (label + 32x32x3 pixels)");
    const int64_t n = static_cast<int64_t>(bytes.size()) / kCifarRecordBytes;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* rec = bytes.data() + r * kCifarRecordBytes;
      if (rec[0] >= classes.size())
        throw std::runtime_error("CIFAR-10: '" + batch + "' record " + std::to_string(r) + " has label " +
                                 std::to_string(rec[0]) + ", batches.meta.txt names " +
                                 std::to_string(classes.size()) + " classes");
      const uint8_t* px = rec + 1;  // planes R, G, B of 1024 bytes each
      for (int i = 0; i < kCifarSide * kCifarSide; ++i)
        for (int ch = 0; ch < 3; ++ch) rgb[i * 3 + ch] = px[ch * kCifarSide * kCifarSide + i];
      const std::string& cls = classes[rec[0]];
      char name[32];
      std::snprintf(name, sizeof name, "%04lld.jpg", static_cast<long long>(counts[cls]++));
      write_jpeg(rgb.data(), (split_dir / cls / name).string());
    }
  }
}

}  // namespace

std::vector<std::string> read_cifar10_class_names(const std::string& meta_txt) {
  std::ifstream f(meta_txt);
  if (!f) throw std::runtime_error("CIFAR-10: cannot read '" + meta_txt + "' (is it the extracted cifar-10-batches-bin/?)");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty()) continue;
    if (line == "." || line == ".." || line.find_first_of("/\\") != std::string::npos)
      throw std::runtime_error("CIFAR-10: '" + meta_txt + "' names class '" + line + "', not a folder name");
    names.push_back(line);
  }
  if (names.empty()) throw std::runtime_error("CIFAR-10: '" + meta_txt + "' names no classes");
  if (names.size() > 256) throw std::runtime_error("CIFAR-10: '" + meta_txt + "' names more than 256 classes");
  return names;
}

CifarFolderCounts cifar10_binary_to_folder(const std::string& src_dir, const std::string& out_dir) {
  const fs::path src(src_dir), out(out_dir);
  if (fs::exists(out)) throw std::runtime_error("CIFAR-10: '" + out_dir + "' already exists; remove it or choose another folder");
  const std::vector<std::string> classes = read_cifar10_class_names((src / "batches.meta.txt").string());
  std::vector<std::string> train;
  for (int i = 1; i <= 5; ++i) train.push_back((src / ("data_batch_" + std::to_string(i) + ".bin")).string());
  const std::vector<std::string> test{(src / "test_batch.bin").string()};
  for (const auto& b : train)
    if (!fs::is_regular_file(b)) throw std::runtime_error("CIFAR-10: '" + b + "' is missing");
  if (!fs::is_regular_file(test[0])) throw std::runtime_error("CIFAR-10: '" + test[0] + "' is missing");
  const fs::path partial = out.string() + ".partial";
  fs::remove_all(partial);  // a previous interrupted conversion
  CifarFolderCounts counts;
  convert_split(train, classes, partial / "train", counts.train);
  convert_split(test, classes, partial / "test", counts.test);
  fs::rename(partial, out);
  return counts;
}

}  // namespace vt
