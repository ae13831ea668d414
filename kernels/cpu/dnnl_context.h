// The process-wide oneDNN CPU engine and a per-thread stream, shared by the
// oneDNN-backed CPU ops (conv, pool). Internal to kernels/.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace vt {
namespace cpu {

dnnl::engine& dnnl_engine();
// oneDNN streams are not thread-safe; each calling thread gets its own.
dnnl::stream& dnnl_stream();

}  // namespace cpu
}  // namespace vt
