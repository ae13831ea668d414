// core/cuda_graph.h on the compute stream (the CUDA Graph the trainers
// replay each step, train/step_graph.h): captured work — a kernel, a device
// copy, a memset — runs only when the graph is launched, and every launch
// reads the current contents of the buffers it was captured with; a
// device->host read inside the capture fails it with a reason, runs
// nothing, and leaves the stream usable for eager work.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda_graph.h"
#include "cuda_test_util.h"
#include "kernels/elementwise.h"

namespace vt {
namespace {

TEST(CudaGraph, EachLaunchReadsTheBuffersCurrentValues) {
  VT_SKIP_WITHOUT_GPU();
  const Device dev = Device::cuda(0);
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {4}).to(dev);
  Tensor y = Tensor::zeros({4}, DType::F32, dev), z = Tensor::full({4}, -1.0f, dev);
  CudaGraph g;
  std::string why;
  ASSERT_TRUE(g.capture(
      [&] {
        y.zero();
        scale(x, 2.0f, y);
        z.copy_from(y);
      },
      &why))
      << why;
  EXPECT_TRUE(g.ready());
  EXPECT_EQ(z.to_vector(), std::vector<float>({-1, -1, -1, -1}));  // captured, not run
  const int64_t launches = cuda_graph_launches();
  g.launch();
  EXPECT_EQ(z.to_vector(), std::vector<float>({2, 4, 6, 8}));
  x.copy_from(Tensor::from_vector({10, 20, 30, 40}, {4}));
  g.launch();
  EXPECT_EQ(z.to_vector(), std::vector<float>({20, 40, 60, 80}));
  EXPECT_EQ(cuda_graph_launches() - launches, 2);
  g.reset();
  EXPECT_FALSE(g.ready());
}

TEST(CudaGraph, AHostReadInsideTheCaptureFailsItAndRunsNothing) {
  VT_SKIP_WITHOUT_GPU();
  const Device dev = Device::cuda(0);
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {4}).to(dev);
  Tensor y = Tensor::zeros({4}, DType::F32, dev);
  CudaGraph g;
  std::string why;
  EXPECT_FALSE(g.capture(
      [&] {
        scale(x, 2.0f, y);
        (void)y.to(Device::cpu());  // the host waits: not capturable
      },
      &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(g.ready());
  EXPECT_FALSE(cuda_capturing());
  EXPECT_EQ(y.to_vector(), std::vector<float>({0, 0, 0, 0}));  // the captured kernel never ran
  scale(x, 3.0f, y);  // eager work goes on
  EXPECT_EQ(y.to_vector(), std::vector<float>({3, 6, 9, 12}));
}

}  // namespace
}  // namespace vt
