#include "kernels/cpu/pool.h"

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/dnnl_context.h"

namespace vt {
namespace cpu {
namespace {

using dnnl::memory;

struct PoolPlan {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
};

std::shared_ptr<PoolPlan> get_plan(const Pool2dDesc& d) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::shared_ptr<PoolPlan>> cache;
  std::vector<int64_t> key = {d.n, d.c, d.h, d.w, d.oh, d.ow, d.kind, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw};
  for (int i = 0; i < 4; ++i) key.push_back(d.x_strides[i]);
  for (int i = 0; i < 4; ++i) key.push_back(d.y_strides[i]);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  const auto f32 = memory::data_type::f32;
  memory::desc x_md({d.n, d.c, d.h, d.w}, f32,
                    memory::dims{d.x_strides[0], d.x_strides[1], d.x_strides[2], d.x_strides[3]});
  memory::desc y_md({d.n, d.c, d.oh, d.ow}, f32,
                    memory::dims{d.y_strides[0], d.y_strides[1], d.y_strides[2], d.y_strides[3]});
  const dnnl::algorithm alg = d.kind == 0   ? dnnl::algorithm::pooling_max
                              : d.kind == 1 ? dnnl::algorithm::pooling_avg_include_padding
                                            : dnnl::algorithm::pooling_avg_exclude_padding;
  // Right/bottom padding that makes oneDNN's output size PyTorch's floor rule;
  // it may be smaller than the left padding (or negative, i.e. ignored rows).
  const int64_t pr_h = (d.oh - 1) * d.sh + d.kh - d.h - d.ph;
  const int64_t pr_w = (d.ow - 1) * d.sw + d.kw - d.w - d.pw;
  dnnl::pooling_forward::desc pdsc(dnnl::prop_kind::forward_inference, alg, x_md, y_md, {d.sh, d.sw},
                                   {d.kh, d.kw}, {d.ph, d.pw}, {pr_h, pr_w});
  auto plan = std::make_shared<PoolPlan>();
  plan->pd = dnnl::pooling_forward::primitive_desc(pdsc, dnnl_engine());
  plan->prim = dnnl::pooling_forward(plan->pd);
  cache.emplace(key, plan);
  return plan;
}

}  // namespace

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y) {
  auto plan = get_plan(d);
  auto& eng = dnnl_engine();
  auto& s = dnnl_stream();
  memory x_mem(plan->pd.src_desc(), eng, const_cast<float*>(x));
  memory y_mem(plan->pd.dst_desc(), eng, y);
  plan->prim.execute(s, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_DST, y_mem}});
  s.wait();
}

void global_avg_pool2d(const float* x, float* y, int64_t rows, int64_t hw) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * hw;
    // Double accumulation: the mean is exact to float rounding for any hw.
    double s = 0.0;
    for (int64_t i = 0; i < hw; ++i) s += p[i];
    y[r] = static_cast<float>(s / static_cast<double>(hw));
  }
}

}  // namespace cpu
}  // namespace vt
