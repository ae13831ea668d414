// The keys for running on a cluster that vtrain and dittrain share, one
// declaration and one parser (docs/cluster.md):
//   run.stop_signals    [SIGTERM, SIGINT, SIGUSR1]: signals that request a
//                       stop with a checkpoint (core/stop_request.h); names
//                       with or without "SIG"; [] keeps the default actions
//   dist.timeout_s      600: seconds a collective may take before the job is
//                       aborted (core/dist_watchdog.h); 0: no timeout
//   ckpt.on_write_error stop | retry: a checkpoint that cannot be written
//                       (disk full, quota, I/O error) stops the run with
//                       kExitCheckpointWrite, or is retried at the next
//                       checkpoint (train/run_dir.h)
// All three are run-control keys (core/run_control.h): a resumed run may
// change them.
#pragma once
#include <vector>

#include "core/config.h"

namespace vt {

struct ClusterOptions {
  std::vector<int> stop_signals;  // signal numbers
  double dist_timeout_s = 600;
  bool retry_checkpoint_write = false;
};

// Declares the three keys in a program's schema.
void declare_cluster_keys(ConfigSchema& schema);
// Reads them; an unknown or uncatchable signal name, a negative timeout or
// another on_write_error is a ConfigError naming the key and the value.
ClusterOptions cluster_options(const Config& cfg);

}  // namespace vt
