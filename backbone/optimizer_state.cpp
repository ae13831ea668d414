#include "backbone/optimizer_state.h"

#include <stdexcept>
#include <vector>

namespace vt {

namespace {

std::map<std::string, Tensor> views(const ParamStore& s, const Tensor& flat, const std::string& prefix) {
  std::map<std::string, Tensor> m;
  for (const ParamInfo& p : s.infos()) m[prefix + p.name] = flat.slice(0, p.offset, p.offset + p.numel).view(p.shape);
  return m;
}

void check_views(const ParamStore& s, const std::map<std::string, Tensor>& dict, const std::string& prefix,
                 const std::string& file) {
  for (const ParamInfo& p : s.infos()) {
    auto it = dict.find(prefix + p.name);
    if (it == dict.end()) throw std::runtime_error(file + ": missing tensor '" + prefix + p.name + "'");
    if (it->second.shape() != p.shape || it->second.dtype() != DType::F32)
      throw std::runtime_error(file + ": tensor '" + prefix + p.name + "' is " + dtype_name(it->second.dtype()) + " " +
                               shape_str(it->second.shape()) + ", expected F32 " + shape_str(p.shape));
  }
}

void copy_views(const ParamStore& s, const Tensor& flat, const std::map<std::string, Tensor>& dict,
                const std::string& prefix) {
  for (const ParamInfo& p : s.infos())
    flat.slice(0, p.offset, p.offset + p.numel).view(p.shape).copy_from(dict.at(prefix + p.name));
}

}  // namespace

OptimizerState::OptimizerState(const ParamStore& params, bool with_ema) : params_(&params) {
  if (!params.finalized()) throw std::logic_error("OptimizerState: the ParamStore is not finalized");
  const int64_t n = params.numel();
  const Device dev = params.weights().device();
  exp_avg_ = Tensor::zeros({n}, DType::F32, dev);
  exp_avg_sq_ = Tensor::zeros({n}, DType::F32, dev);
  std::vector<DecaySegment> segs;
  for (const ParamInfo& p : params.infos()) segs.push_back({p.offset, p.numel, p.weight_decay});
  decay_mask_ = decay_mask_from_segments(n, segs).to(dev);  // built on the host once
  if (with_ema) ema_ = params.weights().clone();
}

void OptimizerState::adamw_step(const AdamWParams& hp) {
  // With a bf16 weight copy (precision: bf16) the update kernel rewrites it.
  vt::adamw_step(params_->weights(), params_->grads(), exp_avg_, exp_avg_sq_, hp, ++steps_, decay_mask_,
                 params_->weights_bf16());
}

void OptimizerState::update_ema(float decay) {
  if (!has_ema()) throw std::logic_error("OptimizerState::update_ema: no EMA kept");
  ema_update(ema_, params_->weights(), decay);
}

void OptimizerState::reset_ema_to_weights() {
  if (!has_ema()) throw std::logic_error("OptimizerState::reset_ema_to_weights: no EMA kept");
  ema_.copy_from(params_->weights());
}

std::map<std::string, Tensor> OptimizerState::optimizer_dict() const {
  auto m = views(*params_, exp_avg_, "exp_avg.");
  for (auto& kv : views(*params_, exp_avg_sq_, "exp_avg_sq.")) m.insert(kv);
  return m;
}

std::map<std::string, Tensor> OptimizerState::ema_dict() const {
  return has_ema() ? views(*params_, ema_, "") : std::map<std::string, Tensor>{};
}

// All checks come first: a bad file leaves the state untouched.
void OptimizerState::load_optimizer(const std::map<std::string, Tensor>& dict, const std::string& file) {
  check_views(*params_, dict, "exp_avg.", file);
  check_views(*params_, dict, "exp_avg_sq.", file);
  copy_views(*params_, exp_avg_, dict, "exp_avg.");
  copy_views(*params_, exp_avg_sq_, dict, "exp_avg_sq.");
}

void OptimizerState::load_ema(const std::map<std::string, Tensor>& dict, const std::string& file) {
  if (!has_ema()) throw std::logic_error("OptimizerState::load_ema: no EMA kept");
  check_views(*params_, dict, "", file);
  copy_views(*params_, ema_, dict, "");
}

}  // namespace vt
