#include "kernels/augment.h"

#include <cstring>
#include <string>

#include "kernels/cpu/augment.h"
#include "kernels/image_prep.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/augment.h"
#endif

namespace vt {

namespace {

void check_images(const char* op, const char* name, const Tensor& t) {
  opcheck::dtype(op, name, t, DType::U8);
  opcheck::contiguous(op, name, t);
  if (t.dim() != 4 || t.size(3) != 3) opcheck::fail(op, opcheck::desc(name, t) + " must be [N, H, W, 3]");
}

template <typename T>
void check_count(const char* op, const std::vector<T>& args, int64_t N) {
  if (static_cast<int64_t>(args.size()) != N)
    opcheck::fail(op, std::to_string(args.size()) + " argument entries for a batch of " + std::to_string(N));
}

// The per-sample arguments as a U8 tensor on `dev` (device kernels read them there).
template <typename T>
Tensor args_on(const std::vector<T>& args, Device dev) {
  Tensor host = Tensor::empty({static_cast<int64_t>(args.size() * sizeof(T))}, DType::U8);
  if (!args.empty()) std::memcpy(host.raw(), args.data(), args.size() * sizeof(T));
  return host.to(dev);
}

}  // namespace

void augment_step(const Tensor& in, const std::vector<AugmentStepArgs>& args, const Tensor& out) {
  const char* op = "augment_step";
  check_images(op, "in", in);
  check_images(op, "out", out);
  opcheck::shape(op, "out", out, in.shape());
  opcheck::same_device(op, in.device(), {{"out", &out}});
  if (in.raw() == out.raw() && in.numel() > 0) opcheck::fail(op, "in and out must be distinct buffers");
  const int64_t N = in.size(0);
  const int H = static_cast<int>(in.size(1)), W = static_cast<int>(in.size(2));
  check_count(op, args, N);
  for (const AugmentStepArgs& a : args)
    if (a.kind < 0 || a.kind >= kAugNumKinds) opcheck::fail(op, "unknown step kind " + std::to_string(a.kind));
  if (!in.device().is_cpu()) {
#ifdef VT_CUDA
    const Tensor dargs = args_on(args, in.device());
    Tensor luts = Tensor::empty({N * 3 * 256}, DType::U8, in.device());
    Tensor sums = Tensor::empty({N}, DType::I64, in.device());
    return cuda::augment_step(in.u8(), static_cast<const AugmentStepArgs*>(dargs.raw()), out.u8(), N, H, W, luts.u8(),
                              static_cast<uint64_t*>(sums.raw()));
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::augment_step(in.u8(), args.data(), out.u8(), N, H, W);
}

void augment_erase(const Tensor& out, const std::vector<AugmentEraseArgs>& args) {
  const char* op = "augment_erase";
  opcheck::dtype(op, "out", out, DType::F32);
  opcheck::contiguous(op, "out", out);
  if (out.dim() != 4 || out.size(1) != 3) opcheck::fail(op, opcheck::desc("out", out) + " must be [N, 3, H, W]");
  const int64_t N = out.size(0);
  const int H = static_cast<int>(out.size(2)), W = static_cast<int>(out.size(3));
  check_count(op, args, N);
  for (size_t n = 0; n < args.size(); ++n) {
    const AugmentEraseArgs& e = args[n];
    if (e.height == 0) continue;
    if (e.top < 0 || e.left < 0 || e.height < 0 || e.width < 0 || e.top + e.height > H || e.left + e.width > W ||
        e.lane > 3)
      opcheck::fail(op, "sample " + std::to_string(n) + ": box (top " + std::to_string(e.top) + ", left " +
                            std::to_string(e.left) + ", " + std::to_string(e.height) + " x " + std::to_string(e.width) +
                            ", lane " + std::to_string(e.lane) + ") outside " + opcheck::desc("out", out));
  }
  if (!out.device().is_cpu()) {
#ifdef VT_CUDA
    const Tensor dargs = args_on(args, out.device());
    return cuda::augment_erase(out.f32(), static_cast<const AugmentEraseArgs*>(dargs.raw()), N, H, W);
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::augment_erase(out.f32(), args.data(), N, H, W);
}

void augment_apply(const Tensor& u8, const AugmentBatchArgs& args, const Tensor& out) {
  const char* op = "augment_apply";
  check_images(op, "u8", u8);
  const int64_t N = u8.size(0);
  Tensor cur = u8, spare;
  Tensor next = Tensor::empty(u8.shape(), DType::U8, u8.device());
  for (const std::vector<AugmentStepArgs>& step : args.steps) {
    check_count(op, step, N);
    bool all_copy = true;
    for (const AugmentStepArgs& a : step) all_copy = all_copy && a.kind == kAugCopy;
    if (all_copy) continue;
    augment_step(cur, step, next);
    // Ping-pong between two scratch buffers; the input is never written.
    if (!spare.defined()) spare = Tensor::empty(u8.shape(), DType::U8, u8.device());
    cur = next;
    std::swap(next, spare);
  }
  normalize_u8_hwc(cur, args.mean, args.std, out);
  augment_erase(out, args.erase);
}

}  // namespace vt
