#include "kernels/cpu/dnnl_context.h"

namespace vt {
namespace cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace cpu
}  // namespace vt
