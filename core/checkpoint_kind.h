// What a weights file holds, read from its tensor names, for error messages
// that say "this is a DiT checkpoint" instead of listing hundreds of missing
// and unexpected tensors when the wrong file is given.
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"

namespace vt {

enum class WeightsKind { VitClassifier, DiT, Optimizer, Vae, Inception, Unknown };

// VitClassifier: patch_embed.proj.weight (vtrain, timm's DeiT names);
// DiT: x_embedder.proj.weight (dittrain, DiT's names); Optimizer: exp_avg.*
// / exp_avg_sq.* (a checkpoint's optimizer.safetensors); Vae:
// encoder.conv_in.weight / decoder.conv_in.weight (diffusers'
// AutoencoderKL); Inception: Conv2d_1a_3x3.conv.weight (pytorch-fid).
WeightsKind weights_kind(const std::map<std::string, Tensor>& dict);

// "a vtrain ViT classifier (model.safetensors / ema.safetensors)", "a
// dittrain DiT model", "optimizer state (exp_avg / exp_avg_sq of
// optimizer.safetensors), not model weights", ... ; "weights of an unknown
// model" for Unknown.
std::string weights_kind_text(WeightsKind kind);

}  // namespace vt
