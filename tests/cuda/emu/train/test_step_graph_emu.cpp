// CUDA Graph steps (train/step_graph.h, LoopOptions::cuda_graph) on
// emulated CUDA: a scripted task whose step splits into a host part (this
// step's gradient pattern and loss written into fixed device buffers) and a
// device part (zero_grad, a kernel that forms the gradients from those
// buffers, a device copy of the loss) runs under TrainLoop with graphs on and
// off. The emulator records the captured launches and replays them, so the
// graph run must give the eager run's parameters, AdamW moments, EMA, norms
// and losses bit for bit; the learning rate changes every step (1e-2 / s),
// and a run whose rate stays at the capturing step's value ends elsewhere,
// so a rate baked into the graph would fail the comparison. Also: the graph
// is launched from the second step of each TrainLoop::run on; a step the task
// marks not replayable runs eagerly and the graph is captured again after
// it; a host read inside the step makes the capture fail and the loop fall
// back to eager steps with the same results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/config.h"
#include "../emu_trace.h"
#include "kernels/elementwise.h"
#include "test_fs.h"
#include "train/loop.h"
#include "train/run_dir.h"
#include "train_emu_util.h"

namespace vt {
namespace {

struct SplitTask : StepTask {
  ParamStore& ps;
  Tensor in, loss_in, scalars;    // fixed device buffers
  std::vector<int64_t> odd_steps;  // steps prepare_step marks not replayable
  bool host_read = false;          // device_step reads a tensor back (cannot be captured)
  double fixed_lr_from = 0;        // > 0: from this step on the rate stays at its value
  struct Seen {
    int64_t step;
    double loss, grad_norm;
  };
  std::vector<Seen> seen;
  explicit SplitTask(ParamStore& p) : ps(p) {
    in = Tensor::zeros({ps.numel()}, DType::F32, ps.device());
    loss_in = Tensor::zeros({1}, DType::F32, ps.device());
    scalars = Tensor::zeros({1}, DType::F32, ps.device());
  }
  double lr_of(int64_t s) const {
    if (fixed_lr_from > 0 && s >= fixed_lr_from) return 1e-2 / fixed_lr_from;
    return 1e-2 / static_cast<double>(s);
  }
  bool splits_step() const override { return true; }
  Output prepare_step(int64_t s, std::string* why) override {
    const int64_t n = ps.numel();
    Tensor g = Tensor::empty({n});
    for (int64_t i = 0; i < n; ++i) g.f32()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.5 * s) / s);
    in.copy_from(g);
    loss_in.copy_from(Tensor::from_vector({static_cast<float>(1.0 + 0.1 * s)}, {1}));
    if (std::find(odd_steps.begin(), odd_steps.end(), s) != odd_steps.end()) *why = "test: a batch of another shape";
    Output out;
    out.loss = NAN;
    out.lr = lr_of(s);
    out.where = "batch " + std::to_string(s);
    out.scalars = scalars;
    return out;
  }
  void device_step() override {
    ps.zero_grad();
    Tensor grads = ps.grads();
    scale(in, 2.0f, grads);  // a kernel launch
    scalars.copy_from(loss_in);  // a device copy
    if (host_read) (void)in.to(Device::cpu());
  }
  Output forward_backward(int64_t s) override {  // the eager step: the same three parts
    std::string why;
    Output out = prepare_step(s, &why);
    device_step();
    return out;
  }
  void after_update(int64_t s, const Output& out, const UpdateResult& u) override {
    seen.push_back({s, out.loss, u.grad_norm});
  }
  std::vector<std::pair<std::string, double>> log_scalars(int64_t) override { return {}; }
  void save(const std::string&) override {}
};

struct GraphRun {
  ParamStore ps;
  std::unique_ptr<OptimizerState> opt;
  NonFiniteGuard guard{0};
  std::unique_ptr<RunDirectory> dir;
  std::unique_ptr<TrainLoop> loop;
  std::unique_ptr<SplitTask> task;
  GraphRun(const std::string& root, const std::string& name, bool graph) {
    ps.add("w", {40, 8}, ParamInit::normal(0.5f), true);
    ps.add("b", {8}, ParamInit::constant(0.1f), false);
    ps.finalize();
    ps.init(3);
    ps.to(Device::cuda(0));
    opt = std::make_unique<OptimizerState>(ps, true);
    dir = std::make_unique<RunDirectory>(root, name, "never");
    ConfigSchema schema;
    schema.optional("name", ConfigType::String, name, "");
    dir->open(Config::parse("", schema), false, 0);
    LoopOptions lo;
    lo.log_every_steps = 4;
    lo.update.clip_grad = 1.0;
    lo.update.adamw.weight_decay = 0.05;
    lo.update.ema_decay = 0.9f;
    lo.cuda_graph = graph;
    loop = std::make_unique<TrainLoop>(ps, *opt, guard, *dir, lo);
    task = std::make_unique<SplitTask>(ps);
  }
  std::vector<float> host(const Tensor& t) const { return t.to(Device::cpu()).to_vector(); }
};

// Bit for bit: the same kernels with the same arguments in the same order.
void expect_identical(GraphRun& a, GraphRun& b, const std::string& what) {
  for (auto [name, ta, tb] : {std::tuple{"weights", a.ps.weights(), b.ps.weights()},
                              std::tuple{"exp_avg", a.opt->exp_avg(), b.opt->exp_avg()},
                              std::tuple{"exp_avg_sq", a.opt->exp_avg_sq(), b.opt->exp_avg_sq()},
                              std::tuple{"ema", a.opt->ema(), b.opt->ema()}}) {
    const std::vector<float> va = a.host(ta), vb = b.host(tb);
    ASSERT_EQ(va.size(), vb.size());
    EXPECT_EQ(std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)), 0) << what << ": " << name << " differ";
  }
  EXPECT_EQ(a.opt->steps(), b.opt->steps()) << what;
  ASSERT_EQ(a.task->seen.size(), b.task->seen.size()) << what;
  for (size_t i = 0; i < a.task->seen.size(); ++i) {
    EXPECT_EQ(a.task->seen[i].step, b.task->seen[i].step) << what;
    EXPECT_EQ(a.task->seen[i].loss, b.task->seen[i].loss) << what << " step " << a.task->seen[i].step;
    EXPECT_EQ(a.task->seen[i].grad_norm, b.task->seen[i].grad_norm) << what << " step " << a.task->seen[i].step;
  }
}

class StepGraphEmu : public ::testing::Test {
 protected:
  std::string root() const { return tmp_.path(); }
  vt_test::TmpDir tmp_;
};

TEST_F(StepGraphEmu, ReplaysGiveTheEagerStepsBitForBit) {
  GraphRun eager(root(), "eager", false), graph(root(), "graph", true);
  size_t launches = vt_emu_graph_launches();
  eager.loop->run(*eager.task, 0, 10);
  EXPECT_EQ(vt_emu_graph_launches() - launches, 0u);
  EXPECT_EQ(eager.loop->graph_replays(), 0);
  launches = vt_emu_graph_launches();
  graph.loop->run(*graph.task, 0, 10);
  // Step 1 warms up eagerly; step 2 is captured and launched, 3..10 replay.
  EXPECT_EQ(graph.loop->graph_eager_steps(), 1);
  EXPECT_EQ(graph.loop->graph_replays(), 9);
  EXPECT_EQ(vt_emu_graph_launches() - launches, 9u);
  ASSERT_EQ(graph.task->seen.size(), 10u);
  EXPECT_EQ(graph.task->seen[9].loss, static_cast<double>(static_cast<float>(1.0 + 0.1 * 10)));
  expect_identical(graph, eager, "graph vs eager");
}

// The comparison above can fail: had the graph kept the capturing step's
// learning rate (step 2's, 5e-3), the run would end where this one does.
TEST_F(StepGraphEmu, ARateBakedIntoTheGraphWouldShowUp) {
  GraphRun graph(root(), "graph", true), baked(root(), "baked", false);
  baked.task->fixed_lr_from = 2;
  graph.loop->run(*graph.task, 0, 10);
  baked.loop->run(*baked.task, 0, 10);
  const std::vector<float> a = graph.host(graph.ps.weights()), b = baked.host(baked.ps.weights());
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST_F(StepGraphEmu, AStepThatIsNotReplayableRunsEagerAndTheGraphIsCapturedAgain) {
  GraphRun eager(root(), "eager", false), graph(root(), "graph", true);
  graph.task->odd_steps = {5};
  eager.loop->run(*eager.task, 0, 10);
  graph.loop->run(*graph.task, 0, 10);
  // Eager: 1 (warm-up), 5 (not replayable), 6 (warm-up again); 2-4 and 7-10 replay.
  EXPECT_EQ(graph.loop->graph_eager_steps(), 3);
  EXPECT_EQ(graph.loop->graph_replays(), 7);
  expect_identical(graph, eager, "with an odd step");
}

TEST_F(StepGraphEmu, EachRunCapturesAfreshAfterItsFirstStep) {
  GraphRun eager(root(), "eager", false), graph(root(), "graph", true);
  eager.loop->run(*eager.task, 0, 10);
  graph.loop->run(*graph.task, 0, 4);
  graph.loop->run(*graph.task, 4, 10);
  EXPECT_EQ(graph.loop->graph_eager_steps(), 2);
  EXPECT_EQ(graph.loop->graph_replays(), 8);
  expect_identical(graph, eager, "two runs");
}

TEST_F(StepGraphEmu, AHostReadInsideTheStepFallsBackToEagerSteps) {
  GraphRun eager(root(), "eager", false), graph(root(), "graph", true);
  eager.task->host_read = graph.task->host_read = true;
  const size_t launches = vt_emu_graph_launches();
  eager.loop->run(*eager.task, 0, 10);
  graph.loop->run(*graph.task, 0, 10);
  EXPECT_EQ(vt_emu_graph_launches() - launches, 0u);
  EXPECT_EQ(graph.loop->graph_replays(), 0);
  EXPECT_EQ(graph.loop->graph_eager_steps(), 10);
  expect_identical(graph, eager, "after a refused capture");
}

}  // namespace
}  // namespace vt
