// With data.on_corrupt: skip an unreadable image is replaced by the next
// readable one (training) or left out (evaluation). A class none of whose
// images can be read would then silently train on other classes' images,
// or vanish from the evaluation; the trainers warn about such classes at
// start. The probe decodes each class's images in order until one decodes
// (so one decode per healthy class, at the smallest JPEG DCT scale), and
// reads every image only of a class that is broken.
#pragma once
#include <string>
#include <vector>

#include "data_pipeline/image_folder.h"

namespace vt {

// The classes of `folder` (names, in class order) without a single image
// that reads and decodes.
std::vector<std::string> unreadable_classes(const ImageFolder& folder);

}  // namespace vt
