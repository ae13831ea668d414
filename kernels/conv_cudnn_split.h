// How kernels/cuda/conv_cudnn.cpp cuts a convolution's batch so that every
// tensor it hands cuDNN stays under cuDNN's tensor size limit. Plain
// arithmetic on a Conv2dDesc (no CUDA, no cuDNN: built and tested in every
// build).
//
// The limit: "The total size of a tensor including the potential padding
// between dimensions is limited to 2 Giga-elements of type datatype", and
// cudnnSetTensor4dDescriptor / cudnnSetTensor4dDescriptorEx /
// cudnnSetTensorNdDescriptor answer CUDNN_STATUS_NOT_SUPPORTED past it
// (cuDNN API reference). Observed: pytorch/pytorch#22496 (a Conv3d fails with
// CUDNN_STATUS_NOT_SUPPORTED from batch 42 on; NVIDIA's reply: "a
// documented restriction"), microsoft/onnxruntime#15715 (the SD VAE
// decoder's up_blocks.2 upsampler conv, [32, 256, 512, 512] = 2^31
// elements, refused by cudnnSetTensorNdDescriptor; batch 31 runs). A
// tensor's size here is its span, 1 + sum_i (dim_i - 1) |stride_i| (the
// padding between dimensions included: a channel slice of a concat buffer
// spans the other channels of every image but the last), at least its
// element count; at most kCudnnMaxTensorElements = 2^31 - 1.
//
// The cut is PyTorch's (aten/src/ATen/native/cudnn/Conv_v7.cpp,
// split_batch_dim_to_32bit_out): along N only, each chunk a narrowed view
// of x and y (no copy); a convolution whose single image is past the limit
// is not given to cuDNN at all. Unlike PyTorch (chunks of 2^28 elements)
// the chunks are as large as the limit allows, and of near-equal size, so
// a batch gives at most two distinct chunk shapes (two cached plans).
//
// The tensors of one call of n images (kernels/cuda/conv_cudnn.h):
//   x      [n, C, H, W] with x's strides; with the explicit pad copy only
//          its rows / columns the output reads, [n, C, h_used, w_used];
//   xpad   the pad copy's packed [n, C, Hp, Wp] (only with the pad copy);
//   y      [n, O, OH, OW] with y's strides, and its packed copy
//          [n, O, OH, OW] (the packed-output path);
// every dimension and stride must also fit cuDNN's int parameters.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/conv_desc.h"

namespace vt {

constexpr int64_t kCudnnMaxTensorElements = (int64_t{1} << 31) - 1;

// The explicit pad copy's geometry (kernels/cuda/conv_cudnn.h): cuDNN pads
// symmetrically (ph rows top and bottom); when that gives another output
// size than OH / OW, x's first h_used rows / w_used columns go into the
// interior of a zeroed [N, C, hp, wp] buffer convolved without padding.
struct CudnnPadGeometry {
  bool pad = false;         // the explicit copy is needed
  int64_t hp = 0, wp = 0;   // the buffer's rows / columns (the input the output reads, padding included)
  int64_t h_used = 0, w_used = 0;
};
CudnnPadGeometry cudnn_pad_geometry(const Conv2dDesc& d);

// The most images of d's batch one cuDNN call may take with every tensor
// (above) at most max_elements; at most d.n; 0 when one image does not fit
// (or a stride / dimension exceeds an int), i.e. cuDNN cannot take d.
int64_t cudnn_conv_max_images(const Conv2dDesc& d, int64_t max_elements = kCudnnMaxTensorElements);

// n images in ceil(n / max_images) chunks of near-equal size (the first
// n % chunks one larger), in batch order; {} when max_images < 1.
std::vector<int64_t> cudnn_conv_chunks(int64_t n, int64_t max_images);

}  // namespace vt
