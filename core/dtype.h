// Element types and devices of vt::Tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace vt {

// F16 and I64 exist only so that safetensors files holding them can be read
// and written; compute ops accept F32 (CPU, CUDA) and BF16 (CUDA).
enum class DType : uint8_t { F32, BF16, F16, I64, I32, U8 };

size_t dtype_size(DType dt);
// Names as safetensors spells them: "F32", "BF16", "F16", "I64", "I32", "U8".
const char* dtype_name(DType dt);
// Inverse of dtype_name; throws std::invalid_argument naming the string.
DType dtype_from_name(const std::string& name);

enum class DeviceKind : uint8_t { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;
  static Device cpu() { return {DeviceKind::CPU, 0}; }
  static Device cuda(int i = 0) { return {DeviceKind::CUDA, i}; }
  bool is_cpu() const { return kind == DeviceKind::CPU; }
  bool is_cuda() const { return kind == DeviceKind::CUDA; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu" or "cuda:N"
};

// bf16 <-> f32 with round-to-nearest-even (NaN stays NaN), as PyTorch converts.
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

}  // namespace vt
