#include "train/device_update.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace vt {

DeviceUpdate::DeviceUpdate(ParamStore& params, OptimizerState& opt, const NonFiniteGuard& guard,
                           const UpdateOptions& o, int64_t capacity)
    : params_(params), opt_(opt), o_(o), capacity_(capacity), max_nonfinite_(guard.max_consecutive()) {
  if (capacity < 1) throw std::invalid_argument("DeviceUpdate: capacity must be >= 1, got " + std::to_string(capacity));
  if (o_.ema_decay && !opt.has_ema()) throw std::logic_error("DeviceUpdate: an EMA decay without an EMA kept");
  state_ = make_update_state(params.grads().device(), opt.steps(), guard.consecutive());
}

void DeviceUpdate::make_records(const Tensor& scalars) {
  if (!records_.defined()) {
    k_ = scalars.numel();
    records_ = Tensor::zeros({capacity_, kUpdateRecordHead + k_}, DType::I64, params_.grads().device());
  }
  if (scalars.numel() != k_)
    throw std::logic_error("DeviceUpdate::launch: " + std::to_string(scalars.numel()) + " scalars, the run started with " +
                           std::to_string(k_));
}

UpdateHyper DeviceUpdate::hyper(double lr) const {
  UpdateHyper h;
  h.lr = lr;
  h.beta1 = o_.adamw.beta1, h.beta2 = o_.adamw.beta2, h.eps = o_.adamw.eps, h.weight_decay = o_.adamw.weight_decay;
  h.max_norm = o_.clip_grad ? *o_.clip_grad : 0.0;
  h.max_nonfinite = max_nonfinite_;
  return h;
}

void DeviceUpdate::launch(const Tensor& scalars, double lr) {
  if (full()) throw std::logic_error("DeviceUpdate::launch: " + std::to_string(capacity_) + " steps unread");
  make_records(scalars);
  const Tensor row = records_.slice(0, pending_, pending_ + 1).view({kUpdateRecordHead + k_});
  update_prepare(params_.grads(), scalars, state_, row, hyper(lr));
  fused_update(params_.weights(), params_.grads(), opt_.exp_avg(), opt_.exp_avg_sq(), opt_.decay_mask(),
               params_.weights_bf16(), o_.ema_decay ? opt_.ema() : Tensor(), o_.ema_decay.value_or(0.0f), state_);
  ++pending_;
}

void DeviceUpdate::set_step(const Tensor& scalars, double lr) {
  if (full()) throw std::logic_error("DeviceUpdate::set_step: " + std::to_string(capacity_) + " steps unread");
  make_records(scalars);
  const Device dev = params_.grads().device();
  if (!lr_.defined()) {
    lr_ = Tensor::zeros({1}, DType::I64, dev);
    row_ = Tensor::zeros({kUpdateRecordHead + k_}, DType::I64, dev);
  }
  Tensor host = Tensor::empty({1}, DType::I64);
  std::memcpy(host.raw(), &lr, sizeof(double));
  lr_.copy_from(host);
}

void DeviceUpdate::launch_fixed(const Tensor& scalars) {
  // hyper's lr is unused: the kernel reads lr_.
  update_prepare(params_.grads(), scalars, state_, row_, hyper(0.0), lr_);
  fused_update(params_.weights(), params_.grads(), opt_.exp_avg(), opt_.exp_avg_sq(), opt_.decay_mask(),
               params_.weights_bf16(), o_.ema_decay ? opt_.ema() : Tensor(), o_.ema_decay.value_or(0.0f), state_);
}

void DeviceUpdate::commit() {
  records_.slice(0, pending_, pending_ + 1).view({kUpdateRecordHead + k_}).copy_from(row_);
  ++pending_;
}

std::vector<DeviceUpdate::Record> DeviceUpdate::read() {
  std::vector<Record> out;
  if (pending_ == 0) return out;
  const Tensor host = records_.slice(0, 0, pending_).to(Device::cpu());  // the one device->host copy
  const int64_t w = kUpdateRecordHead + k_;
  std::vector<double> v(static_cast<size_t>(pending_ * w));
  std::memcpy(v.data(), host.raw(), v.size() * sizeof(double));
  for (int64_t i = 0; i < pending_; ++i) {
    const double* r = v.data() + i * w;
    Record rec;
    rec.status = static_cast<int>(r[0]);
    rec.grad_norm = r[1];
    rec.scalars.assign(r + kUpdateRecordHead, r + w);
    out.push_back(std::move(rec));
  }
  pending_ = 0;
  return out;
}

}  // namespace vt
