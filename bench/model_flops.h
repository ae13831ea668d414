// Forward multiply-adds (MACs) per image of the benchmarked models, in
// closed form from their configs: the matrix products only (Linear layers,
// the patch embedding, q.k^T and attn.v), as DeiT and DiT count their
// "FLOPs" (fvcore: one multiply-add = one FLOP; norms, softmax, GELU and
// the residual adds are left out). Training FLOPs are counted as 3 x the
// forward FLOPs (forward, and a backward twice as costly), 2 FLOPs a MAC.
// The norm scheme adds no matrix product (SiameseNorm's extra work is
// norms and adds), so every scheme has the same count.
//
// Checks (tests/bench/check_step_json.py): DeiT-S 224 px 4.60 G (DeiT's
// Table 1: 4.6), DiT-L/4 on 32x32x4 latents 19.70 G (DiT's Table 4: 19.70
// "Gflops", which are multiply-adds), and a layer-by-layer count of the
// tiny models the emulator test runs.
#pragma once
#include "diffusion/dit_model.h"
#include "vision/vit.h"

namespace vt_bench {

// One block of L tokens of width D: qkv and proj (4 D^2), fc1 and fc2
// (2 D H), q.k^T and attn.v (2 L^2 D, over all heads together).
inline double block_macs(double L, double D, double H) { return L * (4 * D * D + 2 * D * H) + 2 * L * L * D; }

// ViT/DeiT: patch embedding (N patches x C p^2 x D), depth blocks over
// N + 1 tokens, the head on the class token (D x K).
inline double vit_forward_macs(const vt::VitConfig& c) {
  const double N = static_cast<double>(c.num_patches()), D = static_cast<double>(c.backbone.dim);
  const double H = static_cast<double>(c.backbone.hidden());
  const double p2 = static_cast<double>(c.patch_size * c.patch_size);
  return N * static_cast<double>(c.in_chans) * p2 * D + static_cast<double>(c.backbone.depth) * block_macs(N + 1, D, H) +
         D * static_cast<double>(c.num_classes);
}

// DiT: x_embedder (T x C p^2 x D), the timestep MLP (256 x D + D x D; the
// label embedding is a lookup), per block the adaLN Linear (D x 6D, once a
// sample) and the block, the final layer's adaLN (D x 2D) and its Linear
// (T x D x p^2 out_channels).
inline double dit_forward_macs(const vt::DiTConfig& c) {
  const double T = static_cast<double>(c.tokens()), D = static_cast<double>(c.hidden);
  const double H = static_cast<double>(static_cast<int64_t>(static_cast<double>(c.hidden) * c.mlp_ratio));
  const double p2 = static_cast<double>(c.patch * c.patch);
  const double embed = T * static_cast<double>(c.in_channels) * p2 * D + 256 * D + D * D;
  const double blocks = static_cast<double>(c.depth) * (6 * D * D + block_macs(T, D, H));
  const double final_layer = 2 * D * D + T * D * p2 * static_cast<double>(c.out_channels());
  return embed + blocks + final_layer;
}

}  // namespace vt_bench
