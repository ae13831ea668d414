#include "train/cluster_keys.h"

#include <limits>
#include <string>

#include "core/config_checks.h"
#include "core/stop_request.h"

namespace vt {

void declare_cluster_keys(ConfigSchema& schema) {
  schema
      .optional("run.stop_signals", ConfigType::StringList, "[SIGTERM, SIGINT, SIGUSR1]",
                "signals that stop the run after the current step with a checkpoint (exit status 3; resume: auto "
                "continues); [] keeps their default action")
      .optional("dist.timeout_s", ConfigType::Float, "600",
                "seconds a collective may wait for the other ranks before the job is aborted (exit status 4; 0: "
                "no timeout)")
      .optional("ckpt.on_write_error", ConfigType::String, "stop",
                "a checkpoint that cannot be written (disk full, quota, I/O error): stop (exit status 5) | retry "
                "(at the next checkpoint)");
}

ClusterOptions cluster_options(const Config& cfg) {
  ClusterOptions o;
  for (const std::string& name : cfg.get<std::vector<std::string>>("run.stop_signals")) {
    const int s = signal_number(name);
    if (s < 0)
      bad_value(cfg, "run.stop_signals",
                "unknown signal '" + name + "' (expected SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGCONT, "
                "SIGALRM or SIGXCPU)");
    o.stop_signals.push_back(s);
  }
  o.dist_timeout_s = real_in(cfg, "dist.timeout_s", 0, std::numeric_limits<double>::infinity());
  const std::string w = cfg.get<std::string>("ckpt.on_write_error");
  if (w != "stop" && w != "retry") bad_value(cfg, "ckpt.on_write_error", "expected stop | retry, got '" + w + "'");
  o.retry_checkpoint_write = w == "retry";
  return o;
}

}  // namespace vt
