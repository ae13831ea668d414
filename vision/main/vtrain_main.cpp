// vtrain CONFIG.yaml [key.path=value ...]   (docs/design.md §6)
// vtrain --version   (core/build_info.h)
// vtrain pack CONFIG.yaml out=DIR [split=train|val] [max_side=N] [quality=Q]
//        [shard_size=N] [key.path=value ...]   (vision/pack_command.h)
//
// CONFIG is looked up as given, then in the installed configs
// (<prefix>/share/vtrain/configs), then in the source tree's configs/.
//
// Exit statuses (core/exit_status.h): 0 done, 1 runtime error (data,
// checkpoint, non-finite loss), 2 usage or configuration error, 3 stopped by
// a stop signal after writing a checkpoint (resumable), 4 distributed
// timeout, 5 a checkpoint could not be written (disk full, quota).
//
// Data parallel: `mpirun -np N vtrain CONFIG` or `srun vtrain CONFIG`
// (core/dist.h); train.batch_size stays the global batch. Any rank's error
// ends every rank (MPI_Abort) with that exit code.
//
// OpenMP wait policy: unless OMP_WAIT_POLICY is set, vtrain re-executes
// itself once with OMP_WAIT_POLICY=passive (core/omp_policy.h); set
// OMP_WAIT_POLICY=active to keep spinning on a dedicated machine.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/build_info.h"
#include "core/config.h"
#include "core/config_command.h"
#include "core/config_paths.h"
#include "core/checkpoint_dir.h"
#include "core/dist.h"
#include "core/exit_status.h"
#include "core/stop_request.h"
#include "core/log.h"
#include "core/omp_policy.h"
#include "vision/pack_command.h"
#include "vision/trainer.h"

#ifndef VT_CONFIGS_DIR
#define VT_CONFIGS_DIR "configs"
#endif

namespace {

void usage(std::FILE* f, const std::vector<std::string>& configs_dirs) {
  std::string dirs;
  for (const auto& d : configs_dirs) dirs += (dirs.empty() ? "" : ", ") + d;
  std::fprintf(f,
               "usage: vtrain CONFIG.yaml [key.path=value ...]\n"
               "       vtrain --version   (version, git commit, build type, CUDA / cuDNN / NCCL versions)\n"
               "       vtrain pack CONFIG.yaml out=DIR [split=train|val] [max_side=N] [quality=Q] [shard_size=N]\n"
               "              [key.path=value ...]\n"
               "  CONFIG: a file, or a name in %s\n"
               "  pack: writes the config's data.train_split and data.val_split (split= one of them) as\n"
               "        WebDataset tar shards with an index into DIR/<split folder>/, for data.root=DIR\n"
               "        data.format=shards; images with a longer side above max_side are re-encoded at\n"
               "        quality Q (default 90), others stored byte for byte; shard_size images per shard\n"
               "        (default 5000)\n\nkeys:\n%s",
               dirs.c_str(), vt::vtrain_schema().help_text().c_str());
}

// `vtrain pack ...`: one process; exit 0 done, 1 data error, 2 usage or config error.
int pack_main(const std::vector<std::string>& args, const std::vector<std::string>& configs_dirs) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    usage(args.empty() ? stderr : stdout, configs_dirs);
    return args.empty() ? 2 : 0;
  }
  try {
    if (vt::dist().world() > 1)
      throw vt::ConfigError("vtrain pack runs as one process (launched as " + std::to_string(vt::dist().world()) +
                            " MPI processes)");
    auto [opts, overrides] = vt::split_command_args(
        {args.begin() + 1, args.end()}, [](const std::string& k) { return vt::pack_arg_keys().count(k) > 0; }, "pack");
    const std::string path = vt::find_config(args[0], configs_dirs);
    const vt::Config cfg = vt::Config::load(path, vt::vtrain_schema(), overrides);
    vt::run_pack(cfg, path, opts);
    return 0;
  } catch (const vt::ConfigError& e) {
    std::fprintf(stderr, "vtrain: config error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtrain: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  vt::reexec_with_passive_omp_wait(argv);
  const std::vector<std::string> configs_dirs = vt::config_search_dirs(VT_CONFIGS_DIR);
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout, configs_dirs);
    return argc < 2 ? 2 : 0;
  }
  if (vt::is_version_flag(argv[1])) {
    std::fputs(vt::version_text("vtrain").c_str(), stdout);
    return 0;
  }
  std::unique_ptr<vt::DistSession> session;
  try {
    session = std::make_unique<vt::DistSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtrain: %s\n", e.what());
    return 2;
  }
  if (!std::strcmp(argv[1], "pack")) return pack_main(std::vector<std::string>(argv + 2, argv + argc), configs_dirs);
  std::vector<std::string> overrides(argv + 2, argv + argc);
  // `vtrain pakc CONFIG`: the command, not the next word (core/config_command.h).
  if (const std::string typo = vt::mistyped_command(argv[1], overrides, {"pack"}, configs_dirs); !typo.empty()) {
    std::fprintf(stderr, "vtrain: %s\n", typo.c_str());
    return vt::dist_fail(2);
  }
  for (const std::string& ov : overrides)
    if (ov.find('=') == std::string::npos) {
      std::fprintf(stderr, "vtrain: argument '%s' is not key.path=value\n", ov.c_str());
      return 2;
    }
  std::string path;
  vt::Config cfg;
  try {
    path = vt::find_config(argv[1], configs_dirs);
    cfg = vt::Config::load(path, vt::vtrain_schema(), overrides);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtrain: config error: %s\n", e.what());
    return vt::dist_fail(2);
  }
  try {
    vt::Trainer trainer(cfg, path);
    vt::TrainSummary s = trainer.run();
    const vt::TrainOptions& o = trainer.options();
    if (!vt::dist().is_root()) return 0;
    std::printf("vtrain: %s done after %lld steps: test top-1 %.2f%% (top-5 %.2f%%)", s.run_dir.c_str(),
                static_cast<long long>(s.steps), s.final_eval.top1, s.final_eval.top5);
    // The EMA figure only when it was evaluated (eval.ema and train.ema).
    if (o.ema && o.eval_ema) std::printf(", EMA top-1 %.2f%%", s.final_eval_ema.top1);
    std::printf(", best top-1 %.2f%%\n", s.best_top1);
    return 0;
  } catch (const vt::StopRequested&) {
    return vt::kExitStopped;  // every rank agreed on the stop; logged by the trainer
  } catch (const vt::ConfigError& e) {
    std::fprintf(stderr, "vtrain: config error%s: %s\n", vt::dist_rank_tag().c_str(), e.what());
    return vt::dist_fail(2);
  } catch (const vt::CheckpointWriteError& e) {
    std::fprintf(stderr, "vtrain: error%s: %s\n", vt::dist_rank_tag().c_str(), e.what());
    return vt::dist_fail(vt::kExitCheckpointWrite);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtrain: error%s: %s\n", vt::dist_rank_tag().c_str(), e.what());
    return vt::dist_fail(1);
  }
}
