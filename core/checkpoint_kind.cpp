#include "core/checkpoint_kind.h"

namespace vt {

WeightsKind weights_kind(const std::map<std::string, Tensor>& dict) {
  auto has = [&](const char* name) { return dict.count(name) > 0; };
  auto has_prefix = [&](const std::string& prefix) {
    auto it = dict.lower_bound(prefix);
    return it != dict.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  };
  if (has("patch_embed.proj.weight")) return WeightsKind::VitClassifier;
  if (has("x_embedder.proj.weight")) return WeightsKind::DiT;
  if (has_prefix("exp_avg.") || has_prefix("exp_avg_sq.")) return WeightsKind::Optimizer;
  if (has("encoder.conv_in.weight") || has("decoder.conv_in.weight")) return WeightsKind::Vae;
  if (has("Conv2d_1a_3x3.conv.weight")) return WeightsKind::Inception;
  return WeightsKind::Unknown;
}

std::string weights_kind_text(WeightsKind kind) {
  switch (kind) {
    case WeightsKind::VitClassifier: return "a vtrain ViT classifier";
    case WeightsKind::DiT: return "a dittrain DiT model (for dittrain sample, not veval top1)";
    case WeightsKind::Optimizer:
      return "optimizer state (exp_avg / exp_avg_sq of optimizer.safetensors), not model weights: give the "
             "step_<N>/ directory or its model.safetensors";
    case WeightsKind::Vae: return "a VAE (AutoencoderKL), not a classifier";
    case WeightsKind::Inception: return "the FID Inception network, not a vtrain classifier";
    case WeightsKind::Unknown: break;
  }
  return "weights of an unknown model";
}

}  // namespace vt
