// Running on a cluster (docs/cluster.md): the shared keys and their errors,
// signal names, and a checkpoint write that fails under a file-size limit
// with ckpt.on_write_error stop and retry. The end-to-end checks (signals,
// collective timeout, the programs' exit statuses) are tests/faults/*.sh.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <string>

#include "core/atomic_file.h"
#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "core/stop_request.h"
#include "test_fs.h"
#include "train/cluster_keys.h"
#include "train/run_dir.h"

namespace fs = std::filesystem;
using namespace vt;

namespace {

Config cluster_config(const std::string& yaml) {
  ConfigSchema schema;
  declare_cluster_keys(schema);
  return Config::parse(yaml, schema);
}

std::string config_error(const std::string& yaml) {
  try {
    cluster_options(cluster_config(yaml));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A soft RLIMIT_FSIZE of `bytes` while it lives (SIGXFSZ ignored, as
// install_stop_signals leaves it in the trainers).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old_;
    r.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &r);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

CheckpointData checkpoint_of(int64_t n, float value) {
  CheckpointData d;
  Tensor w = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) w.f32()[i] = value;
  d.model["w"] = w;
  d.optimizer["exp_avg.w"] = w.clone();
  d.state = {{"step", 1}};
  return d;
}

}  // namespace

TEST(ClusterKeys, DefaultsAndNames) {
  const ClusterOptions o = cluster_options(cluster_config(""));
  EXPECT_EQ(o.stop_signals, (std::vector<int>{SIGTERM, SIGINT, SIGUSR1}));
  EXPECT_EQ(o.dist_timeout_s, 600);
  EXPECT_FALSE(o.retry_checkpoint_write);
  const ClusterOptions p = cluster_options(
      cluster_config("run:\n  stop_signals: [usr2, SIGHUP]\ndist:\n  timeout_s: 0\nckpt:\n  on_write_error: retry\n"));
  EXPECT_EQ(p.stop_signals, (std::vector<int>{SIGUSR2, SIGHUP}));
  EXPECT_EQ(p.dist_timeout_s, 0);
  EXPECT_TRUE(p.retry_checkpoint_write);
  EXPECT_TRUE(cluster_options(cluster_config("run:\n  stop_signals: []\n")).stop_signals.empty());
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(signal_number("term"), SIGTERM);
  EXPECT_EQ(signal_number("SIGKILL"), -1);  // cannot be caught: not a stop signal
}

TEST(ClusterKeys, BadValuesNameTheKeyAndTheValue) {
  std::string e = config_error("run:\n  stop_signals: [SIGTERM, SIGKILL]\n");
  EXPECT_NE(e.find("run.stop_signals"), std::string::npos) << e;
  EXPECT_NE(e.find("'SIGKILL'"), std::string::npos) << e;
  e = config_error("dist:\n  timeout_s: -1\n");
  EXPECT_NE(e.find("dist.timeout_s"), std::string::npos) << e;
  e = config_error("ckpt:\n  on_write_error: ignore\n");
  EXPECT_NE(e.find("ckpt.on_write_error"), std::string::npos) << e;
  EXPECT_NE(e.find("'ignore'"), std::string::npos) << e;
}

// 64 Ki floats (256 KiB per file) under a 64 KiB limit: every write fails.
TEST(CheckpointWrite, AFailedWriteKeepsThePreviousCheckpointAndNamesTheBytes) {
  vt_test::TmpDir tmp;
  RunDirectory run(tmp.path(), "r", "never");  // save() alone: no log or metrics files needed
  const CheckpointData small = checkpoint_of(16, 1.0f), big = checkpoint_of(65536, 2.0f);
  const std::string first = run.save(1, small, 0);
  const std::string model_before = read_file(first + "/model.safetensors");
  {
    FileSizeLimit limit(64 << 10);
    try {
      run.save(2, big, 0);
      FAIL() << "the write under the limit succeeded";
    } catch (const CheckpointWriteError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("checkpoint '" + tmp.file("r/step_2") + "': cannot write"), std::string::npos) << m;
      EXPECT_NE(m.find("File too large"), std::string::npos) << m;
      EXPECT_NE(m.find("the newest complete checkpoint is " + first), std::string::npos) << m;
      // Two files of 65536 floats, plus headers and state.json.
      EXPECT_GE(e.bytes_needed(), 2u * 65536 * 4);
      EXPECT_LT(e.bytes_needed(), 2u * 65536 * 4 + 4096);
      EXPECT_NE(m.find("needs " + std::to_string(e.bytes_needed()) + " bytes"), std::string::npos) << m;
    }
    // retry: logged, the previous checkpoint stays the newest.
    run.set_retry_checkpoint_write(true);
    EXPECT_EQ(run.save(3, big, 0), first);
    EXPECT_EQ(run.last_checkpoint(), first);
  }
  EXPECT_EQ(read_file(first + "/model.safetensors"), model_before);
  EXPECT_FALSE(fs::exists(tmp.file("r/step_2")));
  EXPECT_FALSE(fs::exists(tmp.file("r/step_3")));
  for (const auto& e : fs::directory_iterator(tmp.file("r")))
    EXPECT_NE(e.path().filename().string().rfind(".step_", 0), 0u) << "partial checkpoint left: " << e.path();
  // The run's last save failed: ending the run is that error.
  EXPECT_THROW(run.throw_if_write_failed(), CheckpointWriteError);
  EXPECT_NO_THROW(run.throw_if_write_failed());  // reported once
}

TEST(CheckpointWrite, ARetriedWriteThatSucceedsClearsTheFailure) {
  vt_test::TmpDir tmp;
  RunDirectory run(tmp.path(), "r", "never");  // save() alone: no log or metrics files needed
  run.set_retry_checkpoint_write(true);
  const CheckpointData big = checkpoint_of(65536, 2.0f);
  {
    FileSizeLimit limit(64 << 10);
    EXPECT_EQ(run.save(2, big, 0), "");
  }
  EXPECT_EQ(run.save(4, big, 0), tmp.file("r/step_4"));
  EXPECT_NO_THROW(run.throw_if_write_failed());
  EXPECT_EQ(load_checkpoint(tmp.file("r/step_4")).model.at("w").f32()[65535], 2.0f);
}
