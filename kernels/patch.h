// Patch embedding helpers (conv-as-GEMM), class-token concat/split and
// position-embedding add. Tensors contiguous. Dtypes: activations (image,
// patches, tokens, x, out and their gradients) F32, or BF16 on CUDA (one
// dtype per call); cls, pos, dcls, dpos F32 always.
// CPU: kernels/cpu/patch.h (OpenMP). CUDA: kernels/cuda/patch.h, the same
// maps; the parameter gradients sum the batch in the same order (bitwise
// equal to the CPU in fp32).
//
// patchify (timm PatchEmbed / DiT x_embedder, a Conv2d with kernel = stride
// = p): image [B, C, H, W] -> patches [B, N, C*p*p], N = (H/p)*(W/p), tokens
// row-major (token i*(W/p) + j covers rows i*p.., columns j*p..), feature
// index c*p*p + a*p + b = pixel (c, i*p + a, j*p + b). With the conv weight
// [D, C, p, p] viewed as [D, C*p*p], patches @ W^T + bias is the conv output
// flattened to [B, N, D]. H and W must be multiples of p.
//
// unpatchify (DiT FinalLayer + unpatchify, docs/recipes.md §8): tokens [B, h*w, p*p*C]
// -> image [B, C, h*p, w*p]; pixel (c, i*p + a, j*p + b) = token i*w + j,
// feature (a*p + b)*C + c. NOTE the feature order differs from patchify's.
// The output image's shape fixes h = H/p and w = W/p.
//
// Backward functions OVERWRITE activation gradients and ACCUMULATE (+=)
// parameter gradients (dcls, dpos), per the kernel conventions.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

// image [B, C, H, W] -> patches [B, (H/p)(W/p), C*p*p].
void patchify(const Tensor& image, int64_t patch, const Tensor& patches);
// Adjoint: dpatches [B, N, C*p*p] -> dimage [B, C, H, W] (overwritten; every
// pixel belongs to exactly one patch, so this is a permutation).
void patchify_backward(const Tensor& dpatches, int64_t patch, const Tensor& dimage);

// tokens [B, h*w, p*p*C] -> image [B, C, h*p, w*p].
void unpatchify(const Tensor& tokens, int64_t patch, const Tensor& image);
// dimage [B, C, h*p, w*p] -> dtokens [B, h*w, p*p*C] (overwritten).
void unpatchify_backward(const Tensor& dimage, int64_t patch, const Tensor& dtokens);

// out[b, 0] = cls, out[b, 1 + n] = x[b, n]. x [B, N, D], cls with D elements
// (timm's cls_token is [1, 1, D]), out [B, N+1, D].
void cls_concat(const Tensor& x, const Tensor& cls, const Tensor& out);
// dout [B, N+1, D] -> dx [B, N, D] (overwritten), dcls (D elements) +=
// sum over the batch of dout[b, 0].
void cls_concat_backward(const Tensor& dout, const Tensor& dx, const Tensor& dcls);

// The class-token row that feeds the head (timm's x[:, 0]): out[b] = x[b, 0].
// x [B, T, D], out [B, D]. A kernel rather than Tensor::copy_from of a
// strided view, which on CUDA would stage the whole [B, T, D] through the host.
void cls_select(const Tensor& x, const Tensor& out);
// Its adjoint: dx[b, 0] = dout[b], dx[b, t > 0] = 0 (dx overwritten).
void cls_select_backward(const Tensor& dout, const Tensor& dx);

// out = x + pos broadcast over the batch. x, out [B, T, D] (out may be x:
// in place); pos with T*D elements ([T, D] or timm's [1, T, D]).
void pos_embed_add(const Tensor& x, const Tensor& pos, const Tensor& out);
// dpos += sum over the batch of dout [B, T, D]. (dx = dout: the caller
// reuses the incoming gradient.)
void pos_embed_add_backward(const Tensor& dout, const Tensor& dpos);

}  // namespace vt
