#include "vision/split_dataset.h"

#include <filesystem>
#include <stdexcept>

#include "data_pipeline/shard_dataset.h"
#include "data_pipeline/unreadable_classes.h"

namespace vt {

namespace fs = std::filesystem;

std::shared_ptr<Dataset> open_split(const TrainOptions& o, const std::string& key, const std::string& split,
                                    const ImagePipelineConfig& pc) {
  const std::string dir = o.data_root + "/" + split;
  if (!fs::is_directory(dir))
    throw std::runtime_error(key + ": split folder '" + dir + "' does not exist (data.root = '" + o.data_root + "')");
  const bool packed = fs::exists(fs::path(dir) / kShardManifestName);
  std::shared_ptr<Dataset> ds;
  try {
    if (o.data_format == "shards")
      ds = std::make_shared<ShardDataset>(dir, pc);
    else
      ds = std::make_shared<ImageFolderDataset>(dir, pc);
  } catch (const std::exception& e) {
    const std::string hint = o.data_format == "folder" && packed
                                 ? " (it holds packed shards: set data.format=shards)"
                                 : std::string();
    throw std::runtime_error(key + " '" + dir + "': " + e.what() + hint);
  }
  if (ds->size() == 0) throw std::runtime_error(key + " '" + dir + "': no images");
  return ds;
}

const std::vector<std::string>& split_classes(const Dataset& ds) {
  if (const auto* f = dynamic_cast<const ImageFolderDataset*>(&ds)) return f->folder().classes();
  return dynamic_cast<const ShardDataset&>(ds).classes();
}

std::vector<std::string> split_unreadable_classes(const Dataset& ds) {
  if (const auto* f = dynamic_cast<const ImageFolderDataset*>(&ds)) return unreadable_classes(f->folder());
  return dynamic_cast<const ShardDataset&>(ds).empty_classes();
}

std::string split_dir(const Dataset& ds) {
  if (const auto* f = dynamic_cast<const ImageFolderDataset*>(&ds)) return f->folder().root();
  return dynamic_cast<const ShardDataset&>(ds).dir();
}

}  // namespace vt
