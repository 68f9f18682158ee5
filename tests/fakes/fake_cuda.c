/* A stand-in libcuda.so.1 for the node check's tests: device memory is host
 * memory, and a "launch" of gpubundle's kernel computes what the PTX does.
 *   FAKE_CUDA_INIT     cuInit's return code (default 0)
 *   FAKE_CUDA_GPUS     device count (default 1)
 *   FAKE_CUDA_CORRUPT  flip this many results (default 0): a broken GPU
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int env_int(const char* name, int dflt) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

int cuInit(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUDA_INIT", 0);
}
int cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
int cuGetErrorName(int rc, const char** s) {
  *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuDeviceGetCount(int* n) {
  *n = env_int("FAKE_CUDA_GPUS", 1);
  return 0;
}
int cuDeviceGet(int* d, int i) {
  *d = i;
  return 0;
}
int cuDeviceGetName(char* out, int len, int d) {
  (void)d;
  strncpy(out, "NVIDIA H200", (size_t)len);
  return 0;
}
static int ctx_token;
int cuDevicePrimaryCtxRetain(void** ctx, int d) {
  (void)d;
  *ctx = &ctx_token;
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int d) {
  (void)d;
  return 0;
}
int cuCtxSetCurrent(void* ctx) {
  (void)ctx;
  return 0;
}
int cuCtxSynchronize(void) { return 0; }
static int module_token, function_token;
int cuModuleLoadData(void** m, const void* image) {
  if (!strstr((const char*)image, ".entry gb_mix")) return 218; /* CUDA_ERROR_INVALID_PTX */
  *m = &module_token;
  return 0;
}
int cuModuleUnload(void* m) {
  (void)m;
  return 0;
}
int cuModuleGetFunction(void** f, void* m, const char* name) {
  (void)m;
  if (strcmp(name, "gb_mix") != 0) return 500; /* CUDA_ERROR_NOT_FOUND */
  *f = &function_token;
  return 0;
}
int cuMemAlloc_v2(unsigned long long* p, size_t n) {
  void* mem = malloc(n);
  if (!mem) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (unsigned long long)(uintptr_t)mem;
  return 0;
}
int cuMemFree_v2(unsigned long long p) {
  free((void*)(uintptr_t)p);
  return 0;
}
int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t n) {
  memcpy((void*)(uintptr_t)dst, src, n);
  return 0;
}
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n) {
  memcpy(dst, (const void*)(uintptr_t)src, n);
  return 0;
}
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n) {
  memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n);
  return 0;
}
/* What the PTX does: out[i] = (in[i] * 2654435761) ^ (i + salt). */
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                   void* stream, void** params, void** extra) {
  (void)f, (void)gy, (void)gz, (void)by, (void)bz, (void)shmem, (void)stream, (void)extra;
  uint32_t* out = (uint32_t*)(uintptr_t)(*(unsigned long long*)params[0]);
  const uint32_t* in = (const uint32_t*)(uintptr_t)(*(unsigned long long*)params[1]);
  uint32_t n = *(uint32_t*)params[2], salt = *(uint32_t*)params[3];
  uint64_t threads = (uint64_t)gx * bx;
  for (uint32_t i = 0; i < n && i < threads; ++i) out[i] = (in[i] * 2654435761u) ^ (i + salt);
  int corrupt = env_int("FAKE_CUDA_CORRUPT", 0);
  for (int k = 0; k < corrupt && (uint32_t)k < n; ++k) out[k * 7 % n] ^= 0x10u;
  return 0;
}
int cuEventCreate(void** e, unsigned flags) {
  (void)flags;
  *e = malloc(1);
  return 0;
}
int cuEventRecord(void* e, void* s) {
  (void)e, (void)s;
  return 0;
}
int cuEventSynchronize(void* e) {
  (void)e;
  return 0;
}
int cuEventElapsedTime(float* ms, void* a, void* b) {
  (void)a, (void)b;
  *ms = 1.0f;
  return 0;
}
int cuEventDestroy_v2(void* e) {
  free(e);
  return 0;
}
