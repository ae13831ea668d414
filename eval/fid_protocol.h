// Image preprocessing in front of the FID Inception, by protocol:
//   pytorch-fid (github.com/mseitzer/pytorch-fid, inception.py with
//     resize_input / normalize_input): uint8 -> v / 255 -> PyTorch bilinear
//     to 299x299 (align_corners=False: half-pixel centres, no antialias)
//     -> 2x - 1;
//   adm (openai/guided-diffusion, evaluations/evaluator.py, which feeds
//     [0, 255] float images to TensorFlow's classify_image_graph_def.pb at
//     "ExpandDims:0"): TF1 ResizeBilinear to 299x299 (align_corners=False,
//     no half-pixel centres: eval/tf_resize.h) on [0, 255] values, then
//     the graph's Sub 128 and Mul 1/128: x -> (x - 128) / 128.
// The two differ in the resize grid (a sub-pixel shift) and in the scale
// (255/127.5 vs 255/128 for white); eval/README.md gives the measured FID
// difference. DiT and every paper that compares with it report ADM's suite,
// so `veval fid` defaults to adm.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace vt {

enum class FidProtocol { Adm, PytorchFid };
// "adm" | "pytorch-fid"; std::invalid_argument otherwise.
FidProtocol fid_protocol_from_name(const std::string& name);
const char* fid_protocol_name(FidProtocol p);

// One uint8 HWC RGB image [h, w, 3] into slot i of `batch`
// ([B, 3, 299, 299] F32, host), as the network's input under `p`.
void preprocess_fid_image(const uint8_t* hwc, int64_t h, int64_t w, FidProtocol p, const Tensor& batch, int64_t i);

}  // namespace vt
