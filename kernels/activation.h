// Pointwise activations of the transformer MLPs and the adaLN conditioning:
//   GeluErf  : x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))     (nn.GELU(), DeiT)
//   GeluTanh : 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//              (nn.GELU(approximate="tanh"), DiT)
//   SiLU     : x * sigmoid(x)                                (nn.SiLU(), DiT adaLN)
// CPU evaluates exp/erf/tanh with vectorisable approximations (Cephes expf,
// Abramowitz & Stegun 7.1.26 erf): outputs are within ~2e-7 absolute of the
// exact functions (tests compare against double libm), 4-10x faster than libm.
// Any shape; tensors contiguous with identical shapes and one dtype: F32, or
// BF16 on CUDA (fp32 arithmetic). Outputs may alias inputs (y == x,
// dx == dy). CPU: OpenMP over chunks. CUDA:
// kernels/cuda/activation.h with CUDA's accurate erff/tanhf/expf.
#pragma once
#include <string>

#include "core/tensor.h"

namespace vt {

enum class Activation { GeluErf, GeluTanh, SiLU };

// "gelu" / "gelu_tanh" / "silu"; throws std::invalid_argument naming the string.
Activation activation_from_name(const std::string& name);
const char* activation_name(Activation a);

// y = f(x).
void activation_forward(Activation kind, const Tensor& x, const Tensor& y);
// dx = dy * f'(x) (overwrite).
void activation_backward(Activation kind, const Tensor& dy, const Tensor& x, const Tensor& dx);

}  // namespace vt
