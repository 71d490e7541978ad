// out = a * x + y, one thread per element (grid-stride loop).
#include <torch/library.h>

#include "check.cuh"

namespace {

__global__ void saxpy_kernel(float a, const float* x, const float* y, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)blockDim.x * gridDim.x) {
    out[i] = a * x[i] + y[i];
  }
}

at::Tensor saxpy(double a, const at::Tensor& x, const at::Tensor& y) {
  TEAMKERNELS_CHECK_CUDA_FLOAT(x);
  TEAMKERNELS_CHECK_CUDA_FLOAT(y);
  TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape");
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  saxpy_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      static_cast<float>(a), x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  TEAMKERNELS_CHECK_LAUNCH();
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(teamkernels, CUDA, m) { m.impl("saxpy", &saxpy); }
