#include "train/update_step.h"

#include <cmath>

#include "train/run_dir.h"

namespace vt {

UpdateResult apply_update(ParamStore& params, OptimizerState& opt, NonFiniteGuard& guard, RunDirectory& run,
                          int64_t step, double loss, double lr, const UpdateOptions& o, const std::string& where) {
  UpdateResult r;
  r.grad_norm = o.clip_grad ? clip_grad_norm(params.grads(), *o.clip_grad) : grad_norm(params.grads());
  if (!std::isfinite(loss) || !std::isfinite(r.grad_norm)) {
    // Recorded before the policy decides (and perhaps stops the run).
    run.write_metrics(step, {{"loss", loss}, {"grad_norm", r.grad_norm}, {"lr", lr}},
                      {{"split", "train"}, {"event", "nonfinite"}}, "train");
  }
  if (!guard.check(step, loss, r.grad_norm, where, run.last_checkpoint())) return r;
  AdamWParams hp = o.adamw;
  hp.lr = lr;
  opt.adamw_step(hp);
  if (o.ema_decay) opt.update_ema(*o.ema_decay);
  r.applied = true;
  return r;
}

}  // namespace vt
