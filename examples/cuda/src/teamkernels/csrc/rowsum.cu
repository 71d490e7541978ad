// The sum of each row: one block per row, a shared-memory tree then warp shuffles.
#include <torch/library.h>

#include "check.cuh"

namespace {

constexpr int kThreads = 256;

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void row_sum_kernel(const float* x, float* out, int64_t cols) {
  __shared__ float partial[kThreads / 32];
  const float* row = x + blockIdx.x * cols;
  float v = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) v += row[c];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}

at::Tensor row_sum(const at::Tensor& x) {
  TEAMKERNELS_CHECK_CUDA_FLOAT(x);
  TORCH_CHECK(x.dim() == 2, "x must be 2-D");
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = at::empty({x.size(0)}, x.options());
  if (x.size(0) == 0) return out;
  row_sum_kernel<<<static_cast<unsigned>(x.size(0)), kThreads, 0,
                   at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(),
                                                       x.size(1));
  TEAMKERNELS_CHECK_LAUNCH();
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(teamkernels, CUDA, m) { m.impl("row_sum", &row_sum); }
