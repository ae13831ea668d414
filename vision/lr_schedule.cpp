#include "vision/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace vt {

double cosine_lr(const LrSchedule& s, double t) {
  if (t < s.warmup_epochs) return s.warmup_lr + t * (s.base_lr - s.warmup_lr) / s.warmup_epochs;
  if (t < s.epochs) return s.min_lr + 0.5 * (s.base_lr - s.min_lr) * (1.0 + std::cos(M_PI * t / s.epochs));
  return s.min_lr;
}

double lr_at(const LrSchedule& s, int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) {
  if (s.deit_epoch_steps) return cosine_lr(s, static_cast<double>(std::max<int64_t>(epoch - 1, 0)));
  const double frac = steps_per_epoch > 0 ? static_cast<double>(step_in_epoch) / static_cast<double>(steps_per_epoch) : 0.0;
  return cosine_lr(s, static_cast<double>(epoch) + frac);
}

}  // namespace vt
