// vt::Tensor: an n-dimensional view (shape, strides in elements, offset) over
// shared storage on one device. Copies of a Tensor share storage (like
// torch.Tensor); clone() makes a deep copy.
//
// Errors (shape mismatch, wrong dtype, non-contiguous where contiguity is
// required, out-of-range slice) throw std::invalid_argument with the shapes
// in the message.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace vt {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[2, 3, 4]"
int64_t shape_numel(const Shape& s);

// Throws std::invalid_argument (message: the shape and what overflows) unless
// every dimension is >= 0 and prod(max(d, 1)) * itemsize fits int64_t: then
// the element count, every contiguous stride and the byte count fit, also for
// zero-element shapes such as [0, 2^32, 2^32], whose strides still multiply
// the other dimensions (PyTorch's "Stride calculation overflowed" check).
// Readers of untrusted files call it before building a Tensor.
void check_shape_fits(const Shape& shape, size_t itemsize);

class Storage {
 public:
  Storage(size_t bytes, Device device);
  // Wraps memory owned elsewhere (no free on destruction); `owner`, when
  // given, is kept alive as long as this storage (e.g. a lease on a
  // loader's pinned batch slot, data_pipeline/loader.h).
  Storage(void* external, size_t bytes, Device device, std::shared_ptr<void> owner = nullptr);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  bool owned_ = true;
  std::shared_ptr<void> owner_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor: defined() == false

  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, float value, Device device = Device::cpu());  // F32
  // Copies host data into a new CPU F32 tensor.
  static Tensor from_vector(const std::vector<float>& v, const Shape& shape);
  // Non-owning view of external CPU memory (contiguous).
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device device = Device::cpu());
  // The same, keeping `owner` alive while any view of the storage lives.
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device device, std::shared_ptr<void> owner);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element 0 of this view.
  void* raw() const;
  template <typename T>
  T* data() const { return static_cast<T*>(raw()); }
  // Typed access with a dtype check (F32 -> float, I32 -> int32_t, U8 -> uint8_t).
  float* f32() const;
  int32_t* i32() const;
  uint8_t* u8() const;
  uint16_t* bf16() const;

  // Views (share storage). view/reshape need a contiguous tensor; one entry
  // of new_shape may be -1.
  Tensor view(const Shape& new_shape) const;
  Tensor reshape(const Shape& new_shape) const { return view(new_shape); }
  Tensor slice(int d, int64_t start, int64_t end) const;  // [start, end) along d
  Tensor select(int d, int64_t index) const;              // drops dimension d
  Tensor transpose(int d0, int d1) const;
  Tensor flatten() const { return view({numel()}); }

  // Deep copies.
  Tensor clone() const;                            // contiguous, same device
  Tensor contiguous() const;                       // self if already contiguous
  Tensor to(Device device) const;                  // self if already there
  Tensor to(DType dtype) const;                    // F32 <-> BF16/F16/I32/U8 conversion (CPU)
  void copy_from(const Tensor& src);               // same shape; any strides/devices
  void fill(float value);                          // F32/BF16 (CPU or CUDA), I32, U8
  void zero();

  // CPU-side convenience (copies to host first when on CUDA).
  std::vector<float> to_vector() const;
  float item() const;  // one-element tensor
  std::string str() const;  // "Tensor(F32, [2, 3], cpu)"

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;  // in elements
  DType dtype_ = DType::F32;
  Device device_;
};

Shape contiguous_strides(const Shape& shape);

}  // namespace vt
