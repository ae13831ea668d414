#include "kernels/patch.h"

#include <string>

#include "kernels/cpu/patch.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/patch.h"
#endif

namespace vt {
using opcheck::on_cuda;
namespace {

// Image [B, C, H, W] with H, W multiples of p.
void check_image(const char* op, const char* name, const Tensor& img, int64_t p) {
  opcheck::io_dtype(op, name, img);
  opcheck::contiguous(op, name, img);
  if (img.dim() != 4) opcheck::fail(op, opcheck::desc(name, img) + " must be [B, C, H, W]");
  if (p <= 0 || img.size(2) % p != 0 || img.size(3) % p != 0)
    opcheck::fail(op, opcheck::desc(name, img) + ": H and W must be multiples of patch size " + std::to_string(p));
}

Shape token_shape(const Tensor& img, int64_t p) {
  return {img.size(0), (img.size(2) / p) * (img.size(3) / p), img.size(1) * p * p};
}

}  // namespace

void patchify(const Tensor& image, int64_t patch, const Tensor& patches) {
  const char* op = "patchify";
  check_image(op, "image", image, patch);
  opcheck::like(op, "patches", patches, token_shape(image, patch), image.dtype());
  opcheck::same_device(op, image.device(), {{"patches", &patches}});
  if (on_cuda(op, image.device()))
    VT_CUDA_CALL(cuda::patch_permute(image.raw(), patches.raw(), image.size(0), image.size(1), image.size(2),
                                     image.size(3), patch, cuda::PatchLayout::Conv, true, image.dtype()));
  cpu::patchify(image.f32(), patches.f32(), image.size(0), image.size(1), image.size(2), image.size(3), patch);
}

void patchify_backward(const Tensor& dpatches, int64_t patch, const Tensor& dimage) {
  const char* op = "patchify_backward";
  check_image(op, "dimage", dimage, patch);
  opcheck::like(op, "dpatches", dpatches, token_shape(dimage, patch), dimage.dtype());
  opcheck::same_device(op, dimage.device(), {{"dpatches", &dpatches}});
  if (on_cuda(op, dimage.device()))
    VT_CUDA_CALL(cuda::patch_permute(dimage.raw(), dpatches.raw(), dimage.size(0), dimage.size(1), dimage.size(2),
                                     dimage.size(3), patch, cuda::PatchLayout::Conv, false, dimage.dtype()));
  cpu::patchify_backward(dpatches.f32(), dimage.f32(), dimage.size(0), dimage.size(1), dimage.size(2),
                         dimage.size(3), patch);
}

void unpatchify(const Tensor& tokens, int64_t patch, const Tensor& image) {
  const char* op = "unpatchify";
  check_image(op, "image", image, patch);
  opcheck::like(op, "tokens", tokens, token_shape(image, patch), image.dtype());
  opcheck::same_device(op, image.device(), {{"tokens", &tokens}});
  if (on_cuda(op, image.device()))
    VT_CUDA_CALL(cuda::patch_permute(image.raw(), tokens.raw(), image.size(0), image.size(1), image.size(2),
                                     image.size(3), patch, cuda::PatchLayout::DiT, false, image.dtype()));
  cpu::unpatchify(tokens.f32(), image.f32(), image.size(0), image.size(1), image.size(2), image.size(3), patch);
}

void unpatchify_backward(const Tensor& dimage, int64_t patch, const Tensor& dtokens) {
  const char* op = "unpatchify_backward";
  check_image(op, "dimage", dimage, patch);
  opcheck::like(op, "dtokens", dtokens, token_shape(dimage, patch), dimage.dtype());
  opcheck::same_device(op, dimage.device(), {{"dtokens", &dtokens}});
  if (on_cuda(op, dimage.device()))
    VT_CUDA_CALL(cuda::patch_permute(dimage.raw(), dtokens.raw(), dimage.size(0), dimage.size(1), dimage.size(2),
                                     dimage.size(3), patch, cuda::PatchLayout::DiT, true, dimage.dtype()));
  cpu::unpatchify_backward(dimage.f32(), dtokens.f32(), dimage.size(0), dimage.size(1), dimage.size(2),
                           dimage.size(3), patch);
}

void cls_concat(const Tensor& x, const Tensor& cls, const Tensor& out) {
  const char* op = "cls_concat";
  const DType dt = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() != 3) opcheck::fail(op, opcheck::desc("x", x) + " must be [B, N, D]");
  const int64_t B = x.size(0), N = x.size(1), D = x.size(2);
  opcheck::dtype(op, "cls", cls, DType::F32);
  opcheck::contiguous(op, "cls", cls);
  if (cls.numel() != D) opcheck::fail(op, opcheck::desc("cls", cls) + " must have D = " + std::to_string(D) + " elements");
  opcheck::like(op, "out", out, {B, N + 1, D}, dt);
  opcheck::same_device(op, x.device(), {{"cls", &cls}, {"out", &out}});
  if (on_cuda(op, x.device())) VT_CUDA_CALL(cuda::cls_concat(x.raw(), cls.f32(), out.raw(), B, N, D, dt));
  cpu::cls_concat(x.f32(), cls.f32(), out.f32(), B, N, D);
}

void cls_concat_backward(const Tensor& dout, const Tensor& dx, const Tensor& dcls) {
  const char* op = "cls_concat_backward";
  const DType dt = opcheck::io_dtype(op, "dx", dx);
  opcheck::contiguous(op, "dx", dx);
  if (dx.dim() != 3) opcheck::fail(op, opcheck::desc("dx", dx) + " must be [B, N, D]");
  const int64_t B = dx.size(0), N = dx.size(1), D = dx.size(2);
  opcheck::like(op, "dout", dout, {B, N + 1, D}, dt);
  opcheck::dtype(op, "dcls", dcls, DType::F32);
  opcheck::contiguous(op, "dcls", dcls);
  if (dcls.numel() != D) opcheck::fail(op, opcheck::desc("dcls", dcls) + " must have D = " + std::to_string(D) + " elements");
  opcheck::same_device(op, dout.device(), {{"dx", &dx}, {"dcls", &dcls}});
  if (on_cuda(op, dout.device()))
    VT_CUDA_CALL(cuda::cls_concat_backward(dout.raw(), dx.raw(), dcls.f32(), B, N, D, dt));
  cpu::cls_concat_backward(dout.f32(), dx.f32(), dcls.f32(), B, N, D);
}

void cls_select(const Tensor& x, const Tensor& out) {
  const char* op = "cls_select";
  const DType dt = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() != 3 || x.size(1) < 1) opcheck::fail(op, opcheck::desc("x", x) + " must be [B, T >= 1, D]");
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
  opcheck::like(op, "out", out, {B, D}, dt);
  opcheck::same_device(op, x.device(), {{"out", &out}});
  if (on_cuda(op, x.device())) VT_CUDA_CALL(cuda::cls_select(x.raw(), out.raw(), B, T, D, dt));
  cpu::cls_select(x.f32(), out.f32(), B, T, D);
}

void cls_select_backward(const Tensor& dout, const Tensor& dx) {
  const char* op = "cls_select_backward";
  const DType dt = opcheck::io_dtype(op, "dx", dx);
  opcheck::contiguous(op, "dx", dx);
  if (dx.dim() != 3 || dx.size(1) < 1) opcheck::fail(op, opcheck::desc("dx", dx) + " must be [B, T >= 1, D]");
  const int64_t B = dx.size(0), T = dx.size(1), D = dx.size(2);
  opcheck::like(op, "dout", dout, {B, D}, dt);
  opcheck::same_device(op, dx.device(), {{"dout", &dout}});
  if (on_cuda(op, dx.device())) VT_CUDA_CALL(cuda::cls_select_backward(dout.raw(), dx.raw(), B, T, D, dt));
  cpu::cls_select_backward(dout.f32(), dx.f32(), B, T, D);
}

void pos_embed_add(const Tensor& x, const Tensor& pos, const Tensor& out) {
  const char* op = "pos_embed_add";
  const DType dt = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() != 3) opcheck::fail(op, opcheck::desc("x", x) + " must be [B, T, D]");
  opcheck::like(op, "out", out, x.shape(), dt);
  opcheck::dtype(op, "pos", pos, DType::F32);
  opcheck::contiguous(op, "pos", pos);
  if (pos.numel() != x.size(1) * x.size(2) || pos.size(-1) != x.size(2))
    opcheck::fail(op, opcheck::desc("pos", pos) + " must be [T, D] for " + opcheck::desc("x", x));
  opcheck::same_device(op, x.device(), {{"pos", &pos}, {"out", &out}});
  if (on_cuda(op, x.device()))
    VT_CUDA_CALL(cuda::pos_embed_add(x.raw(), pos.f32(), out.raw(), x.size(0), x.size(1), x.size(2), dt));
  cpu::pos_embed_add(x.f32(), pos.f32(), out.f32(), x.size(0), x.size(1), x.size(2));
}

void pos_embed_add_backward(const Tensor& dout, const Tensor& dpos) {
  const char* op = "pos_embed_add_backward";
  [[maybe_unused]] const DType dt = opcheck::io_dtype(op, "dout", dout);
  opcheck::contiguous(op, "dout", dout);
  if (dout.dim() != 3) opcheck::fail(op, opcheck::desc("dout", dout) + " must be [B, T, D]");
  opcheck::dtype(op, "dpos", dpos, DType::F32);
  opcheck::contiguous(op, "dpos", dpos);
  if (dpos.numel() != dout.size(1) * dout.size(2) || dpos.size(-1) != dout.size(2))
    opcheck::fail(op, opcheck::desc("dpos", dpos) + " must be [T, D] for " + opcheck::desc("dout", dout));
  opcheck::same_device(op, dout.device(), {{"dpos", &dpos}});
  if (on_cuda(op, dout.device()))
    VT_CUDA_CALL(cuda::pos_embed_add_backward(dout.raw(), dpos.f32(), dout.size(0), dout.size(1), dout.size(2), dt));
  cpu::pos_embed_add_backward(dout.f32(), dpos.f32(), dout.size(0), dout.size(1), dout.size(2));
}

}  // namespace vt
