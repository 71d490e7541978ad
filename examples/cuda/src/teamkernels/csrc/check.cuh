// Argument checks shared by the kernels' launchers.
#pragma once
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define TEAMKERNELS_CHECK_CUDA_FLOAT(t)                                              \
  TORCH_CHECK((t).is_cuda(), #t " must be a CUDA tensor");                          \
  TORCH_CHECK((t).scalar_type() == at::kFloat, #t " must be float32");              \
  TORCH_CHECK((t).is_contiguous(), #t " must be contiguous")

#define TEAMKERNELS_CHECK_LAUNCH() C10_CUDA_KERNEL_LAUNCH_CHECK()
