#include "train/run_state.h"

#include <stdexcept>

namespace vt {

nlohmann::json run_state_json(const RunPosition& p) {
  return {{"step", p.step},
          {"epoch", p.epoch},
          {"batch_in_epoch", p.batch_in_epoch},
          {"optimizer", {{"kind", "adamw"}, {"step", p.optimizer_steps}}},
          {"config_digest", p.config_digest},
          {"seed", p.seed},
          {"nonfinite_skipped", p.nonfinite_skipped}};
}

RunPosition read_run_state(const nlohmann::json& s, const std::string& dir) {
  RunPosition p;
  try {
    p.step = s.at("step").get<int64_t>();
    p.epoch = s.at("epoch").get<int64_t>();
    p.batch_in_epoch = s.at("batch_in_epoch").get<int64_t>();
    if (s.contains("optimizer")) p.optimizer_steps = s.at("optimizer").at("step").get<int64_t>();
    else if (s.contains("optimizer_steps")) p.optimizer_steps = s.at("optimizer_steps").get<int64_t>();
    else p.optimizer_steps = p.step;
    p.nonfinite_skipped = s.value("nonfinite_skipped", int64_t{0});
    p.seed = s.value("seed", uint64_t{0});
    p.config_digest = s.value("config_digest", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': state.json: " + e.what());
  }
  return p;
}

}  // namespace vt
