// ParamStore: every trainable parameter of a model, registered under its
// PyTorch state-dict name (docs/design.md §2-3), with its shape, initialiser and
// weight-decay flag. After finalize() the weights live in ONE flat fp32
// buffer and the gradients in another (one fused optimizer kernel, one
// all-reduce); each parameter is a contiguous vt::Tensor view into them.
//
// Usage: modules call add() while being constructed and keep the returned
// ParamId; the owner calls finalize() once all modules exist, then init(seed)
// (or load()). value(id)/grad(id) are valid only after finalize().
//
// Initialisation is keyed by (seed, parameter name) through Philox, so a
// parameter's initial values do not depend on registration order or thread
// count.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace vt {

struct ParamInit {
  enum Kind { Zeros, Ones, Constant, Normal, TruncNormal, XavierUniform, XavierNormal };
  Kind kind = Zeros;
  float value = 0.0f;  // Constant: the value; Normal/TruncNormal: the std
  // XavierNormal: rows split into chunk_gains.size() equal chunks (the q, k, v
  // of a fused projection), each initialised as its own matrix with its gain.
  std::vector<float> chunk_gains;

  static ParamInit zeros() { return {Zeros, 0.0f, {}}; }
  static ParamInit ones() { return {Ones, 0.0f, {}}; }
  static ParamInit constant(float v) { return {Constant, v, {}}; }
  static ParamInit normal(float std) { return {Normal, std, {}}; }
  // timm's trunc_normal_(std): normal(0, std) truncated to [-2, 2] (absolute,
  // as timm's defaults a=-2, b=2), by rejection.
  static ParamInit trunc_normal(float std) { return {TruncNormal, std, {}}; }
  // torch.nn.init.xavier_uniform_: U(-a, a), a = sqrt(6 / (fan_in + fan_out)),
  // fan_out = shape[0], fan_in = product of the other dimensions.
  static ParamInit xavier_uniform() { return {XavierUniform, 0.0f, {}}; }
  // torch.nn.init.xavier_normal_(gain) per row chunk: N(0, gain^2 * 2 /
  // (fan_in + fan_out)) with fan_out = shape[0] / chunks (DeepNet's init).
  static ParamInit xavier_normal(std::vector<float> chunk_gains) {
    return {XavierNormal, 0.0f, std::move(chunk_gains)};
  }
};

using ParamId = size_t;

struct ParamInfo {
  std::string name;
  Shape shape;
  int64_t offset = 0;  // in elements, into the flat buffers
  int64_t numel = 0;
  ParamInit init;
  bool weight_decay = true;
};

// What a state dict differs in from the registered parameters.
struct LoadReport {
  std::vector<std::string> missing;     // registered, absent from the dict
  std::vector<std::string> unexpected;  // in the dict, not registered
  std::vector<std::string> mismatched;  // "name: file [a, b] vs model [c, d]"
  bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  std::string str() const;
};

class ParamStore {
 public:
  // Throws std::invalid_argument on a duplicate/empty name, a non-positive
  // dimension, or a call after finalize().
  ParamId add(const std::string& name, const Shape& shape, ParamInit init, bool weight_decay);

  // Allocates the flat buffers (weights and grads zero-filled); idempotent
  // for the same device.
  void finalize(Device device = Device::cpu());
  bool finalized() const { return weights_.defined(); }
  // The device of the flat buffers (cpu before finalize()).
  Device device() const { return weights_.defined() ? weights_.device() : Device::cpu(); }

  // Moves the flat buffers to `device`: weights copied (fp32, unchanged),
  // gradients zeroed. Views from value()/grad() taken before are stale;
  // modules hold ParamIds, so they follow. Throws std::logic_error before
  // finalize().
  void to(Device device);

  // Runs every parameter's initialiser.
  void init(uint64_t seed);

  Tensor value(ParamId id) const;  // view into weights()
  Tensor grad(ParamId id) const;   // view into grads()
  const ParamInfo& info(ParamId id) const { return params_.at(id); }
  const std::vector<ParamInfo>& infos() const { return params_; }
  // Throws std::out_of_range naming the parameter.
  ParamId id(const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }

  size_t size() const { return params_.size(); }
  int64_t numel() const { return numel_; }
  const Tensor& weights() const { return weights_; }  // [numel] flat
  const Tensor& grads() const { return grads_; }      // [numel] flat

  // precision: bf16 (train/device_choice.h): a BF16 copy of the weights in
  // a third flat buffer, the operand of the bf16 GEMMs (Linear). AdamW
  // writes it in its update kernel; refresh_bf16() rewrites it from the
  // fp32 weights after anything else changed them (to(), load(), an EMA
  // swap). CUDA only: std::invalid_argument on the CPU. Undefined until
  // enabled.
  void enable_bf16_copy();
  void refresh_bf16();
  bool has_bf16_copy() const { return weights_bf16_.defined(); }
  const Tensor& weights_bf16() const { return weights_bf16_; }  // [numel] flat BF16
  Tensor value_bf16(ParamId id) const;                          // view into weights_bf16()
  void zero_grad();

  // Gradient-ready announcements, for an all-reduce that overlaps the
  // backward pass (train/grad_allreduce_bucketed.h; torch DDP's autograd
  // hooks): during a backward pass the model calls grads_final(offset,
  // numel) once the gradient elements [offset, offset + numel) of grads()
  // hold their final value for this pass (every kernel writing them has been
  // issued, and none after this call writes them). The ranges a model
  // announces tile [0, numel()) exactly once per backward pass (alignment
  // padding included), in the order they become final. The hook runs on the
  // calling thread; without one (the default) the call does nothing.
  using GradsFinalHook = std::function<void(int64_t offset, int64_t numel)>;
  void set_grads_final_hook(GradsFinalHook hook) { grads_final_hook_ = std::move(hook); }
  void grads_final(int64_t offset, int64_t numel) const {
    if (grads_final_hook_ && numel > 0) grads_final_hook_(offset, numel);
  }

  // Named views (no copy) for checkpoint writing.
  std::map<std::string, Tensor> state_dict() const;
  std::map<std::string, Tensor> grad_dict() const;

  // Compares names and shapes of a state dict with the registered ones.
  LoadReport check(const std::map<std::string, Tensor>& dict) const;
  // Copies the dict's tensors (F32, BF16 or F16; converted to fp32) into the
  // weights. strict: any missing/unexpected/mismatched name throws
  // std::runtime_error listing them all, before anything is copied.
  // Non-strict: loads the matching names and returns the report.
  LoadReport load(const std::map<std::string, Tensor>& dict, bool strict = true);

 private:
  void require_finalized(const char* what) const;
  std::vector<ParamInfo> params_;
  std::map<std::string, ParamId> index_;
  int64_t numel_ = 0;
  Tensor weights_, grads_, weights_bf16_;
  GradsFinalHook grads_final_hook_;
};

}  // namespace vt
