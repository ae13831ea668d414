// Checkpoint directories (core/checkpoint_dir.h): atomic naming, listing,
// pruning, stale temporaries, optional EMA/optimizer parts and the errors
// that name the directory and file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/checkpoint_dir.h"
#include "core/safetensors.h"
#include "test_fs.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

CheckpointData small(int step) {
  CheckpointData d;
  d.model["w"] = Tensor::from_vector({1, 2, 3}, {3});
  d.optimizer["exp_avg.w"] = Tensor::zeros({3});
  d.state = {{"step", step}};
  return d;
}

TEST(CheckpointDir, SaveListPrune) {
  vt_test::TmpDir tmp;
  const std::string run = tmp.path();
  CheckpointData d = small(0);
  for (int s : {2, 4, 6, 8}) {
    d.state = {{"step", s}};
    save_checkpoint(run, s, d);
  }
  // A stale temporary directory (crash while writing) is not a checkpoint.
  fs::create_directories(run + "/.step_10.tmp.1");
  auto all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(latest_checkpoint(run).value(), run + "/step_8");
  prune_checkpoints(run, 2, /*keep_step=*/2);
  all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].first, 2);
  EXPECT_EQ(all[1].first, 6);
  EXPECT_EQ(all[2].first, 8);
  EXPECT_FALSE(fs::exists(run + "/.step_10.tmp.1"));
  CheckpointData r = load_checkpoint(run + "/step_6");
  EXPECT_EQ(r.state.at("step").get<int>(), 6);
  EXPECT_EQ(r.model.at("w").to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(r.optimizer.at("exp_avg.w").to_vector(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(r.ema.empty());
  EXPECT_FALSE(fs::exists(run + "/step_6/ema.safetensors"));  // no EMA: no file
  // Re-saving an existing step replaces it completely, leaving no temporaries.
  d.model["w"] = Tensor::from_vector({4, 5, 6}, {3});
  save_checkpoint(run, 6, d);
  EXPECT_EQ(load_checkpoint(run + "/step_6").model.at("w").to_vector(), (std::vector<float>{4, 5, 6}));
  for (const auto& e : fs::directory_iterator(run))
    EXPECT_NE(e.path().filename().string().rfind(".step_", 0), 0u) << e.path();
  EXPECT_THROW(load_checkpoint(run + "/step_7"), std::runtime_error);
  // keep_last 0 keeps only the best.
  prune_checkpoints(run, 0, 6);
  all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, 6);
  EXPECT_THROW(prune_checkpoints(run, -1, -1), std::invalid_argument);
}

// Rotation removes a checkpoint's own files only: samples drawn into
// step_<N>/ (dittrain sample's default out=) stay, with their directory,
// which is returned for the log and no longer listed as a checkpoint. A
// directory with nothing else in it goes. Re-saving a step keeps them too.
TEST(CheckpointDir, PruneKeepsFilesItDidNotWrite) {
  vt_test::TmpDir tmp;
  const std::string run = tmp.path();
  CheckpointData d = small(0);
  for (int s : {2, 4, 6}) save_checkpoint(run, s, d);
  std::ofstream(run + "/step_2/samples_16.npz") << "user bytes";
  fs::create_directories(run + "/step_2/grids");
  std::ofstream(run + "/step_4/notes.txt") << "more";
  save_checkpoint(run, 4, d);  // replacing step_4 carries notes.txt over
  EXPECT_TRUE(fs::exists(run + "/step_4/notes.txt"));
  const auto kept = prune_checkpoints(run, 1, -1);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].dir, run + "/step_2");
  EXPECT_EQ(kept[0].other, (std::vector<std::string>{"grids", "samples_16.npz"}));
  EXPECT_EQ(kept[1].dir, run + "/step_4");
  EXPECT_EQ(kept[1].other, (std::vector<std::string>{"notes.txt"}));
  EXPECT_EQ(vt_test::read_text(run + "/step_2/samples_16.npz"), "user bytes");
  EXPECT_TRUE(fs::is_directory(run + "/step_2/grids"));
  for (const std::string& f : checkpoint_file_names()) EXPECT_FALSE(fs::exists(run + "/step_2/" + f)) << f;
  const auto all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].first, 6);
  // Nothing but checkpoint files: the directory is removed.
  save_checkpoint(run, 8, d);
  EXPECT_TRUE(prune_checkpoints(run, 1, -1).empty());
  EXPECT_FALSE(fs::exists(run + "/step_6"));
}

TEST(CheckpointDir, ListingNeedsStepDigitsAndStateJson) {
  vt_test::TmpDir tmp;
  const std::string run = tmp.path();
  EXPECT_TRUE(list_checkpoints(run + "/absent").empty());
  EXPECT_FALSE(latest_checkpoint(run + "/absent").has_value());
  save_checkpoint(run, 3, small(3));
  save_checkpoint(run, 12, small(12));  // numeric, not lexicographic, order
  fs::create_directories(run + "/step_99");   // no state.json: not complete
  fs::create_directories(run + "/step_x1");   // not a step number
  fs::create_directories(run + "/step_");
  tmp.write("step_50", "a file, not a directory");
  const auto all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], (std::pair<int64_t, std::string>{3, run + "/step_3"}));
  EXPECT_EQ(all[1], (std::pair<int64_t, std::string>{12, run + "/step_12"}));
  EXPECT_EQ(latest_checkpoint(run).value(), run + "/step_12");
  // A stale temporary of another process id is removed on request only.
  fs::create_directories(run + "/.step_13.tmp.77");
  EXPECT_TRUE(fs::exists(run + "/.step_13.tmp.77"));
  remove_stale_checkpoint_temps(run);
  EXPECT_FALSE(fs::exists(run + "/.step_13.tmp.77"));
  EXPECT_TRUE(fs::exists(run + "/step_99"));  // not ours to delete
}

TEST(CheckpointDir, EmaAndOptimizerParts) {
  vt_test::TmpDir tmp;
  const std::string run = tmp.path();
  CheckpointData d = small(1);
  d.ema["w"] = Tensor::from_vector({7, 8, 9}, {3});
  const std::string dir = save_checkpoint(run, 1, d);
  EXPECT_EQ(dir, run + "/step_1");
  CheckpointLoadOptions need_ema;
  need_ema.require_ema = true;
  const CheckpointData r = load_checkpoint(dir, need_ema);
  EXPECT_EQ(r.ema.at("w").to_vector(), (std::vector<float>{7, 8, 9}));
  // The files are plain safetensors for torch ("format": "pt").
  SafetensorsMetadata meta;
  load_safetensors(dir + "/optimizer.safetensors", &meta);
  EXPECT_EQ(meta.at("format"), "pt");

  // Sampling/eval loads skip the optimizer, which need not exist then.
  fs::remove(dir + "/optimizer.safetensors");
  CheckpointLoadOptions no_opt;
  no_opt.optimizer = false;
  EXPECT_TRUE(load_checkpoint(dir, no_opt).optimizer.empty());
  const std::string msg = vt_test::error_of([&] { load_checkpoint(dir); });
  EXPECT_NE(msg.find(dir), std::string::npos) << msg;
  EXPECT_NE(msg.find("optimizer.safetensors"), std::string::npos) << msg;

  // A trainer that keeps an EMA requires its file.
  fs::remove(dir + "/ema.safetensors");
  EXPECT_TRUE(load_checkpoint(dir, no_opt).ema.empty());
  need_ema.optimizer = false;
  const std::string msg2 = vt_test::error_of([&] { load_checkpoint(dir, need_ema); });
  EXPECT_NE(msg2.find("missing ema.safetensors"), std::string::npos) << msg2;
}

TEST(CheckpointDir, CorruptPartsNameTheFile) {
  vt_test::TmpDir tmp;
  const std::string dir = save_checkpoint(tmp.path(), 4, small(4));
  std::ofstream(dir + "/state.json") << "{\"step\": ";
  std::string msg = vt_test::error_of([&] { load_checkpoint(dir); });
  EXPECT_NE(msg.find("state.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir), std::string::npos) << msg;

  save_checkpoint(tmp.path(), 4, small(4));
  std::ofstream(dir + "/model.safetensors") << "truncated";
  msg = vt_test::error_of([&] { load_checkpoint(dir); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir), std::string::npos) << msg;

  fs::remove(dir + "/model.safetensors");
  msg = vt_test::error_of([&] { load_checkpoint(dir); });
  EXPECT_NE(msg.find("missing model.safetensors"), std::string::npos) << msg;
  msg = vt_test::error_of([&] { load_checkpoint(tmp.file("nope")); });
  EXPECT_NE(msg.find("not a directory"), std::string::npos) << msg;
}

}  // namespace
}  // namespace vt
