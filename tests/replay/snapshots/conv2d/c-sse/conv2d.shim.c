#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static int pd_overlap(PyArrayObject *a, PyArrayObject *b) {
  char *a0 = PyArray_BYTES(a), *b0 = PyArray_BYTES(b);
  char *a1 = a0 + PyArray_NBYTES(a), *b1 = b0 + PyArray_NBYTES(b);
  return a0 < b1 && b0 < a1;
}
static PyObject *pd_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (nargs != 2) Py_RETURN_NOTIMPLEMENTED;
  int64_t pd_s_B = -1;
  int64_t pd_s_C = -1;
  int64_t pd_s_H = -1;
  int64_t pd_s_W = -1;
  int64_t pd_s_F = -1;
  int64_t pd_s_KH = -1;
  int64_t pd_s_KW = -1;
  PyArrayObject *b_Y = NULL;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  int nidx = 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, k);
    PyObject *val = args[nargs + k];
    if (PyUnicode_CompareWithASCIIString(key, "Y") == 0) {
      if (!PyArray_CheckExact(val)) Py_RETURN_NOTIMPLEMENTED;
      b_Y = (PyArrayObject *)val;
      if (PyArray_TYPE(b_Y) != NPY_FLOAT32 || PyArray_NDIM(b_Y) != 4 || !PyArray_IS_C_CONTIGUOUS(b_Y) || !PyArray_ISALIGNED(b_Y) || PyArray_ISBYTESWAPPED(b_Y) || !PyArray_ISWRITEABLE(b_Y)) Py_RETURN_NOTIMPLEMENTED;
    } else Py_RETURN_NOTIMPLEMENTED;
  }
  if (nidx != 0) Py_RETURN_NOTIMPLEMENTED;
  if (!PyArray_CheckExact(args[0])) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject *a_X = (PyArrayObject *)args[0];
  if (PyArray_TYPE(a_X) != NPY_FLOAT32 || PyArray_NDIM(a_X) != 4 || !PyArray_IS_C_CONTIGUOUS(a_X) || !PyArray_ISALIGNED(a_X) || PyArray_ISBYTESWAPPED(a_X)) Py_RETURN_NOTIMPLEMENTED;
  if (!PyArray_CheckExact(args[1])) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject *a_Wt = (PyArrayObject *)args[1];
  if (PyArray_TYPE(a_Wt) != NPY_FLOAT32 || PyArray_NDIM(a_Wt) != 4 || !PyArray_IS_C_CONTIGUOUS(a_Wt) || !PyArray_ISALIGNED(a_Wt) || PyArray_ISBYTESWAPPED(a_Wt)) Py_RETURN_NOTIMPLEMENTED;
  pd_s_B = (int64_t)PyArray_DIM(a_X, 0);
  pd_s_C = (int64_t)PyArray_DIM(a_X, 1);
  pd_s_H = (int64_t)PyArray_DIM(a_X, 2);
  pd_s_W = (int64_t)PyArray_DIM(a_X, 3);
  pd_s_F = (int64_t)PyArray_DIM(a_Wt, 0);
  pd_s_KH = (int64_t)PyArray_DIM(a_Wt, 2);
  pd_s_KW = (int64_t)PyArray_DIM(a_Wt, 3);
  if ((int64_t)PyArray_DIM(a_X, 0) != (pd_s_B)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_X, 1) != (pd_s_C)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_X, 2) != (pd_s_H)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_X, 3) != (pd_s_W)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_Wt, 0) != (pd_s_F)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_Wt, 1) != (pd_s_C)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_Wt, 2) != (pd_s_KH)) Py_RETURN_NOTIMPLEMENTED;
  if ((int64_t)PyArray_DIM(a_Wt, 3) != (pd_s_KW)) Py_RETURN_NOTIMPLEMENTED;
  npy_intp d_Y[4] = {(npy_intp)(pd_s_B), (npy_intp)(pd_s_F), (npy_intp)(((pd_s_H - pd_s_KH) + 1)), (npy_intp)(((pd_s_W - pd_s_KW) + 1))};
  for (int k = 0; k < 4; k++) if (d_Y[k] < 0 || (b_Y && PyArray_DIM(b_Y, k) != d_Y[k])) Py_RETURN_NOTIMPLEMENTED;
  if (b_Y && pd_overlap(b_Y, a_X)) Py_RETURN_NOTIMPLEMENTED;
  if (b_Y && pd_overlap(b_Y, a_Wt)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *o_Y = b_Y ? (Py_INCREF(b_Y), (PyObject *)b_Y) : PyArray_EMPTY(4, d_Y, NPY_FLOAT32, 0);
  if (!o_Y) {  return NULL; }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = conv2d(pd_s_B, pd_s_C, pd_s_H, pd_s_W, pd_s_F, pd_s_KH, pd_s_KW, (float *)PyArray_DATA(a_X), (float *)PyArray_DATA(a_Wt), (float *)PyArray_DATA((PyArrayObject *)o_Y));
  Py_END_ALLOW_THREADS
  if (rc != 0) { Py_XDECREF(o_Y); Py_RETURN_NOTIMPLEMENTED; }
  return o_Y;
}
static PyMethodDef pd_methods[] = {
  {"call", (PyCFunction)(void (*)(void))pd_fast, METH_FASTCALL | METH_KEYWORDS, "fast path"},
  {NULL, NULL, 0, NULL}
};
static struct PyModuleDef pd_module = {PyModuleDef_HEAD_INIT, "pd_conv2d_d83408decd94", NULL, -1, pd_methods};
PyMODINIT_FUNC PyInit_pd_conv2d_d83408decd94(void) {
  import_array();
  return PyModule_Create(&pd_module);
}
