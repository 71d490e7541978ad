// The Python module: checksum(bytes) combines every generated kernel.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>

#include "kernels.h"

static PyObject* checksum(PyObject*, PyObject* args) {
  Py_buffer view;
  if (!PyArg_ParseTuple(args, "y*", &view)) return nullptr;
  std::uint64_t acc = 0;
  const auto* data = static_cast<const unsigned char*>(view.buf);
  for (auto kernel : fastext_kernels) acc ^= kernel(data, static_cast<std::size_t>(view.len));
  PyBuffer_Release(&view);
  return PyLong_FromUnsignedLongLong(acc);
}

static PyObject* kernel_count(PyObject*, PyObject*) {
  return PyLong_FromLong(static_cast<long>(sizeof(fastext_kernels) / sizeof(fastext_kernels[0])));
}

static PyMethodDef methods[] = {
    {"checksum", checksum, METH_VARARGS, "Checksum of a bytes object over every kernel."},
    {"kernel_count", kernel_count, METH_NOARGS, "How many kernels were compiled in."},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
