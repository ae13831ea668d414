// Workspace tensors of the modules (saved activations, scratch gradients):
// planned once per batch shape (docs/design.md §2) on the device of the
// model's ParamStore, so the same module code runs a CPU or a GPU step and a
// steady-state step allocates nothing.
#pragma once
#include "backbone/param_store.h"
#include "core/tensor.h"

namespace vt {

// (Re)allocates t unless it already is a `dtype` tensor of shape s on `device`.
inline void ensure_workspace(Tensor& t, const Shape& s, Device device, DType dtype = DType::F32) {
  if (!t.defined() || t.shape() != s || t.device() != device || t.dtype() != dtype)
    t = Tensor::empty(s, dtype, device);
}

// The dtype of the activations inside a sublayer F (what F reads, writes and
// saves for its backward): BF16 when the store has the bf16 weight copy
// (precision: bf16, CUDA only), else F32. The residual streams x and y, the
// norm statistics and the gradients into the streams stay F32 either way
// (README, "what is kept in which precision").
inline DType activation_dtype(const ParamStore& store) {
  return store.has_bf16_copy() ? DType::BF16 : DType::F32;
}

}  // namespace vt
