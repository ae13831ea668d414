// cuDNN fused SDPA through the cuDNN frontend graph API; contract in
// kernels/cuda/attention_cudnn.h. Host code only (the kernels are cuDNN's).
#if defined(VT_CUDNN_SDPA) && !defined(VT_CUDA_EMU)
#include "kernels/cuda/attention_cudnn.h"

#include <cudnn_frontend.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/allocator.h"

namespace vt {
namespace cuda {

namespace {

namespace fe = cudnn_frontend;

// Tensor uids in the variant packs.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

std::string shape_str(int64_t B, int64_t T, int64_t H, int64_t Dh) {
  return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " H=" + std::to_string(H) +
         " Dh=" + std::to_string(Dh);
}

cudnnHandle_t handle_for_current_device() {
  thread_local std::map<int, cudnnHandle_t> handles;  // never destroyed: live until exit, like cuBLAS's
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) throw std::runtime_error("cudnn_sdpa: cudaGetDevice failed");
  auto it = handles.find(dev);
  if (it != handles.end()) return it->second;
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = cudnnCreate(&h);
  if (st != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cudnn_sdpa: cudnnCreate: ") + cudnnGetErrorString(st));
  handles[dev] = h;
  return h;
}

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>;  // device, B, T, H, Dh, backward

struct Entry {
  std::shared_ptr<fe::graph::Graph> graph;  // null: cuDNN rejected the shape
  int64_t workspace = 0;
  std::string error;
};

// Q/K/V of the packed qkv and O/dO as [B, H, T, Dh] views.
std::shared_ptr<fe::graph::Tensor_attributes> qkv_view(fe::graph::Graph& g, const char* name, int64_t uid,
                                                       int64_t B, int64_t T, int64_t H, int64_t Dh) {
  const int64_t D = H * Dh;
  return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({B, H, T, Dh}).set_stride(
      {3 * T * D, Dh, 3 * D, 1}));
}
std::vector<int64_t> out_stride(int64_t T, int64_t H, int64_t Dh) { return {T * H * Dh, Dh, H * Dh, 1}; }

std::shared_ptr<fe::graph::Graph> new_graph() {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

void build_forward(fe::graph::Graph& g, int64_t B, int64_t T, int64_t H, int64_t Dh) {
  auto q = qkv_view(g, "Q", kQ, B, T, H, Dh), k = qkv_view(g, "K", kK, B, T, H, Dh),
       v = qkv_view(g, "V", kV, B, T, H, Dh);
  auto opts = fe::graph::SDPA_attributes()
                  .set_name("sdpa")
                  .set_generate_stats(true)
                  .set_stats_use_log2(false)
                  .set_attn_scale(1.0f / std::sqrt(static_cast<float>(Dh)));
  auto [o, stats] = g.sdpa(q, k, v, opts);
  o->set_output(true).set_uid(kO).set_dim({B, H, T, Dh}).set_stride(out_stride(T, H, Dh));
  stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim({B, H, T, 1}).set_stride(
      {H * T, T, 1, 1});
}

void build_backward(fe::graph::Graph& g, int64_t B, int64_t T, int64_t H, int64_t Dh) {
  auto q = qkv_view(g, "Q", kQ, B, T, H, Dh), k = qkv_view(g, "K", kK, B, T, H, Dh),
       v = qkv_view(g, "V", kV, B, T, H, Dh);
  auto o = g.tensor(fe::graph::Tensor_attributes().set_name("O").set_uid(kO).set_dim({B, H, T, Dh}).set_stride(
      out_stride(T, H, Dh)));
  auto dO = g.tensor(fe::graph::Tensor_attributes().set_name("dO").set_uid(kDO).set_dim({B, H, T, Dh}).set_stride(
      out_stride(T, H, Dh)));
  auto stats = g.tensor(fe::graph::Tensor_attributes()
                            .set_name("Stats")
                            .set_uid(kStats)
                            .set_dim({B, H, T, 1})
                            .set_stride({H * T, T, 1, 1})
                            .set_data_type(fe::DataType_t::FLOAT));
  auto opts = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(
      1.0f / std::sqrt(static_cast<float>(Dh)));
  auto [dq, dk, dv] = g.sdpa_backward(q, k, v, o, dO, stats, opts);
  const int64_t D = H * Dh;
  const std::vector<int64_t> st = {3 * T * D, Dh, 3 * D, 1};
  dq->set_output(true).set_uid(kDQ).set_dim({B, H, T, Dh}).set_stride(st);
  dk->set_output(true).set_uid(kDK).set_dim({B, H, T, Dh}).set_stride(st);
  dv->set_output(true).set_uid(kDV).set_dim({B, H, T, Dh}).set_stride(st);
}

// The cached graph for the shape on the current device, built on first use.
const Entry& graph_for(int64_t B, int64_t T, int64_t H, int64_t Dh, bool backward) {
  static std::mutex mu;
  static std::map<Key, Entry> cache;
  int dev = 0;
  cudaGetDevice(&dev);
  const Key key{dev, B, T, H, Dh, backward};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Entry e;
  try {  // the frontend reports through error_t, but graph construction may also throw
    auto g = new_graph();
    if (backward)
      build_backward(*g, B, T, H, Dh);
    else
      build_forward(*g, B, T, H, Dh);
    cudnnHandle_t h = handle_for_current_device();
    fe::error_t st = g->build(h, {fe::HeurMode_t::A});
    if (st.is_good()) st = g->get_workspace_size(e.workspace);
    if (st.is_good())
      e.graph = g;
    else
      e.error = st.get_message();
  } catch (const std::exception& ex) {
    e.error = ex.what();
  }
  return cache.emplace(key, std::move(e)).first->second;
}

void run(const char* op, const Entry& e, std::unordered_map<int64_t, void*>& pack, cudaStream_t stream,
         int64_t B, int64_t T, int64_t H, int64_t Dh) {
  if (!e.graph) throw std::runtime_error(std::string(op) + ": cuDNN has no SDPA plan for " + shape_str(B, T, H, Dh) +
                                         ": " + e.error);
  cudnnHandle_t h = handle_for_current_device();
  cudnnSetStream(h, stream ? stream : cudaStreamPerThread);  // 0: the compute stream (see matmul.cu)
  int dev = 0;
  cudaGetDevice(&dev);
  void* ws = e.workspace > 0 ? cuda_alloc(static_cast<size_t>(e.workspace), dev, stream) : nullptr;
  fe::error_t st = e.graph->execute(h, pack, ws);
  if (ws) cuda_free(ws, dev);  // stream-ordered reuse: core/allocator.h "Streams"
  if (st.is_bad())
    throw std::runtime_error(std::string(op) + ": " + shape_str(B, T, H, Dh) + ": " + st.get_message());
}

}  // namespace

bool cudnn_sdpa_supported(int64_t B, int64_t T, int64_t H, int64_t Dh) {
  if (B <= 0 || T <= 0 || H <= 0 || Dh <= 0 || Dh % 8 != 0 || Dh > 256) return false;  // cuDNN's SDPA limits
  return graph_for(B, T, H, Dh, false).graph != nullptr && graph_for(B, T, H, Dh, true).graph != nullptr;
}

void cudnn_sdpa_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh,
                        cudaStream_t stream) {
  const int64_t D = H * Dh;
  auto* base = const_cast<uint16_t*>(static_cast<const uint16_t*>(qkv));  // bf16 elements
  std::unordered_map<int64_t, void*> pack = {
      {kQ, base}, {kK, base + D}, {kV, base + 2 * D}, {kO, out}, {kStats, lse}};
  run("cuda::cudnn_sdpa_forward", graph_for(B, T, H, Dh, false), pack, stream, B, T, H, Dh);
}

void cudnn_sdpa_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv,
                         int64_t B, int64_t T, int64_t H, int64_t Dh, cudaStream_t stream) {
  const int64_t D = H * Dh;
  auto* base = const_cast<uint16_t*>(static_cast<const uint16_t*>(qkv));
  auto* dbase = static_cast<uint16_t*>(dqkv);
  std::unordered_map<int64_t, void*> pack = {{kQ, base},
                                             {kK, base + D},
                                             {kV, base + 2 * D},
                                             {kO, const_cast<void*>(out)},
                                             {kStats, const_cast<float*>(lse)},
                                             {kDO, const_cast<void*>(dout)},
                                             {kDQ, dbase},
                                             {kDK, dbase + D},
                                             {kDV, dbase + 2 * D}};
  run("cuda::cudnn_sdpa_backward", graph_for(B, T, H, Dh, true), pack, stream, B, T, H, Dh);
}

}  // namespace cuda
}  // namespace vt
#endif
