// Workspace tensors of the modules (saved activations, scratch gradients):
// planned once per batch shape (docs/design.md §2) on the device of the
// model's ParamStore, so the same module code runs a CPU or a GPU step and a
// steady-state step allocates nothing.
#pragma once
#include "core/tensor.h"

namespace vt {

// (Re)allocates t unless it already is a `dtype` tensor of shape s on `device`.
inline void ensure_workspace(Tensor& t, const Shape& s, Device device, DType dtype = DType::F32) {
  if (!t.defined() || t.shape() != s || t.device() != device || t.dtype() != dtype)
    t = Tensor::empty(s, dtype, device);
}

}  // namespace vt
