#include "kernels/cpu/pool.h"

#include <algorithm>
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

// Pooling runs on dense NCHW tensors: oneDNN's JIT pooling rejects strided
// views (a channel slice of a concat buffer) and falls back to a reference
// loop ~100x slower, so such views are reordered through per-thread scratch.
struct PoolPlan {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
  memory::desc user_x_md, user_y_md;
  bool reorder_x = false, reorder_y = false;
  dnnl::reorder x_reorder, y_reorder;
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
  memory::desc dense_x_md({d.n, d.c, d.h, d.w}, f32, memory::format_tag::nchw);
  memory::desc dense_y_md({d.n, d.c, d.oh, d.ow}, f32, memory::format_tag::nchw);
  dnnl::pooling_forward::desc pdsc(dnnl::prop_kind::forward_inference, alg, dense_x_md, dense_y_md, {d.sh, d.sw},
                                   {d.kh, d.kw}, {d.ph, d.pw}, {pr_h, pr_w});
  auto plan = std::make_shared<PoolPlan>();
  plan->pd = dnnl::pooling_forward::primitive_desc(pdsc, dnnl_engine());
  plan->prim = dnnl::pooling_forward(plan->pd);
  plan->user_x_md = x_md, plan->user_y_md = y_md;
  plan->reorder_x = x_md != dense_x_md;
  plan->reorder_y = y_md != dense_y_md;
  if (plan->reorder_x) plan->x_reorder = dnnl::reorder(memory(x_md, dnnl_engine()), memory(dense_x_md, dnnl_engine()));
  if (plan->reorder_y) plan->y_reorder = dnnl::reorder(memory(dense_y_md, dnnl_engine()), memory(y_md, dnnl_engine()));
  cache.emplace(key, plan);
  return plan;
}

}  // namespace

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y) {
  auto plan = get_plan(d);
  auto& eng = dnnl_engine();
  auto& s = dnnl_stream();
  thread_local std::vector<float> x_buf, y_buf;
  memory user_x(plan->user_x_md, eng, const_cast<float*>(x)), user_y(plan->user_y_md, eng, y);
  memory x_mem = user_x, y_mem = user_y;
  if (plan->reorder_x) {
    x_buf.resize(std::max(x_buf.size(), static_cast<size_t>(d.n * d.c * d.h * d.w)));
    x_mem = memory(plan->pd.src_desc(), eng, x_buf.data());
    plan->x_reorder.execute(s, user_x, x_mem);
  }
  if (plan->reorder_y) {
    y_buf.resize(std::max(y_buf.size(), static_cast<size_t>(d.n * d.c * d.oh * d.ow)));
    y_mem = memory(plan->pd.dst_desc(), eng, y_buf.data());
  }
  plan->prim.execute(s, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_DST, y_mem}});
  if (plan->reorder_y) plan->y_reorder.execute(s, y_mem, user_y);
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
