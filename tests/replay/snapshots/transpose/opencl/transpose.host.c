/* the OpenCL host code of transpose in C (polydyn, codegen_ocl/host_c.py) */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* the OpenCL entry points used, with their OpenCL 1.2 prototypes (handles as void *) */
static int32_t (*pd_clSetKernelArg)(void *, uint32_t, size_t, const void *);
static int32_t (*pd_clEnqueueNDRangeKernel)(void *, void *, uint32_t, const size_t *,
                                            const size_t *, const size_t *, uint32_t,
                                            const void *, void *);
static int32_t (*pd_clEnqueueFillBuffer)(void *, void *, const void *, size_t, size_t, size_t,
                                         uint32_t, const void *, void *);
static int32_t (*pd_clFinish)(void *);

/* Take the entry points from the ICD loader at `loader`: 0, or 1 when it cannot be opened,
   2 when an entry point is missing. */
int pd_init(const char *loader) {
  void *lib = dlopen(loader, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 1;
  *(void **)&pd_clSetKernelArg = dlsym(lib, "clSetKernelArg");
  *(void **)&pd_clEnqueueNDRangeKernel = dlsym(lib, "clEnqueueNDRangeKernel");
  *(void **)&pd_clEnqueueFillBuffer = dlsym(lib, "clEnqueueFillBuffer");
  *(void **)&pd_clFinish = dlsym(lib, "clFinish");
  return pd_clSetKernelArg && pd_clEnqueueNDRangeKernel && pd_clEnqueueFillBuffer &&
         pd_clFinish ? 0 : 2;
}

/* Python's // and % (rounding toward minus infinity); b > 0 */
static inline int64_t pd_floord(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t pd_mod(int64_t a, int64_t b) { return a - b * pd_floord(a, b); }
static inline int64_t pd_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t pd_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* the slots of a call (module docstring of codegen_ocl/host_c.py) */
enum { PD_QUEUE, PD_KERNELS, PD_VARIANT, PD_LOCAL_LIMIT, PD_FINISH, PD_ERR_CALL,
       PD_ERR_KERNEL, PD_ERR_ARG, PD_UNITS, PD_HEAD };
/* the failing call, in PD_ERR_CALL */
enum { PD_SET_ARG = 1, PD_ENQUEUE = 2, PD_FILL = 3, PD_FINISH_CALL = 4 };
typedef struct { int64_t *slot; void *queue; void *const *kernels; } pd_call;

static int pd_fail(const pd_call *c, int call, int kernel, int arg, int32_t rc) {
  c->slot[PD_ERR_CALL] = call;
  c->slot[PD_ERR_KERNEL] = kernel;
  c->slot[PD_ERR_ARG] = arg;
  return rc;
}

#define PD_NSYMS 2
#define PD_NTAIL 2
#define PD_NVARIANTS 5
/* per argument after the syms: bytes of a value, 0 for a buffer; whether the call
   writes it (a written buffer may not be another argument's too) */
static const unsigned char pd_tail_bytes[] = {0, 0};
static const unsigned char pd_tail_written[] = {0, 1};
/* each kernel's work-group size, dimension 0 first */
static const size_t pd_local_size[][3] = {{256}, {16, 16}, {16, 16}, {16, 16}, {16, 16}};

/* One launch (the Python host code's _launch): nothing when a dimension has no group; the
   kernel's arguments are the syms, the host loop values, the offsets, the call's buffers
   and values, then the __local buffers sized here. */
static int pd_enqueue(const pd_call *c, int kid, const int64_t *hosts, int n_hosts,
                      const int64_t *offsets, int n_offsets, const int64_t *groups,
                      int dims, const int64_t *local_bytes, int n_local) {
  for (int d = 0; d < dims; d++)
    if (groups[d] <= 0) return 0;
  void *kernel = c->kernels[kid];
  const int64_t *tail = c->slot + PD_HEAD + PD_NSYMS;
  uint32_t arg = 0;
  int32_t rc = 0;
  for (int j = 0; j < PD_NSYMS && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, c->slot + PD_HEAD + j);
  for (int j = 0; j < n_hosts && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, hosts + j);
  for (int j = 0; j < n_offsets && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, offsets + j);
  for (int j = 0; j < PD_NTAIL && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, pd_tail_bytes[j] ? pd_tail_bytes[j] : sizeof(void *),
                           tail + j);
  for (int j = 0; j < n_local && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, (size_t)local_bytes[j], NULL);
  if (rc) return pd_fail(c, PD_SET_ARG, kid, (int)arg - 1, rc);
  size_t global[3], local[3];
  for (int d = 0; d < dims; d++) {
    local[d] = pd_local_size[kid][d];
    global[d] = (size_t)groups[dims - 1 - d] * local[d];
  }
  rc = pd_clEnqueueNDRangeKernel(c->queue, kernel, (uint32_t)dims, NULL, global, local, 0,
                                 NULL, NULL);
  return rc ? pd_fail(c, PD_ENQUEUE, kid, -1, rc) : 0;
}

static int64_t pd_select(const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  if ((!((pd_v_N >= 0) && (pd_v_M >= 0)))) {
    return (-1);
  }
  if ((pd_v_N == 1)) {
    return 0;
  }
  if (((((pd_v_N >= 16) && (pd_v_M >= 16)) && (pd_mod(pd_v_N, 16) == 0)) && (pd_mod(pd_v_M, 16) == 0))) {
    return 1;
  }
  if (((pd_v_N >= 16) && (pd_v_M >= 16))) {
    return 2;
  }
  if ((((pd_v_N >= 16) && (pd_v_M <= 15)) || (pd_v_N <= 15))) {
    return 3;
  }
  if (1) {
    return 4;
  }
  return (-1);
}
static int pd_variant_0(const pd_call *pd_c, const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  int64_t pd_v__o[1];
  if ((pd_v_M >= 1)) {
    pd_v__o[0] = 0;
    {
      const int64_t pd_groups[] = {(pd_floord(((pd_v_M - 1) - pd_v__o[0]), 256) + 1)};
      int pd_rc = pd_enqueue(pd_c, 0, NULL, 0, pd_v__o, 1, pd_groups, 1, NULL, 0);
      if (pd_rc) return pd_rc;
    }
  }
  return 0;
}
static int pd_variant_1(const pd_call *pd_c, const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  int64_t pd_v__o[2];
  if (1) {
    pd_v__o[0] = 0;
    pd_v__o[1] = 0;
    {
      const int64_t pd_groups[] = {(pd_floord(((pd_v_N - 1) - pd_v__o[0]), 16) + 1), (pd_floord(((pd_v_M - 1) - pd_v__o[1]), 16) + 1)};
      int pd_rc = pd_enqueue(pd_c, 1, NULL, 0, pd_v__o, 2, pd_groups, 2, NULL, 0);
      if (pd_rc) return pd_rc;
    }
  }
  return 0;
}
static int pd_variant_2(const pd_call *pd_c, const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  int64_t pd_v__o[2];
  if (1) {
    pd_v__o[0] = 0;
    pd_v__o[1] = 0;
    {
      const int64_t pd_groups[] = {(pd_floord(((pd_v_N - 1) - pd_v__o[0]), 16) + 1), (pd_floord(((pd_v_M - 1) - pd_v__o[1]), 16) + 1)};
      int pd_rc = pd_enqueue(pd_c, 2, NULL, 0, pd_v__o, 2, pd_groups, 2, NULL, 0);
      if (pd_rc) return pd_rc;
    }
  }
  return 0;
}
static int pd_variant_3(const pd_call *pd_c, const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  int64_t pd_v__o[2];
  if (((((pd_v_N >= 16) && (pd_v_M >= 1)) && (pd_v_M <= 15)) || (((pd_v_N >= 1) && (pd_v_N <= 15)) && (pd_v_M >= 1)))) {
    pd_v__o[0] = 0;
    pd_v__o[1] = 0;
    {
      const int64_t pd_groups[] = {(pd_floord(((pd_v_N - 1) - pd_v__o[0]), 16) + 1), (pd_floord(((pd_v_M - 1) - pd_v__o[1]), 16) + 1)};
      int pd_rc = pd_enqueue(pd_c, 3, NULL, 0, pd_v__o, 2, pd_groups, 2, NULL, 0);
      if (pd_rc) return pd_rc;
    }
  }
  return 0;
}
static int pd_variant_4(const pd_call *pd_c, const int64_t *pd_s) {
  const int64_t pd_v_N = pd_s[0];
  const int64_t pd_v_M = pd_s[1];
  int64_t pd_v__o[2];
  if (((pd_v_N >= 1) && (pd_v_M >= 1))) {
    pd_v__o[0] = 0;
    pd_v__o[1] = 0;
    {
      const int64_t pd_groups[] = {(pd_floord(((pd_v_N - 1) - pd_v__o[0]), 16) + 1), (pd_floord(((pd_v_M - 1) - pd_v__o[1]), 16) + 1)};
      int pd_rc = pd_enqueue(pd_c, 4, NULL, 0, pd_v__o, 2, pd_groups, 2, NULL, 0);
      if (pd_rc) return pd_rc;
    }
  }
  return 0;
}

static int (*const pd_variants[])(const pd_call *, const int64_t *) = {pd_variant_0, pd_variant_1, pd_variant_2, pd_variant_3, pd_variant_4};

/* Whether a buffer the call writes is also another argument (the Python path copies). */
static int pd_aliased(const int64_t *tail) {
  for (int i = 0; i < PD_NTAIL; i++) {
    if (pd_tail_bytes[i] || !pd_tail_written[i] || !tail[i]) continue;
    for (int j = 0; j < PD_NTAIL; j++)
      if (j != i && !pd_tail_bytes[j] && tail[j] == tail[i]) return 1;
  }
  return 0;
}

/* The call: 0, 1 (declined, nothing enqueued) or the failed OpenCL call's error code. */
int pd_launch(int64_t *slot) {
  pd_call c = {slot, (void *)slot[PD_QUEUE], (void *const *)slot[PD_KERNELS]};
  const int64_t *syms = slot + PD_HEAD;
  const int64_t *tail = syms + PD_NSYMS;
  int64_t variant = slot[PD_VARIANT] >= 0 ? slot[PD_VARIANT] : pd_select(syms);
  if (variant < 0 || variant >= PD_NVARIANTS || pd_aliased(tail)) return 1;
  static const unsigned char zero = 0;
  for (int j = 0; j < PD_NTAIL; j++) {  /* buffers to zero first: their bytes follow */
    size_t bytes = (size_t)tail[PD_NTAIL + j];
    if (!bytes || pd_tail_bytes[j]) continue;
    int32_t rc = pd_clEnqueueFillBuffer(c.queue, (void *)tail[j], &zero, 1, 0, bytes, 0, NULL,
                                        NULL);
    if (rc) return pd_fail(&c, PD_FILL, -1, j, rc);
  }
  int rc = pd_variants[variant](&c, syms);
  if (rc) return rc;
  if (slot[PD_FINISH]) {
    rc = pd_clFinish(c.queue);
    if (rc) return pd_fail(&c, PD_FINISH_CALL, -1, -1, rc);
  }
  return 0;
}

