// A split of vtrain's data.root as a Dataset, by data.format:
//   folder  <data.root>/<split>/<class>/... (ImageFolderDataset)
//   shards  the split `vtrain pack` wrote into <data.root>/<split>/
//           (ShardDataset, data_pipeline/shard_dataset.h)
// Used by the trainer and by veval top1, so both read a config alike.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data_pipeline/dataset.h"
#include "vision/train_config.h"

namespace vt {

// Throws std::runtime_error naming `key` (data.train_split, ...) and the
// folder: a missing folder, a reader error (with a hint to set
// data.format=shards when a folder read finds a packed split), no images.
std::shared_ptr<Dataset> open_split(const TrainOptions& o, const std::string& key, const std::string& split,
                                    const ImagePipelineConfig& pc);

// The class names of a split opened above, in label order.
const std::vector<std::string>& split_classes(const Dataset& ds);
// Classes of which no image can be read: a folder's are probed
// (data_pipeline/unreadable_classes.h); packing decoded every image, so a
// packed split's are those left without a sample.
std::vector<std::string> split_unreadable_classes(const Dataset& ds);
// The folder the split was read from.
std::string split_dir(const Dataset& ds);

}  // namespace vt
