#include "kernels/cpu/conv.h"

#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/dnnl_context.h"

namespace vt {
namespace cpu {
namespace {

using dnnl::memory;
using Key = std::vector<int64_t>;

// The convolution runs in the layouts oneDNN prefers ("any": channel-blocked
// nChw16c / nChw8c on AVX-512 / AVX2, where its JIT kernels live; plain NCHW
// with odd channel counts falls back to a reference loop that is orders of
// magnitude slower). The caller's (possibly strided) NCHW source, weights
// and destination are reordered to and from per-thread scratch buffers, so a
// branch output still lands directly in its channel slice of a concat buffer.
struct ConvPlan {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory::desc user_x_md, user_w_md, user_y_md;
  bool reorder_x = false, reorder_w = false, reorder_y = false;
  dnnl::reorder x_reorder, w_reorder, y_reorder;
  // Frozen weights already in pd.weights_desc() (CpuConvOptions::weights_owner),
  // by address: layers of one shape share the plan.
  struct Packed {
    std::weak_ptr<const void> owner;
    memory mem;
  };
  std::mutex packed_mu;
  std::map<const float*, Packed> packed;
};

Key make_key(const Conv2dDesc& d) {
  Key k = {d.n, d.c, d.h, d.w, d.o, d.kh, d.kw, d.oh, d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups, d.relu};
  for (int i = 0; i < 4; ++i) k.push_back(d.x_strides[i]);
  for (int i = 0; i < 4; ++i) k.push_back(d.y_strides[i]);
  return k;
}

// Winograd pays where its transforms are amortised over many input
// channels: at C = 3 or 4 (the VAE's conv_in) it is 1.5-3x slower than the
// direct kernel, at C >= 128 2-3x faster (2 threads, AVX-512).
bool winograd_shape(const Conv2dDesc& d) {
  return d.kh == 3 && d.kw == 3 && d.sh == 1 && d.sw == 1 && d.dh == 1 && d.dw == 1 && d.groups == 1 && d.c >= 64;
}

std::shared_ptr<ConvPlan> build_plan(const Conv2dDesc& d, bool with_bias, bool winograd) {
  auto& eng = dnnl_engine();
  const auto f32 = memory::data_type::f32;
  memory::desc x_md({d.n, d.c, d.h, d.w}, f32,
                    memory::dims{d.x_strides[0], d.x_strides[1], d.x_strides[2], d.x_strides[3]});
  memory::desc y_md({d.n, d.o, d.oh, d.ow}, f32,
                    memory::dims{d.y_strides[0], d.y_strides[1], d.y_strides[2], d.y_strides[3]});
  memory::desc any_x_md({d.n, d.c, d.h, d.w}, f32, memory::format_tag::any);
  memory::desc any_y_md({d.n, d.o, d.oh, d.ow}, f32, memory::format_tag::any);
  memory::desc user_w_md, any_w_md;
  if (d.groups == 1) {
    user_w_md = memory::desc({d.o, d.c, d.kh, d.kw}, f32, memory::format_tag::oihw);
    any_w_md = memory::desc({d.o, d.c, d.kh, d.kw}, f32, memory::format_tag::any);
  } else {
    const int64_t g = d.groups;
    user_w_md = memory::desc({g, d.o / g, d.c / g, d.kh, d.kw}, f32, memory::format_tag::goihw);
    any_w_md = memory::desc({g, d.o / g, d.c / g, d.kh, d.kw}, f32, memory::format_tag::any);
  }
  memory::desc b_md = with_bias ? memory::desc({d.o}, f32, memory::format_tag::x) : memory::desc();
  // oneDNN counts dilation from 0 (0 = dense), PyTorch from 1.
  memory::dims strides = {d.sh, d.sw}, dil = {d.dh - 1, d.dw - 1}, pad_l = {d.ph, d.pw};
  // Right/bottom padding so that oneDNN's output size equals PyTorch's floor rule.
  const int64_t pr_h = (d.oh - 1) * d.sh + (d.kh - 1) * d.dh + 1 - d.h - d.ph;
  const int64_t pr_w = (d.ow - 1) * d.sw + (d.kw - 1) * d.dw + 1 - d.w - d.pw;
  memory::dims pad_r = {pr_h, pr_w};
  dnnl::primitive_attr attr;
  if (d.relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  auto make_pd = [&](dnnl::algorithm alg) {
    dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference, alg, any_x_md, any_w_md, b_md, any_y_md,
                                       strides, dil, pad_l, pad_r);
    return dnnl::convolution_forward::primitive_desc(cd, attr, eng);
  };
  auto plan = std::make_shared<ConvPlan>();
  bool have_pd = false;
  if (winograd && winograd_shape(d)) {
    // oneDNN reports "unimplemented" where it has no Winograd kernel (no
    // AVX-512, channel counts it does not block): then the direct one.
    try {
      plan->pd = make_pd(dnnl::algorithm::convolution_winograd);
      have_pd = true;
    } catch (const dnnl::error&) {
    }
  }
  if (!have_pd) plan->pd = make_pd(dnnl::algorithm::convolution_direct);
  plan->prim = dnnl::convolution_forward(plan->pd);
  plan->user_x_md = x_md, plan->user_w_md = user_w_md, plan->user_y_md = y_md;
  plan->reorder_x = plan->pd.src_desc() != x_md;
  plan->reorder_w = plan->pd.weights_desc() != user_w_md;
  plan->reorder_y = plan->pd.dst_desc() != y_md;
  if (plan->reorder_x) plan->x_reorder = dnnl::reorder(memory(x_md, eng), memory(plan->pd.src_desc(), eng));
  if (plan->reorder_w) plan->w_reorder = dnnl::reorder(memory(user_w_md, eng), memory(plan->pd.weights_desc(), eng));
  if (plan->reorder_y) plan->y_reorder = dnnl::reorder(memory(plan->pd.dst_desc(), eng), memory(y_md, eng));
  return plan;
}

std::shared_ptr<ConvPlan> get_plan(const Conv2dDesc& d, bool with_bias, bool winograd) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<ConvPlan>> cache;
  Key key = make_key(d);
  key.push_back(with_bias);
  key.push_back(winograd && winograd_shape(d));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto plan = build_plan(d, with_bias, winograd);
  cache.emplace(key, plan);
  return plan;
}

}  // namespace

namespace {

// Grows `buf` to hold `md` and returns a memory object over it.
memory scratch(std::vector<float>& buf, const memory::desc& md) {
  const size_t floats = (md.get_size() + sizeof(float) - 1) / sizeof(float);
  if (buf.size() < floats) buf.resize(floats);
  return memory(md, dnnl_engine(), buf.data());
}

// The reordered copy of frozen weights w (made on first use): Winograd's
// weight transform alone costs about a third of the convolution it feeds.
memory packed_weights(ConvPlan& plan, const float* w, const std::weak_ptr<const void>& owner) {
  std::lock_guard<std::mutex> lock(plan.packed_mu);
  auto it = plan.packed.find(w);
  if (it != plan.packed.end() && !it->second.owner.expired()) return it->second.mem;
  // Drop copies whose weights were freed (their address may come back).
  for (auto e = plan.packed.begin(); e != plan.packed.end();)
    e = e->second.owner.expired() ? plan.packed.erase(e) : std::next(e);
  auto& eng = dnnl_engine();
  memory user_w(plan.user_w_md, eng, const_cast<float*>(w));
  memory mem(plan.pd.weights_desc(), eng);
  plan.w_reorder.execute(dnnl_stream(), user_w, mem);
  dnnl_stream().wait();
  plan.packed[w] = {owner, mem};
  return mem;
}

}  // namespace

void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y,
                    const CpuConvOptions& opt) {
  auto plan = get_plan(d, b != nullptr, opt.winograd);
  auto& eng = dnnl_engine();
  auto& s = dnnl_stream();
  thread_local std::vector<float> x_buf, w_buf, y_buf;
  memory user_x(plan->user_x_md, eng, const_cast<float*>(x));
  memory user_w(plan->user_w_md, eng, const_cast<float*>(w));
  memory user_y(plan->user_y_md, eng, y);
  memory x_mem = user_x, w_mem = user_w, y_mem = user_y;
  if (plan->reorder_x) {
    x_mem = scratch(x_buf, plan->pd.src_desc());
    plan->x_reorder.execute(s, user_x, x_mem);
  }
  const bool frozen = !opt.weights_owner.expired();
  if (plan->reorder_w && frozen) {
    w_mem = packed_weights(*plan, w, opt.weights_owner);
  } else if (plan->reorder_w) {
    w_mem = scratch(w_buf, plan->pd.weights_desc());
    plan->w_reorder.execute(s, user_w, w_mem);
  }
  if (plan->reorder_y) y_mem = scratch(y_buf, plan->pd.dst_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}};
  if (b) args.emplace(DNNL_ARG_BIAS, memory(plan->pd.bias_desc(), eng, const_cast<float*>(b)));
  plan->prim.execute(s, args);
  if (plan->reorder_y) plan->y_reorder.execute(s, y_mem, user_y);
  s.wait();
}

}  // namespace cpu
}  // namespace vt
