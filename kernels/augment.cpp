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

// A view of `buf` with `shape` and `dt` on `dev`, reallocated only when it
// is too small (or of another dtype or device).
Tensor reuse(Tensor& buf, const Shape& shape, DType dt, Device dev) {
  const int64_t n = shape_numel(shape);
  if (!buf.defined() || buf.dtype() != dt || buf.device() != dev || buf.numel() < n)
    buf = Tensor::empty({n}, dt, dev);
  return Tensor::wrap(buf.raw(), shape, dt, dev);
}

}  // namespace

void augment_step(const Tensor& in, const std::vector<AugmentStepArgs>& args, const Tensor& out,
                  AugmentScratch* scratch) {
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
    AugmentScratch local;
    AugmentScratch& s = scratch ? *scratch : local;
    const Device dev = in.device();
    const Tensor dargs = reuse(s.step_args, {N * static_cast<int64_t>(sizeof(AugmentStepArgs))}, DType::U8, dev);
    const Tensor luts = reuse(s.luts, {N * 3 * 256}, DType::U8, dev);
    const Tensor sums = reuse(s.sums, {N}, DType::I64, dev);
    return cuda::augment_step(in.u8(), args.data(), static_cast<AugmentStepArgs*>(dargs.raw()), out.u8(), N, H, W,
                              luts.u8(), static_cast<uint64_t*>(sums.raw()));
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::augment_step(in.u8(), args.data(), out.u8(), N, H, W);
}

void augment_erase(const Tensor& out, const std::vector<AugmentEraseArgs>& args, AugmentScratch* scratch) {
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
    AugmentScratch local;
    AugmentScratch& s = scratch ? *scratch : local;
    const Tensor dargs =
        reuse(s.erase_args, {N * static_cast<int64_t>(sizeof(AugmentEraseArgs))}, DType::U8, out.device());
    return cuda::augment_erase(out.f32(), args.data(), static_cast<AugmentEraseArgs*>(dargs.raw()), N, H, W);
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::augment_erase(out.f32(), args.data(), N, H, W);
}

void augment_apply(const Tensor& u8, const AugmentBatchArgs& args, const Tensor& out, AugmentScratch* scratch) {
  const char* op = "augment_apply";
  check_images(op, "u8", u8);
  const int64_t N = u8.size(0);
  AugmentScratch local;
  AugmentScratch& s = scratch ? *scratch : local;
  Tensor cur = u8;
  for (const std::vector<AugmentStepArgs>& step : args.steps) {
    check_count(op, step, N);
    bool all_copy = true;
    for (const AugmentStepArgs& a : step) all_copy = all_copy && a.kind == kAugCopy;
    if (all_copy) continue;
    // Ping-pong between the scratch buffers; the input is never written.
    Tensor& buf = s.images[cur.raw() == s.images[0].raw() && s.images[0].defined() ? 1 : 0];
    const Tensor next = reuse(buf, u8.shape(), DType::U8, u8.device());
    augment_step(cur, step, next, &s);
    cur = next;
  }
  normalize_u8_hwc(cur, args.mean, args.std, out);
  augment_erase(out, args.erase, &s);
}

}  // namespace vt
