// ImageFolder: the torchvision dataset layout <root>/<class>/**/<image>.
//
// Semantics follow torchvision.datasets.ImageFolder (docs/recipes.md §1):
// classes are the immediate sub-folders of the root (symlinks followed),
// sorted by byte (code-point) order, class index = position; samples are
// listed per class in that order by a recursive walk that visits entries in
// sorted order, keeping files whose lower-cased name ends in one of
// .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp.
//
// Errors (std::runtime_error): a missing or non-directory root, a root
// without class folders, a class folder without any valid file (the message
// names the folder).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

struct ImageFolderSample {
  std::string path;  // full path: root + "/" + class + "/" + relative path
  int32_t label;     // class index
};

class ImageFolder {
 public:
  explicit ImageFolder(const std::string& root);

  const std::string& root() const { return root_; }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<ImageFolderSample>& samples() const { return samples_; }
  int64_t size() const { return static_cast<int64_t>(samples_.size()); }
  int num_classes() const { return static_cast<int>(classes_.size()); }

 private:
  std::string root_;
  std::vector<std::string> classes_;
  std::vector<ImageFolderSample> samples_;
};

// True when the lower-cased file name ends in one of the extensions above.
bool has_image_extension(const std::string& filename);

}  // namespace vt
