#include "kernels/attention.h"

#include "kernels/cpu/attention.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/attention.h"
#endif

namespace vt {
namespace {

struct AttnDims {
  int64_t B, T, H, Dh;
};

AttnDims check_qkv(const char* op, const Tensor& qkv, int64_t num_heads) {
  opcheck::io_dtype(op, "qkv", qkv);
  opcheck::contiguous(op, "qkv", qkv);
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0)
    opcheck::fail(op, opcheck::desc("qkv", qkv) + " must be [B, T, 3*D]");
  const int64_t D = qkv.size(2) / 3;
  if (num_heads <= 0 || D % num_heads != 0)
    opcheck::fail(op, "D = " + std::to_string(D) + " (from " + opcheck::desc("qkv", qkv) +
                          ") is not divisible by num_heads = " + std::to_string(num_heads));
  return {qkv.size(0), qkv.size(1), num_heads, D / num_heads};
}

}  // namespace

void attention_forward(const Tensor& qkv, int64_t num_heads, const Tensor& out, const Tensor& probs) {
  const char* op = "attention_forward";
  const AttnDims d = check_qkv(op, qkv, num_heads);
  opcheck::like(op, "out", out, {d.B, d.T, d.H * d.Dh}, qkv.dtype());
  if (probs.defined()) opcheck::like(op, "probs", probs, {d.B, d.H, d.T, d.T}, qkv.dtype());
  opcheck::same_device(op, qkv.device(), {{"out", &out}, {"probs", &probs}});
#ifndef VT_CUDA
  if (!qkv.device().is_cpu()) opcheck::no_cuda(op);
#endif
  if (d.B * d.T == 0) return;
#ifdef VT_CUDA
  if (qkv.device().is_cuda())
    return cuda::attention_forward(qkv.raw(), out.raw(), probs.defined() ? probs.raw() : nullptr, d.B, d.T, d.H,
                                   d.Dh, qkv.dtype());
#endif
  cpu::attention_forward(qkv.f32(), out.f32(), probs.defined() ? probs.f32() : nullptr, d.B, d.T, d.H, d.Dh);
}

void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dout, int64_t num_heads,
                        const Tensor& dqkv) {
  const char* op = "attention_backward";
  const AttnDims d = check_qkv(op, qkv, num_heads);
  opcheck::like(op, "probs", probs, {d.B, d.H, d.T, d.T}, qkv.dtype());
  opcheck::like(op, "dout", dout, {d.B, d.T, d.H * d.Dh}, qkv.dtype());
  opcheck::like(op, "dqkv", dqkv, qkv.shape(), qkv.dtype());
  opcheck::same_device(op, qkv.device(), {{"probs", &probs}, {"dout", &dout}, {"dqkv", &dqkv}});
#ifndef VT_CUDA
  if (!qkv.device().is_cpu()) opcheck::no_cuda(op);
#endif
  if (d.B * d.T == 0) return;
#ifdef VT_CUDA
  if (qkv.device().is_cuda())
    return cuda::attention_backward(qkv.raw(), probs.raw(), dout.raw(), dqkv.raw(), d.B, d.T, d.H, d.Dh, qkv.dtype());
#endif
  cpu::attention_backward(qkv.f32(), probs.f32(), dout.f32(), dqkv.f32(), d.B, d.T, d.H, d.Dh);
}

int64_t attention_saved_bytes(int64_t batch, int64_t tokens, int64_t num_heads) {
  return batch * num_heads * tokens * tokens * static_cast<int64_t>(sizeof(float));
}

}  // namespace vt
