// The schema of each op and the Python module that loads them. Only the stable (limited)
// Python C API is used, so one abi3 wheel serves every CPython >= 3.9.
#include <Python.h>
#include <torch/library.h>

extern "C" {
// `import teamkernels._C` finds this; loading the library ran the TORCH_LIBRARY blocks.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
}

TORCH_LIBRARY(teamkernels, m) {
  m.def("saxpy(float a, Tensor x, Tensor y) -> Tensor");
  m.def("row_sum(Tensor x) -> Tensor");
  m.def("arch(Tensor like) -> int");
}
