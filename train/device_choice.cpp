#include "train/device_choice.h"

#include <cstdio>
#include <stdexcept>

#include "core/allocator.h"
#include "kernels/matmul.h"

namespace vt {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::BF16: return "bf16";
    case Precision::TF32: return "tf32";
  }
  return "?";
}

std::string DeviceChoice::describe() const {
  if (device.is_cpu()) return std::string("cpu, precision ") + precision_name(precision);
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(gpu_total_bytes) / (1024.0 * 1024.0 * 1024.0));
  return device.str() + " (" + gpu_name + ", " + mem + "), precision " + precision_name(precision);
}

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw ConfigError(where + ": " + what); }

// "cuda" -> 0, "cuda:N" -> N; -1 for anything else.
int cuda_index(const std::string& d) {
  if (d == "cuda") return 0;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 8) return -1;
  int n = 0;
  for (size_t i = 5; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9') return -1;
    n = n * 10 + (d[i] - '0');
  }
  return n;
}

}  // namespace

DeviceChoice choose_device(const std::string& device, const std::string& precision, const std::string& device_where,
                           const std::string& precision_where) {
  DeviceChoice c;
  const int idx = cuda_index(device);
  if (device != "auto" && device != "cpu" && idx < 0)
    bad(device_where, "expected auto | cpu | cuda | cuda:N, got '" + device + "'");
  if (idx >= 0) {
#ifndef VT_CUDA
    bad(device_where, "'" + device + "' asked, but this build has no CUDA support (configure with -DVT_CUDA=ON on a "
                      "machine with the CUDA toolkit); use cpu or auto");
#endif
    const int n = cuda_device_count();
    if (n == 0)
      bad(device_where, "'" + device + "' asked, but no CUDA device is visible (no GPU, no driver, or "
                        "CUDA_VISIBLE_DEVICES hides them); use cpu or auto");
    if (idx >= n)
      bad(device_where, "'" + device + "' asked, but only " + std::to_string(n) + " CUDA device" +
                            (n == 1 ? " is" : "s are") + " visible (cuda:0" +
                            (n > 1 ? " .. cuda:" + std::to_string(n - 1) : std::string()) + ")");
    c.device = Device::cuda(idx);
  } else if (device == "auto" && cuda_device_count() > 0) {
    c.device = Device::cuda(0);
  }
  if (precision == "auto") c.precision = c.device.is_cuda() ? Precision::BF16 : Precision::FP32;
  else if (precision == "fp32") c.precision = Precision::FP32;
  else if (precision == "bf16") c.precision = Precision::BF16;
  else if (precision == "tf32") c.precision = Precision::TF32;
  else bad(precision_where, "expected auto | bf16 | fp32 | tf32, got '" + precision + "'");
  if (c.device.is_cpu() && c.precision != Precision::FP32)
    bad(precision_where, "'" + precision + "' needs a CUDA device; the CPU computes in fp32 only (device resolved to "
                         "cpu from '" + device + "'); use precision=fp32 or auto");
  if (c.device.is_cuda()) {
    const CudaDeviceInfo info = cuda_device_info(c.device.index);
    c.gpu_name = info.name, c.gpu_total_bytes = info.total_bytes;
  }
  return c;
}

DeviceChoice device_choice(const Config& cfg) {
  return choose_device(cfg.get<std::string>("device"), cfg.get<std::string>("precision"),
                       "device (" + cfg.source("device") + ")", "precision (" + cfg.source("precision") + ")");
}

void apply_device_choice(const DeviceChoice& d) {
  set_matmul_tf32(d.device.is_cuda() && d.precision == Precision::TF32);
  if (d.device.is_cuda()) cuda_set_device(d.device.index);
}

}  // namespace vt
