// Which compiled code really ran: the kernel writes __CUDA_ARCH__ as the compiler saw it
// (SASS for sm_90 says 900; PTX JIT-compiled from compute_120 would say 1200).
#include <torch/library.h>

#include "check.cuh"

namespace {

__global__ void arch_kernel(int* out) {
#ifdef __CUDA_ARCH__
  *out = __CUDA_ARCH__;
#endif
}

int64_t arch(const at::Tensor& like) {
  TORCH_CHECK(like.is_cuda(), "like must be a CUDA tensor (it names the device)");
  const c10::cuda::CUDAGuard guard(like.device());
  auto out = at::zeros({1}, like.options().dtype(at::kInt));
  arch_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(out.data_ptr<int>());
  TEAMKERNELS_CHECK_LAUNCH();
  return out.item<int>();
}

}  // namespace

TORCH_LIBRARY_IMPL(teamkernels, CUDA, m) { m.impl("arch", &arch); }
