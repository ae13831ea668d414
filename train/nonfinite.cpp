#include "train/nonfinite.h"

#include <cmath>

#include "core/log.h"

namespace vt {

bool NonFiniteGuard::check(int64_t step, double loss, double grad_norm, const std::string& where,
                           const std::string& last_checkpoint) {
  if (std::isfinite(loss) && std::isfinite(grad_norm)) {
    consecutive_ = 0;
    return true;
  }
  ++consecutive_;
  const std::string what = "non-finite training loss " + std::to_string(loss) + " / gradient norm " +
                           std::to_string(grad_norm) + " at step " + std::to_string(step) +
                           (where.empty() ? "" : " (" + where + ")");
  if (consecutive_ > max_)
    throw NonFiniteLoss(what + "; stopping after " + std::to_string(consecutive_) +
                        " consecutive non-finite step(s) (train.max_nonfinite = " + std::to_string(max_) +
                        "), last good checkpoint: " + (last_checkpoint.empty() ? "none" : last_checkpoint));
  ++total_;
  log().warn("{}; update skipped ({} of at most {} in a row, train.max_nonfinite)", what, consecutive_, max_);
  return false;
}

}  // namespace vt
