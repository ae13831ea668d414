#include "train/step_graph.h"

#include <mutex>

#include "core/log.h"

namespace vt {

namespace {
// Eager steps after a (re)start before the capture: the first plans the
// workspaces for the batch shape.
constexpr int64_t kWarmupSteps = 1;
}  // namespace

void StepGraph::note(const std::string& what) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(what).second) log().info("{}", what);
}

void StepGraph::run(const std::function<void()>& work, const std::string& not_replayable) {
  if (!not_replayable.empty()) {
    note("cuda_graph: eager step (" + not_replayable + ")");
    reset();
    ++eager_;
    work();
    return;
  }
  if (graph_.ready()) {
    graph_.launch();
    ++replays_;
    return;
  }
  if (refused_ || warm_ < kWarmupSteps) {
    ++warm_;
    ++eager_;
    work();
    return;
  }
  std::string why;
  if (graph_.capture(work, &why)) {
    note("cuda_graph: the training step is captured and replayed as one CUDA Graph");
    graph_.launch();
    ++replays_;
    return;
  }
  refused_ = true;
  note("cuda_graph: capture failed, eager steps (" + why + ")");
  ++eager_;
  work();
}

void StepGraph::reset() {
  graph_.reset();
  warm_ = 0;
}

}  // namespace vt
