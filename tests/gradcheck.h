// The finite-difference gradient checker of every gradient test: central
// differences (f(p + h) - f(p - h)) / 2h, in two forms.
//  - central_differences: the whole gradient of a double-precision reference
//    loss f(std::vector<double>) -> double (kernels written against a double
//    loop: truncation error O(h^2), rounding ~1e-16 / h).
//  - central_difference_at: the derivative of a loss computed by the code
//    under test with respect to one fp32 value it reads through `p` (modules
//    and fused kernels run in fp32, so h must be large enough, ~1e-2, for the
//    fp32 rounding of the loss to stay small against 2h).
// Both restore the perturbed values exactly before returning.
#pragma once
#include <cstddef>
#include <vector>

namespace vt {
namespace gradcheck {

// Entry i: (f(p + h e_i) - f(p - h e_i)) / 2h.
template <typename F>
std::vector<double> central_differences(std::vector<double> params, F f, double h = 1e-6) {
  std::vector<double> g(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const double keep = params[i];
    params[i] = keep + h;
    const double up = f(params);
    params[i] = keep - h;
    const double down = f(params);
    params[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// (loss() with *p + h - loss() with *p - h) / 2h, the perturbation applied in
// float as the code under test sees it; *p is restored afterwards.
template <typename F>
double central_difference_at(float* p, float h, F loss) {
  const float keep = *p;
  *p = keep + h;
  const double up = loss();
  *p = keep - h;
  const double down = loss();
  *p = keep;
  return (up - down) / (2.0 * h);
}

}  // namespace gradcheck
}  // namespace vt
