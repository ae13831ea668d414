#include "kernels/embedding.h"

#include <stdexcept>
#include <string>

#include "core/cuda_graph.h"
#include "kernels/cpu/embedding.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/embedding.h"
#endif

namespace vt {
namespace {

void check_ids(const char* op, const Tensor& ids, int64_t V) {
  opcheck::dtype(op, "ids", ids, DType::I32);
  opcheck::contiguous(op, "ids", ids);
  if (ids.dim() != 1) opcheck::fail(op, opcheck::desc("ids", ids) + " must be [B]");
#ifndef VT_CUDA
  if (!ids.device().is_cpu()) opcheck::no_cuda(op);
#endif
  // CUDA ids are copied back to be checked (B integers; a bad label must be
  // an error naming it, not an out-of-bounds read on the device) — except
  // while a CUDA Graph captures the step, which cannot read back (its
  // replays run no host code either): there the caller has checked the ids
  // it uploaded (dittrain: DitTrainer::prepare_batch).
  if (!ids.device().is_cpu() && cuda_capturing()) return;
  const Tensor host = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
  const int32_t* p = host.i32();
  for (int64_t b = 0; b < ids.numel(); ++b)
    if (p[b] < 0 || p[b] >= V)
      throw std::out_of_range(std::string(op) + ": ids[" + std::to_string(b) + "] = " + std::to_string(p[b]) +
                              " outside the table's [0, " + std::to_string(V) + ")");
}

void check_table(const char* op, const char* name, const Tensor& t) {
  opcheck::dtype(op, name, t, DType::F32);
  opcheck::contiguous(op, name, t);
  if (t.dim() != 2) opcheck::fail(op, opcheck::desc(name, t) + " must be [V, D]");
}

}  // namespace

void embedding_forward(const Tensor& table, const Tensor& ids, const Tensor& out) {
  const char* op = "embedding_forward";
  check_table(op, "table", table);
  opcheck::same_device(op, table.device(), {{"ids", &ids}, {"out", &out}});
  check_ids(op, ids, table.size(0));
  opcheck::f32_like(op, "out", out, {ids.size(0), table.size(1)});
#ifdef VT_CUDA
  if (table.device().is_cuda())
    return cuda::embedding_forward(table.f32(), ids.i32(), out.f32(), ids.size(0), table.size(1));
#endif
  cpu::embedding_forward(table.f32(), ids.i32(), out.f32(), ids.size(0), table.size(1));
}

void embedding_backward(const Tensor& dout, const Tensor& ids, const Tensor& dtable) {
  const char* op = "embedding_backward";
  check_table(op, "dtable", dtable);
  opcheck::same_device(op, dtable.device(), {{"ids", &ids}, {"dout", &dout}});
  check_ids(op, ids, dtable.size(0));
  opcheck::f32_like(op, "dout", dout, {ids.size(0), dtable.size(1)});
#ifdef VT_CUDA
  if (dtable.device().is_cuda())
    return cuda::embedding_backward(dout.f32(), ids.i32(), dtable.f32(), ids.size(0), dtable.size(1));
#endif
  cpu::embedding_backward(dout.f32(), ids.i32(), dtable.f32(), ids.size(0), dtable.size(1));
}

void timestep_embedding(const Tensor& t, const Tensor& out, double max_period) {
  const char* op = "timestep_embedding";
  opcheck::dtype(op, "t", t, DType::F32);
  opcheck::contiguous(op, "t", t);
  if (t.dim() != 1) opcheck::fail(op, opcheck::desc("t", t) + " must be [B]");
  opcheck::dtype(op, "out", out, DType::F32);
  opcheck::contiguous(op, "out", out);
  if (out.dim() != 2 || out.size(0) != t.size(0) || out.size(1) < 2)
    opcheck::fail(op, opcheck::desc("out", out) + " must be [B, dim >= 2] for " + opcheck::desc("t", t));
  if (!(max_period > 1.0)) opcheck::fail(op, "max_period " + std::to_string(max_period) + " must exceed 1");
  opcheck::same_device(op, t.device(), {{"out", &out}});
  if (!t.device().is_cpu()) {
#ifdef VT_CUDA
    return cuda::timestep_embedding(t.f32(), out.f32(), t.size(0), out.size(1), max_period);
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::timestep_embedding(t.f32(), out.f32(), t.size(0), out.size(1), max_period);
}

void sincos_pos_embed_2d(int64_t grid_h, int64_t grid_w, const Tensor& out) {
  const char* op = "sincos_pos_embed_2d";
  opcheck::dtype(op, "out", out, DType::F32);
  opcheck::contiguous(op, "out", out);
  if (out.dim() < 2 || out.size(-2) != grid_h * grid_w || out.numel() != grid_h * grid_w * out.size(-1))
    opcheck::fail(op, opcheck::desc("out", out) + " must be [grid_h*grid_w = " + std::to_string(grid_h * grid_w) +
                          ", D]");
  const int64_t D = out.size(-1);
  if (D % 4 != 0) opcheck::fail(op, opcheck::desc("out", out) + ": D = " + std::to_string(D) + " is not a multiple of 4");
  if (out.device().is_cpu()) {
    cpu::sincos_pos_embed_2d(out.f32(), grid_h, grid_w, D);
    return;
  }
  // A frozen table computed once: build it on the host and upload.
  Tensor host = Tensor::empty(out.shape());
  cpu::sincos_pos_embed_2d(host.f32(), grid_h, grid_w, D);
  Tensor dst = out;
  dst.copy_from(host);
}

}  // namespace vt
