#include "core/omp_policy.h"

#include <stdlib.h>
#include <unistd.h>

namespace vt {

void reexec_with_passive_omp_wait(char** argv) {
  if (getenv("OMP_WAIT_POLICY")) return;
  // Set before exec: a second run finds it and returns, so this never loops.
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace vt
