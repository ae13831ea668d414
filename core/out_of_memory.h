// std::bad_alloc that says what was asked for: code that catches
// std::bad_alloc still catches it, and the message a user sees names the
// size (and, from Tensor::empty, the tensor's shape, dtype and device)
// instead of a bare "std::bad_alloc" (e.g. for model.img_size=4096).
#pragma once
#include <cstddef>
#include <new>
#include <string>
#include <utility>

namespace vt {

class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// Runs f() and returns what it returns; a vt::OutOfMemory thrown by it is
// rethrown with `context` in front (what was being computed and the key
// that lowers it, e.g. "evaluation batch (eval.batch_size=256; lower it)"),
// so an out-of-memory after step 1 says which phase asked. Nothing else is
// caught.
template <class F>
decltype(auto) naming_out_of_memory(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(context + ": " + e.what());
  }
}

// "1234 bytes (1.2 KiB)" for messages (the unit only from 1 KiB on).
std::string bytes_text(size_t bytes);

}  // namespace vt
