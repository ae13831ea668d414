// dittrain: DiT diffusion training and sampling (docs/design.md §6).
//
//   dittrain CONFIG.yaml [key.path=value ...]
//   dittrain --version   (core/build_info.h)
//   dittrain sample CONFIG.yaml ckpt=DIR [num_samples=N] [steps=S] [cfg_scale=G]
//            [seed=K] [sampler=ddpm|ddim] [eta=E] [batch=B] [weights=ema|model]
//            [out=PATH] [vae=PATH] [chunk=C] [overwrite=true] [key.path=value ...]
//   dittrain extract CONFIG.yaml images=DIR out=DIR [vae=PATH] [store=posterior|sample]
//            [hflip=true|false] [shard_size=N] [batch=N] [key.path=value ...]
//
// CONFIG is looked up as given, then in the installed configs
// (<prefix>/share/vtrain/configs), then in the source tree's configs/ (with
// or without .yaml; core/config_paths.h). `sample` takes sampler, steps, cfg_scale, seed, eta and
// batch from the config's sample.* keys unless given; it writes PATH.npz and
// PATH.png (default PATH: <ckpt>/samples_<N>_<sampler><steps>_cfg<G>_seed<K>);
// a latent model's samples are decoded to images with the VAE (vae=PATH or
// vae.path). It draws C samples at a time (chunk=C, default a multiple of
// the batch near 1024) into PATH.partial/, so a killed or stopped run
// continues when rerun with the same arguments (diffusion/dit_sample_files.h). `extract` encodes an ImageFolder to latent shards
// (diffusion/dit_vae_commands.h).
// Training runs under mpirun/srun as vtrain does (diffusion/dit_trainer.h);
// sample and extract refuse a multi-process launch.
// Exit statuses (core/exit_status.h, as vtrain): 0 done, 1 runtime error
// (data, checkpoint, non-finite loss), 2 usage or configuration error,
// 3 stopped by a stop signal after writing a checkpoint, or for `sample` its
//   finished chunks (resumable),
// 4 distributed timeout, 5 a checkpoint could not be written (disk full).
//
// OpenMP wait policy: unless OMP_WAIT_POLICY is set, dittrain re-executes
// itself once with OMP_WAIT_POLICY=passive (core/omp_policy.h; 11.6 -> 45
// img/s on a loaded 2-core machine); OMP_WAIT_POLICY=active keeps spinning.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
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
#include "core/omp_policy.h"
#include "diffusion/dit_sample_args.h"
#include "diffusion/dit_sample_files.h"
#include "diffusion/dit_train_config.h"
#include "diffusion/dit_trainer.h"
#include "diffusion/dit_vae_commands.h"

#ifndef VT_CONFIGS_DIR
#define VT_CONFIGS_DIR "configs"
#endif

namespace {

void usage(std::ostream& os) {
  std::string dirs;
  for (const auto& d : vt::config_search_dirs(VT_CONFIGS_DIR)) dirs += (dirs.empty() ? "" : ", ") + d;
  os << "usage: dittrain CONFIG.yaml [key.path=value ...]\n"
        "       dittrain --version   (version, git commit, build type, CUDA / cuDNN / NCCL versions)\n"
        "       dittrain sample CONFIG.yaml ckpt=DIR [num_samples=N] [steps=S] [cfg_scale=G] [seed=K]\n"
        "                [sampler=ddpm|ddim] [eta=E] [batch=B] [weights=ema|model] [out=PATH] [vae=PATH]\n"
        "                [chunk=C] [overwrite=true] [key.path=value ...]\n"
        "       dittrain extract CONFIG.yaml images=DIR out=DIR [vae=PATH] [store=posterior|sample]\n"
        "                [hflip=true|false] [shard_size=N] [batch=N] [key.path=value ...]\n"
        "  CONFIG: a file, or a name in "
     << dirs << "\n"
        "  sample: ckpt=DIR: a checkpoint step_<N>/ or a run directory (its newest complete checkpoint);\n"
        "          sampler, steps, cfg_scale, seed, eta, batch default to the config's sample.* keys;\n"
        "          num_samples defaults to 64 (at most "
     << vt::kMaxSamples << ");\n"
        "          chunk: samples per resumable chunk in PATH.partial/ (a multiple of batch; default: the\n"
        "          largest up to 1024); a killed or stopped run continues when rerun with the same arguments\n"
        "          out=PATH: PATH.npz and PATH.png (PATH.npz given: the same; a directory: the default name\n"
        "          inside it); PATH.npz.manifest.json records what made it: a rerun with the same arguments\n"
        "          is done (nothing drawn), other arguments are refused naming the key and both values unless\n"
        "          overwrite=true; one sampler per out= at a time\n"
        "\nconfig keys:\n"
     << vt::dittrain_schema().help_text();
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    usage(std::cout);
    return 0;
  }
  if (!args.empty() && vt::is_version_flag(args[0])) {
    std::cout << vt::version_text("dittrain");
    return 0;
  }
  const bool sample = !args.empty() && args[0] == "sample";
  const bool extract = !args.empty() && args[0] == "extract";
  if (sample || extract) args.erase(args.begin());
  if ((sample || extract) && !args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    usage(std::cout);
    return 0;
  }
  // Training is data parallel (diffusion/dit_trainer.h); sample and extract
  // would have every rank write the same files.
  if ((sample || extract) && vt::dist().world() > 1)
    throw vt::ConfigError(std::string("dittrain ") + (sample ? "sample" : "extract") + " runs as one process (launched as " +
                          std::to_string(vt::dist().world()) + " MPI processes); only training is data parallel");
  if (args.empty()) {
    usage(std::cerr);
    return 2;
  }
  // `dittrain smaple CONFIG ...`: the command, not the next word (core/config_command.h).
  if (!sample && !extract)
    if (const std::string typo = vt::mistyped_command(args[0], {args.begin() + 1, args.end()}, {"sample", "extract"},
                                                      vt::config_search_dirs(VT_CONFIGS_DIR));
        !typo.empty()) {
      std::fprintf(stderr, "dittrain: %s\n", typo.c_str());
      return 2;
    }
  auto [opts, overrides] = vt::split_command_args(
      {args.begin() + 1, args.end()},
      [&](const std::string& k) {
        return (sample && (vt::dit_sample_arg_keys().count(k) > 0 || k == "vae")) ||
               (extract && vt::dit_extract_arg_keys().count(k) > 0);
      },
      sample ? "sample" : "extract");
  // Sampling never trains: the run's resume setting does not matter.
  if (sample || extract) overrides.push_back("resume=auto");
  const std::string config_path = vt::find_config(args[0], vt::config_search_dirs(VT_CONFIGS_DIR));
  const vt::Config cfg = vt::Config::load(config_path, vt::dittrain_schema(), overrides);
  const vt::DitTrainConfig tc = vt::dit_train_config(cfg, config_path);
  if (extract) {
    vt::run_dit_extract(tc, opts);
    return 0;
  }
  if (!sample) {
    // All setup checks run in the constructor, before the run directory exists.
    vt::DitTrainer trainer(tc);
    trainer.train();
    std::printf("dittrain: %s done at step %lld\n", trainer.run_dir().c_str(), static_cast<long long>(trainer.step()));
    return 0;
  }
  const std::optional<vt::AutoencoderKL> vae = vt::dit_sample_vae(tc, opts);  // fails before any sampling
  const std::string vae_source = vae ? vt::dit_vae_path(tc, opts) : "";
  opts.erase("vae");
  const vt::DitSampleArgs sa = vt::parse_dit_sample_args(opts, tc);
  vt::SampleRequest req;
  req.ckpt = sa.ckpt, req.out = sa.out, req.num_samples = sa.num_samples, req.options = sa.options;
  req.use_ema = sa.use_ema, req.chunk = sa.chunk, req.overwrite = sa.overwrite;
  req.vae = vae ? &*vae : nullptr, req.vae_source = vae_source;
  vt::dit_sample_to_files(tc, req);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  vt::reexec_with_passive_omp_wait(argv);
  std::unique_ptr<vt::DistSession> session;
  try {
    session = std::make_unique<vt::DistSession>(&argc, &argv);
    return run(argc, argv);
  } catch (const vt::StopRequested&) {
    return vt::kExitStopped;  // every rank agreed on the stop; logged by the trainer
  } catch (const vt::ConfigError& e) {
    std::fprintf(stderr, "dittrain: config error: %s\n", e.what());
    return vt::dist_fail(2);
  } catch (const vt::CheckpointWriteError& e) {
    std::fprintf(stderr, "dittrain: error%s: %s\n", vt::dist_rank_tag().c_str(), e.what());
    return vt::dist_fail(vt::kExitCheckpointWrite);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dittrain: error: %s\n", e.what());
    return vt::dist_fail(1);
  }
}
