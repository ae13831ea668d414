#include "backbone/param_store.h"

#include "kernels/elementwise.h"

#include <cmath>
#include <functional>
#include <stdexcept>

#include "core/philox.h"

namespace vt {

std::string LoadReport::str() const {
  std::string s;
  // The first few of each list: a file of another model would otherwise
  // give thousands of characters of tensor names.
  constexpr size_t kShown = 4;
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    s += std::string(s.empty() ? "" : "; ") + what + ": ";
    for (size_t i = 0; i < v.size() && i < kShown; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > kShown) s += ", ... (" + std::to_string(v.size()) + " in all)";
  };
  list("missing", missing);
  list("unexpected", unexpected);
  list("shape mismatch", mismatched);
  return s.empty() ? "ok" : s;
}

ParamId ParamStore::add(const std::string& name, const Shape& shape, ParamInit init, bool weight_decay) {
  if (finalized()) throw std::invalid_argument("ParamStore::add('" + name + "'): store already finalized");
  if (name.empty()) throw std::invalid_argument("ParamStore::add: empty parameter name");
  if (index_.count(name)) throw std::invalid_argument("ParamStore::add: duplicate parameter '" + name + "'");
  for (int64_t d : shape)
    if (d <= 0)
      throw std::invalid_argument("ParamStore::add('" + name + "'): bad shape " + shape_str(shape));
  ParamInfo p;
  p.name = name;
  p.shape = shape;
  p.numel = shape_numel(shape);
  // 16-float alignment of every parameter keeps vector loads aligned.
  p.offset = (numel_ + 15) / 16 * 16;
  p.init = init;
  p.weight_decay = weight_decay;
  numel_ = p.offset + p.numel;
  index_[name] = params_.size();
  params_.push_back(p);
  return params_.size() - 1;
}

void ParamStore::finalize(Device device) {
  if (finalized()) {
    if (weights_.device() != device)
      throw std::invalid_argument("ParamStore::finalize: already finalized on " + weights_.device().str());
    return;
  }
  weights_ = Tensor::zeros({numel_}, DType::F32, device);
  grads_ = Tensor::zeros({numel_}, DType::F32, device);
}

void ParamStore::to(Device device) {
  require_finalized("to");
  if (weights_.device() == device) return;
  if (has_bf16_copy() && device.is_cpu())
    throw std::invalid_argument("ParamStore::to: the bf16 weight copy needs a CUDA device, not " + device.str());
  weights_ = weights_.to(device);
  grads_ = Tensor::zeros({numel_}, DType::F32, device);
  if (has_bf16_copy()) {
    weights_bf16_ = Tensor::empty({numel_}, DType::BF16, device);
    refresh_bf16();
  }
}

void ParamStore::enable_bf16_copy() {
  require_finalized("enable_bf16_copy");
  if (!weights_.device().is_cuda())
    throw std::invalid_argument("ParamStore::enable_bf16_copy: the weights are on " + weights_.device().str() +
                                "; bf16 GEMMs run on CUDA only");
  if (!has_bf16_copy()) weights_bf16_ = Tensor::empty({numel_}, DType::BF16, weights_.device());
  refresh_bf16();
}

void ParamStore::refresh_bf16() {
  if (has_bf16_copy()) convert(weights_, weights_bf16_);
}

Tensor ParamStore::value_bf16(ParamId id) const {
  if (!has_bf16_copy()) throw std::logic_error("ParamStore::value_bf16: no bf16 copy (enable_bf16_copy)");
  const ParamInfo& p = params_.at(id);
  return weights_bf16_.slice(0, p.offset, p.offset + p.numel).view(p.shape);
}

void ParamStore::require_finalized(const char* what) const {
  if (!finalized()) throw std::logic_error(std::string("ParamStore::") + what + ": call finalize() first");
}

Tensor ParamStore::value(ParamId id) const {
  require_finalized("value");
  const ParamInfo& p = params_.at(id);
  return weights_.slice(0, p.offset, p.offset + p.numel).view(p.shape);
}

Tensor ParamStore::grad(ParamId id) const {
  require_finalized("grad");
  const ParamInfo& p = params_.at(id);
  return grads_.slice(0, p.offset, p.offset + p.numel).view(p.shape);
}

ParamId ParamStore::id(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw std::out_of_range("ParamStore: no parameter named '" + name + "'");
  return it->second;
}

void ParamStore::zero_grad() {
  require_finalized("zero_grad");
  grads_.zero();
}

void ParamStore::init(uint64_t seed) {
  require_finalized("init");
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& p = params_[i];
    std::vector<float> v(static_cast<size_t>(p.numel));
    Philox g(seed, philox_stream(std::hash<std::string>{}(p.name), 0x9a7a));
    switch (p.init.kind) {
      case ParamInit::Zeros: break;
      case ParamInit::Ones: std::fill(v.begin(), v.end(), 1.0f); break;
      case ParamInit::Constant: std::fill(v.begin(), v.end(), p.init.value); break;
      case ParamInit::Normal:
        for (float& x : v) x = static_cast<float>(g.normal(0.0, p.init.value));
        break;
      case ParamInit::TruncNormal:
        for (float& x : v) {
          double t;
          do t = g.normal(0.0, p.init.value);
          while (t < -2.0 || t > 2.0);
          x = static_cast<float>(t);
        }
        break;
      case ParamInit::XavierUniform: {
        const double fan_out = static_cast<double>(p.shape[0]);
        const double fan_in = static_cast<double>(p.numel) / fan_out;
        const double a = std::sqrt(6.0 / (fan_in + fan_out));
        for (float& x : v) x = static_cast<float>(g.uniform(-a, a));
        break;
      }
      case ParamInit::XavierNormal: {
        const size_t chunks = p.init.chunk_gains.size();
        if (chunks == 0 || p.shape[0] % static_cast<int64_t>(chunks) != 0)
          throw std::invalid_argument("ParamStore::init: " + p.name + ": " + std::to_string(chunks) +
                                      " xavier_normal chunks do not divide " + std::to_string(p.shape[0]) +
                                      " rows");
        const double fan_out = static_cast<double>(p.shape[0]) / static_cast<double>(chunks);
        const double fan_in = static_cast<double>(p.numel) / static_cast<double>(p.shape[0]);
        const size_t per_chunk = v.size() / chunks;
        for (size_t i = 0; i < v.size(); ++i) {
          const double std = p.init.chunk_gains[i / per_chunk] * std::sqrt(2.0 / (fan_in + fan_out));
          v[i] = static_cast<float>(g.normal(0.0, std));
        }
        break;
      }
    }
    value(i).copy_from(Tensor::from_vector(v, p.shape));
  }
}

std::map<std::string, Tensor> ParamStore::state_dict() const {
  std::map<std::string, Tensor> m;
  for (size_t i = 0; i < params_.size(); ++i) m[params_[i].name] = value(i);
  return m;
}

std::map<std::string, Tensor> ParamStore::grad_dict() const {
  std::map<std::string, Tensor> m;
  for (size_t i = 0; i < params_.size(); ++i) m[params_[i].name] = grad(i);
  return m;
}

LoadReport ParamStore::check(const std::map<std::string, Tensor>& dict) const {
  LoadReport r;
  for (const ParamInfo& p : params_) {
    auto it = dict.find(p.name);
    if (it == dict.end()) r.missing.push_back(p.name);
    else if (it->second.shape() != p.shape)
      r.mismatched.push_back(p.name + ": file " + shape_str(it->second.shape()) + " vs model " + shape_str(p.shape));
  }
  for (const auto& kv : dict)
    if (!index_.count(kv.first)) r.unexpected.push_back(kv.first);
  return r;
}

LoadReport ParamStore::load(const std::map<std::string, Tensor>& dict, bool strict) {
  require_finalized("load");
  LoadReport r = check(dict);
  if (strict && !r.ok()) throw std::runtime_error("ParamStore::load (strict): " + r.str());
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = dict.find(params_[i].name);
    if (it == dict.end() || it->second.shape() != params_[i].shape) continue;
    const Tensor& src = it->second;
    if (src.dtype() != DType::F32 && src.dtype() != DType::BF16 && src.dtype() != DType::F16)
      throw std::runtime_error("ParamStore::load: '" + params_[i].name + "' has dtype " +
                               dtype_name(src.dtype()) + ", expected F32, BF16 or F16");
    Tensor f = src.dtype() == DType::F32 ? src : src.to(Device::cpu()).to(DType::F32);
    value(i).copy_from(f);
  }
  refresh_bf16();
  return r;
}

}  // namespace vt
