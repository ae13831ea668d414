// Batched steps of DeiT's train augmentation on uint8 images, one set of
// parameters per sample (kernels/augment_args.h), so a batch uploaded as
// uint8 crops (4x fewer bytes than floats) is augmented where it lies. The
// plan of each sample (flip, RandAugment ops, RandomErasing box and the
// Philox position of its values) is drawn on the host
// (data_pipeline/augment_plan.h); these kernels only apply it, so a batch
// is a pure function of (seed, epoch, draw id) on any device.
//
// The arithmetic is Pillow's (ImageOps, ImageEnhance, Image.transform
// BICUBIC; libImaging Blend.c, Filter.c, Geometry.c) as timm 0.3.2's
// auto_augment.py calls it, written once in kernels/augment_math.h: the CPU
// twins (kernels/cpu/augment.h) and the CUDA twins (kernels/cuda/augment.h)
// give the same bits, and the CPU twins the bits of the host pipeline's
// cv::Mat ops (data_pipeline/randaugment.h; tests/data/test_augment_ops.cpp,
// tests/cuda/test_cuda_augment.cpp).
//
// Errors: std::invalid_argument naming the op and the tensor (dtype,
// shape, device, contiguity, argument count, unknown step kind).
#pragma once
#include <vector>

#include "core/tensor.h"
#include "kernels/augment_args.h"

namespace vt {

// Device memory the ops reuse between calls (on the CPU: unused), so a
// training step that passes the same scratch allocates nothing after the
// first (buffers grow to the largest batch seen). Arguments are copied
// into it with cudaMemcpyAsync on the op library's stream (no host wait).
struct AugmentScratch {
  Tensor images[2];           // U8: augment_apply's ping-pong buffers
  Tensor luts, sums;          // U8 [N * 3 * 256], I64 [N]: per-sample statistics
  Tensor step_args, erase_args;  // U8: the arguments, on the device
};

// out[n] = step args[n] applied to in[n]. in, out: U8 [N, H, W, 3]
// contiguous RGB on one device, distinct buffers; args: N entries.
// AutoContrast / Equalize read the image's per-band histograms and
// Contrast its gray mean first (a per-image pass).
void augment_step(const Tensor& in, const std::vector<AugmentStepArgs>& args, const Tensor& out,
                  AugmentScratch* scratch = nullptr);

// RandomErasing (timm, mode 'pixel'): inside sample n's box, every channel
// of out F32 [N, 3, H, W] (contiguous) gets the box's normals in C, y, x
// order, regenerated from the recorded Philox position (core/philox_block.h
// philox_normal_at; the host draws them with Philox::normal). A box must
// lie inside the image. On a real GPU the double log/cos of Box-Muller may
// differ from glibc's by an ulp, so a float value can (about once in 1e8)
// differ by one float ulp from the host's; on the CPU and the emulator they
// are the same bits.
void augment_erase(const Tensor& out, const std::vector<AugmentEraseArgs>& args, AugmentScratch* scratch = nullptr);

// A batch's whole augmentation after RandomResizedCrop, as the host
// pipeline orders it (data_pipeline/augment_plan.h augment_batch_args
// builds it from the samples' plans).
struct AugmentBatchArgs {
  // steps[s][n]: step s of sample n (the flip, then the RandAugment ops;
  // kAugCopy where a sample has fewer steps). Every steps[s] has N entries.
  std::vector<std::vector<AugmentStepArgs>> steps;
  std::vector<float> mean, std;        // 3 entries each: (v / 255 - mean) / std
  std::vector<AugmentEraseArgs> erase;  // N entries (height 0: none)
};

// u8 U8 [N, H, W, 3] (contiguous, read only) -> out F32 [N, 3, H, W]
// (contiguous, same device): the steps in order (augment_step; a step
// that copies every sample is skipped), normalize_u8_hwc
// (kernels/image_prep.h, the host's to_chw_normalized bits), augment_erase.
void augment_apply(const Tensor& u8, const AugmentBatchArgs& args, const Tensor& out, AugmentScratch* scratch = nullptr);

}  // namespace vt
