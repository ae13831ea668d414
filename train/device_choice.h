// Where a program computes and in which precision: the `device` and
// `precision` keys that vtrain, dittrain and veval share (one parser, so the
// three programs accept and refuse the same values with the same words).
//
//   device:    auto | cpu | cuda | cuda:N
//              auto takes cuda:0 when a CUDA device is visible, else the CPU.
//              cuda / cuda:N in a build without CUDA, without a driver, or
//              with fewer than N+1 devices is a ConfigError naming the key.
//   precision: auto | bf16 | fp32 | tf32
//              auto: bf16 on a GPU, fp32 on the CPU. The CPU computes in fp32
//              only, so bf16 or tf32 with a CPU device is a ConfigError.
//              On a GPU every precision keeps fp32 master weights, gradients,
//              AdamW moments, LayerNorm/softmax statistics, losses and the
//              residual streams; bf16 runs the GEMMs on bf16 operands (a bf16
//              weight copy written by the optimizer, bf16 activations) with
//              fp32 accumulation; tf32 runs fp32 GEMMs on TF32 tensor cores.
#pragma once
#include <cstddef>
#include <string>

#include "core/config.h"
#include "core/dtype.h"

namespace vt {

enum class Precision { FP32, BF16, TF32 };
const char* precision_name(Precision p);  // "fp32" | "bf16" | "tf32"

struct DeviceChoice {
  Device device = Device::cpu();
  Precision precision = Precision::FP32;
  std::string gpu_name;      // CUDA devices: the driver's name
  size_t gpu_total_bytes = 0;  // CUDA devices: total memory
  bool bf16() const { return precision == Precision::BF16; }
  // One line for the log: "cuda:0 (NVIDIA H200, 139.8 GiB), precision bf16"
  // or "cpu, precision fp32".
  std::string describe() const;
};

// Parses the two values; `device_where`/`precision_where` name the keys (and
// where they were set) in error messages. Throws ConfigError.
DeviceChoice choose_device(const std::string& device, const std::string& precision, const std::string& device_where,
                           const std::string& precision_where);
// The `device` and `precision` keys of a config (schemas declare both with
// default "auto").
DeviceChoice device_choice(const Config& cfg);
// Applies the choice process-wide where the op library has a switch
// (tf32: TF32 cuBLAS GEMMs) and makes the device current.
void apply_device_choice(const DeviceChoice& d);

}  // namespace vt
