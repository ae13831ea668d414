// DeiT's learning-rate curve (timm 0.3.2 CosineLRScheduler with
// warmup_t = warmup_epochs, t_initial = epochs, lr_min = min_lr,
// warmup_lr_init = warmup_lr, cycle_limit 1), docs/recipes.md §7:
//   t < W:          warmup_lr + t (base - warmup_lr) / W
//   W <= t < E:     min_lr + 0.5 (base - min_lr) (1 + cos(pi t / E))
//   t >= E:         min_lr
// t is in epochs. vtrain evaluates it per optimizer step at
// t = epoch + fraction of the epoch done; with deit_epoch_steps (DeiT's own
// train loop, which calls scheduler.step(epoch) after each epoch) epoch e
// runs at lr(max(e - 1, 0)) for the whole epoch.
#pragma once
#include <cstdint>

namespace vt {

struct LrSchedule {
  double base_lr = 5e-4;
  double warmup_lr = 1e-6;
  double min_lr = 1e-5;
  double warmup_epochs = 5;
  double epochs = 300;
  bool deit_epoch_steps = false;
};

double cosine_lr(const LrSchedule& s, double t);
// lr of optimizer step `step_in_epoch` (0-based) of `steps_per_epoch` in `epoch`.
double lr_at(const LrSchedule& s, int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch);

}  // namespace vt
