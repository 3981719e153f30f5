"""The C text every generated file starts with: includes, the thread helpers, integer and
floating-point helpers with Python's semantics, libmvec's SIMD declarations and the
buffer helpers (temporaries, kept copies). ``INT_HELPERS`` and ``fmod_helper`` are shared
with the OpenCL prelude."""

# Integer helpers both targets print (C and OpenCL C): floor division and modulo with
# Python's signs, min/max per type, and element-level // and % with NumPy's semantics.
INT_HELPERS = r"""static inline int64_t pd_floord(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pd_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t pd_min(int64_t a, int64_t b) { return b < a ? b : a; }
static inline int64_t pd_max(int64_t a, int64_t b) { return b > a ? b : a; }
#define PD_MINMAX(T, S) \
  static inline T pd_min_##S(T a, T b) { return b < a ? b : a; } \
  static inline T pd_max_##S(T a, T b) { return b > a ? b : a; }
PD_MINMAX(float, f32)
PD_MINMAX(int32_t, i32)
PD_MINMAX(int64_t, i64)
/* element-level integer // and % (NumPy semantics: division by zero gives 0, no trap) */
static inline int32_t pd_floord_i32(int32_t a, int32_t b) {
  return b ? (int32_t)pd_floord(a, b) : 0;
}
static inline int64_t pd_floord_i64(int64_t a, int64_t b) { return b ? pd_floord(a, b) : 0; }
static inline int32_t pd_mod_i32(int32_t a, int32_t b) { return b ? (int32_t)pd_mod(a, b) : 0; }
static inline int64_t pd_mod_i64(int64_t a, int64_t b) { return b ? pd_mod(a, b) : 0; }
"""


def fmod_helper(ctype: str, suffix: str, fmod: str) -> str:
    """``pd_fmod_<suffix>``: floating-point % with Python's sign (of the divisor)."""
    return (f"static inline {ctype} pd_fmod_{suffix}({ctype} a, {ctype} b) {{\n"
            f"  {ctype} r = {fmod}(a, b);\n"
            "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n")


PRELUDE = r"""#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
static inline int64_t pd_threads(void) { return omp_get_max_threads(); }
static inline int64_t pd_team_size(void) { return omp_get_num_threads(); }
static inline int64_t pd_team_id(void) { return omp_get_thread_num(); }
#else
static inline int64_t pd_threads(void) { return 1; }
static inline int64_t pd_team_size(void) { return 1; }
static inline int64_t pd_team_id(void) { return 0; }
#endif
#if defined(__GLIBC__) && defined(__x86_64__) && defined(PD_LIBMVEC)
/* glibc's vector math library (libmvec) has SIMD variants of these: declaring them lets the
   vectorizer call them in simd loops (<= 4 ulp, as glibc documents) */
#define PD_SIMD __attribute__((__simd__("notinbranch")))
float expf(float) PD_SIMD; double exp(double) PD_SIMD;
float logf(float) PD_SIMD; double log(double) PD_SIMD;
float sinf(float) PD_SIMD; double sin(double) PD_SIMD;
float cosf(float) PD_SIMD; double cos(double) PD_SIMD;
float tanhf(float) PD_SIMD; double tanh(double) PD_SIMD;
float erff(float) PD_SIMD; double erf(double) PD_SIMD;
#endif

""" + INT_HELPERS + "PD_MINMAX(double, f64)\n" + fmod_helper("float", "f32", "fmodf") + \
    fmod_helper("double", "f64", "fmod") + r"""
static inline void *pd_alloc(size_t bytes, int zero) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  if (zero) memset(p, 0, bytes);
  return p;
}
/* A buffer kept for the next call at the same place (`slot`: a static of the function).
   A buffer of several MiB otherwise comes from fresh pages on every call, each faulted in
   again (conv's 9.4 MiB copy of its weights at 512 channels: 3 of a 4.8 ms call). Safe
   under concurrent calls: one that finds the slot empty allocates a buffer of its own, and
   the last one given back stays. */
static inline void *pd_take(_Atomic(void *) *slot, size_t bytes) {
  char *b = (char *)atomic_exchange(slot, NULL);
  if (b != NULL && *(size_t *)b >= bytes) return b + 64;
  free(b);
  if (posix_memalign((void **)&b, 64, bytes + 64) != 0) return NULL;
  *(size_t *)b = bytes;
  return b + 64;
}
static inline void pd_give(_Atomic(void *) *slot, void *p) {
  if (p != NULL) free(atomic_exchange(slot, (char *)p - 64));
}
/* A temporary at the offset within its page that `like` (an argument it is used with) has,
   so that a load of one and a store to the other at the same subscripts differ in their
   low 12 address bits only when they are the same cell: no 4K aliasing between them (a
   load waits on an earlier store whose address matches those bits; jacobi-2d ran up to a
   fifth slower at some offsets of A against its temporary B). `like` NULL: page-aligned.
   free() takes `*base`. */
static inline void *pd_alloc_like(size_t bytes, int zero, const void *like, void **base) {
  const size_t off = (size_t)((uintptr_t)like & 4095);
  if (posix_memalign(base, 4096, (bytes ? bytes : 64) + off) != 0) {
    *base = NULL;
    return NULL;
  }
  if (zero) memset((char *)*base + off, 0, bytes);
  return (char *)*base + off;
}
/* A variant's function: static in this file. polydyn's own build compiles each variant as a
   translation unit of its own, in parallel, and links them with the variants hidden. */
#ifndef PD_VARIANT
#define PD_VARIANT static
#endif
"""


# ``pd_tr16_f32``: a 16 x 16 tile of floats transposed, in AVX-512 registers where the target
# has them, in four 8 x 8 blocks of AVX registers where it has those. Printed before the
# variant functions that call it (``emit.CEmitter``), not in the prelude: <immintrin.h>
# costs every translation unit's compile time. The guard keeps it to one definition where
# the units build as one file.
TRANSPOSE16 = r"""#ifndef PD_TR16
#define PD_TR16
/* dst[c * ld + r] = src[r * ls + c] for r, c < 16: a repacked copy's whole 16 x 16 tile
   (codegen_c/repack.py), a transposing copy's (codegen_c/transposes.py), transposed in
   registers where AVX-512 is there, as four 8 x 8 blocks where AVX is */
#if defined(__AVX__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
#define PD_LO64(a, b) \
  _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
#define PD_HI64(a, b) \
  _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
#endif
static inline void pd_tr16_f32(const float *src, int64_t ls, float *dst, int64_t ld) {
#if defined(__AVX512F__)
  __m512 r[16], t[16];
  for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * ls);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = PD_LO64(t[i], t[i + 2]);
    r[i + 1] = PD_HI64(t[i], t[i + 2]);
    r[i + 2] = PD_LO64(t[i + 1], t[i + 3]);
    r[i + 3] = PD_HI64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; i++) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * ld, r[i]);
#elif defined(__AVX__)
  for (int b = 0; b < 4; b++) {  /* four 8 x 8 blocks, each to its mirrored place */
    const float *s = src + (b >> 1) * 8 * ls + (b & 1) * 8;
    float *d = dst + (b & 1) * 8 * ld + (b >> 1) * 8;
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(s + i * ls);
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
      _mm256_storeu_ps(d + i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
      _mm256_storeu_ps(d + (i + 4) * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
  }
#else
  for (int64_t c = 0; c < 16; c++)
    for (int64_t r = 0; r < 16; r++) dst[c * ld + r] = src[r * ls + c];
#endif
}
#endif
"""

# ``pd_level``/``pd_slot``: which of a function's per-thread panels (codegen_c/repack.py,
# ``Repacks.panel_plan``) the calling thread owns. Printed before the functions that have
# panels, like ``TRANSPOSE16``.
PANEL_SLOT = r"""#ifndef PD_PANEL
#define PD_PANEL
/* The calling thread's number in the team of the function's own parallel region (level
   lv + 1, lv the level the function was called at), 0 outside one: a caller's own threads,
   each calling the function, have each a buffer of their own (pd_take). */
#ifdef _OPENMP
static inline int pd_level(void) { return omp_get_level(); }
static inline int64_t pd_slot(int lv) {
  const int t = omp_get_ancestor_thread_num(lv + 1);
  return t < 0 ? 0 : t;
}
#else
static inline int pd_level(void) { return 0; }
static inline int64_t pd_slot(int lv) { (void)lv; return 0; }
#endif
#endif
"""

# ``pd_exp_f32``: exp of a float, where AVX-512 is there without libmvec's slow lanes. glibc's
# vector expf sends every lane whose result is not a normal number (x < -87.3, x > 88.7:
# a softmax's -10000 or -inf mask) through its scalar fallback, 20-35x slower a lane; this
# one (Cephes' polynomial, the scale 2^n applied as two powers of two, +0 for x < -104)
# runs every lane alike at libmvec's speed, within 1.01 ulp of exp over all floats, with
# inf, -inf and NaN right. Without AVX-512 gcc 12 does not vectorize it (its selects stay
# branches: the operations they choose from may trap), so there it is expf. Printed before
# the functions that call it, like ``TRANSPOSE16``.
EXP_F32 = r"""#ifndef PD_EXPF
#define PD_EXPF
#if defined(__AVX512F__)
static inline float pd_exp_f32(float x) {
  /* quiet comparisons: no invalid-operation flag on NaN, and gcc keeps them as selects */
  const float h = __builtin_isgreater(x, 89.0f) ? 89.0f : x;
  const float c = __builtin_isless(h, -104.0f) ? -104.0f : h;
  const float n = __builtin_rintf(c * 1.44269504088896341f);
  const float r = (c - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = (p * (r * r) + r) + 1.0f;
  const int32_t k = (int32_t)n, k1 = k >> 1;
  const int32_t k2 = __builtin_isless(x, -104.0f) ? -127 : k - k1; /* 2^-127: +0's bits */
  union { int32_t i; float f; } s1 = {(k1 + 127) << 23}, s2 = {(k2 + 127) << 23};
  return y * s1.f * s2.f;
}
#else
static inline float pd_exp_f32(float x) { return expf(x); }
#endif
#endif
"""
