#include "kernels/attention.h"

#include <atomic>

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

// True when `saved` is the logsumexp form [B, H, T] F32 (else probs).
bool saved_is_lse(const char* op, const AttnDims& d, const Tensor& saved, DType io) {
  if (saved.dim() == 3) {
    opcheck::like(op, "lse", saved, {d.B, d.H, d.T}, DType::F32);
    if (!saved.device().is_cuda())
      opcheck::fail(op, opcheck::desc("lse", saved) + ": the logsumexp saved state is CUDA-only (the CPU saves probs)");
    return true;
  }
  opcheck::like(op, "probs", saved, {d.B, d.H, d.T, d.T}, io);
  return false;
}

// attention_calls(): [forward, backward] x [F32, BF16], and cuDNN forwards.
std::atomic<int64_t> g_calls[2][2];
std::atomic<int64_t> g_cudnn_forwards;

void count_call(int pass, DType io) {
  g_calls[pass][io == DType::BF16 ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

AttentionCalls attention_calls() {
  AttentionCalls c;
  c.forward_f32 = g_calls[0][0].load(std::memory_order_relaxed);
  c.forward_bf16 = g_calls[0][1].load(std::memory_order_relaxed);
  c.backward_f32 = g_calls[1][0].load(std::memory_order_relaxed);
  c.backward_bf16 = g_calls[1][1].load(std::memory_order_relaxed);
  c.forward_cudnn = g_cudnn_forwards.load(std::memory_order_relaxed);
  return c;
}

void attention_forward(const Tensor& qkv, int64_t num_heads, const Tensor& out, const Tensor& saved) {
  const char* op = "attention_forward";
  const AttnDims d = check_qkv(op, qkv, num_heads);
  opcheck::like(op, "out", out, {d.B, d.T, d.H * d.Dh}, qkv.dtype());
  [[maybe_unused]] const bool lse = saved.defined() && saved_is_lse(op, d, saved, qkv.dtype());
  opcheck::same_device(op, qkv.device(), {{"out", &out}, {"saved", &saved}});
#ifndef VT_CUDA
  if (!qkv.device().is_cpu()) opcheck::no_cuda(op);
#endif
  count_call(0, qkv.dtype());
  if (d.B * d.T == 0) return;
#ifdef VT_CUDA
  if (qkv.device().is_cuda()) {
    if (saved.defined() && !lse)
      return cuda::attention_forward(qkv.raw(), out.raw(), saved.raw(), d.B, d.T, d.H, d.Dh, qkv.dtype());
    if (!cuda::flash_attention_supported(d.Dh) && !lse)  // inference at head dims the flash kernel lacks
      return cuda::attention_forward(qkv.raw(), out.raw(), nullptr, d.B, d.T, d.H, d.Dh, qkv.dtype());
    if (lse && cuda::sdpa_uses_cudnn(d.B, d.T, d.H, d.Dh, qkv.dtype()))
      g_cudnn_forwards.fetch_add(1, std::memory_order_relaxed);
    return cuda::sdpa_forward(qkv.raw(), out.raw(), lse ? saved.f32() : nullptr, d.B, d.T, d.H, d.Dh, qkv.dtype());
  }
#endif
  cpu::attention_forward(qkv.f32(), out.f32(), saved.defined() ? saved.f32() : nullptr, d.B, d.T, d.H, d.Dh);
}

void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& saved, const Tensor& dout,
                        int64_t num_heads, const Tensor& dqkv) {
  const char* op = "attention_backward";
  const AttnDims d = check_qkv(op, qkv, num_heads);
  const bool lse = saved_is_lse(op, d, saved, qkv.dtype());
  if (lse) opcheck::like(op, "out", out, {d.B, d.T, d.H * d.Dh}, qkv.dtype());
  opcheck::like(op, "dout", dout, {d.B, d.T, d.H * d.Dh}, qkv.dtype());
  opcheck::like(op, "dqkv", dqkv, qkv.shape(), qkv.dtype());
  opcheck::same_device(op, qkv.device(), {{"saved", &saved}, {"dout", &dout}, {"dqkv", &dqkv}});
  if (lse) opcheck::same_device(op, qkv.device(), {{"out", &out}});
#ifndef VT_CUDA
  if (!qkv.device().is_cpu()) opcheck::no_cuda(op);
#endif
  count_call(1, qkv.dtype());
  if (d.B * d.T == 0) return;
#ifdef VT_CUDA
  if (qkv.device().is_cuda()) {
    if (lse)
      return cuda::sdpa_backward(qkv.raw(), out.raw(), saved.f32(), dout.raw(), dqkv.raw(), d.B, d.T, d.H, d.Dh,
                                 qkv.dtype());
    return cuda::attention_backward(qkv.raw(), saved.raw(), dout.raw(), dqkv.raw(), d.B, d.T, d.H, d.Dh, qkv.dtype());
  }
#endif
  cpu::attention_backward(qkv.f32(), saved.f32(), dout.f32(), dqkv.f32(), d.B, d.T, d.H, d.Dh);
}

void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dout, int64_t num_heads,
                        const Tensor& dqkv) {
  if (probs.dim() == 3)
    opcheck::fail("attention_backward", "saved logsumexp " + opcheck::desc("lse", probs) +
                                            " needs the forward's out: call the overload taking out");
  attention_backward(qkv, Tensor(), probs, dout, num_heads, dqkv);
}

AttentionSavedSpec attention_saved_spec(Device device, int64_t batch, int64_t tokens, int64_t num_heads,
                                        int64_t head_dim, DType io) {
#ifdef VT_CUDA
  if (device.is_cuda() && cuda::flash_attention_supported(head_dim))
    return {{batch, num_heads, tokens}, DType::F32, true};
#endif
  return {{batch, num_heads, tokens, tokens}, io, false};
}

int64_t attention_saved_bytes(int64_t batch, int64_t tokens, int64_t num_heads) {
  return batch * num_heads * tokens * tokens * static_cast<int64_t>(sizeof(float));
}

}  // namespace vt
