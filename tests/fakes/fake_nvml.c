/* A stand-in libnvidia-ml.so.1 for the node check's tests. It answers the
 * handful of calls gpubundle makes, from environment variables read on each
 * call, so one test process can play several nodes:
 *   FAKE_NVML_INIT     nvmlInit's return code (default 0)
 *   FAKE_NVML_GPUS     device count (default 1)
 *   FAKE_NVML_DRIVER   driver version (default 580.159.04)
 *   FAKE_NVML_NAME     device name (default "NVIDIA H200")
 *   FAKE_NVML_MIG      comma-separated MIG profiles; set: MIG mode on
 *   FAKE_NVML_XID      an XID event delivered once per event set
 *   FAKE_NVML_TEMP     temperature (default 36)
 */
#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned long long total, free, used;
} mem_t;
typedef struct {
  unsigned gpu, memory;
} util_t;
typedef struct {
  void* device;
  unsigned long long type, data;
  unsigned gi, ci;
} event_t;

static int env_int(const char* name, int dflt) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}
static const char* env_str(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return v ? v : dflt;
}

/* Handles: 1..64 for GPUs, 100 * (gpu + 1) + i for MIG devices. */
static void* handle(long v) { return (void*)v; }
static long id(void* h) { return (long)h; }

static int mig_count(void) {
  const char* m = getenv("FAKE_NVML_MIG");
  if (!m || !*m) return 0;
  int n = 1;
  for (; *m; ++m) n += *m == ',';
  return n;
}
static void mig_profile(int i, char* out, unsigned len) {
  const char* m = getenv("FAKE_NVML_MIG");
  for (; i > 0 && m; --i) {
    m = strchr(m, ',');
    if (m) ++m;
  }
  size_t n = m ? strcspn(m, ",") : 0;
  if (n >= len) n = len - 1;
  memcpy(out, m ? m : "", n);
  out[n] = 0;
}

int nvmlInit_v2(void) { return env_int("FAKE_NVML_INIT", 0); }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : rc == 18 ? "RM has detected an NVML/RM version mismatch." : "Unknown Error"; }
int nvmlSystemGetDriverVersion(char* out, unsigned len) {
  strncpy(out, env_str("FAKE_NVML_DRIVER", "580.159.04"), len - 1);
  out[len - 1] = 0;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = (unsigned)env_int("FAKE_NVML_GPUS", 1);
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  *d = handle((long)i + 1);
  return 0;
}
int nvmlDeviceGetName(void* d, char* out, unsigned len) {
  char buf[128] = "";
  if (id(d) >= 100) {
    char p[32];
    mig_profile((int)(id(d) % 100), p, sizeof p);
    strcpy(buf, env_str("FAKE_NVML_NAME", "NVIDIA H200"));
    strcat(buf, " MIG ");
    strcat(buf, p);
  } else {
    strncpy(buf, env_str("FAKE_NVML_NAME", "NVIDIA H200"), sizeof buf - 1);
  }
  strncpy(out, buf, len - 1);
  out[len - 1] = 0;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, mem_t* m) {
  (void)d;
  m->total = 150754820096ull;
  m->used = 633339904ull;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetMigMode(void* d, unsigned* cur, unsigned* pend) {
  (void)d;
  *cur = *pend = mig_count() > 0;
  return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(void* d, unsigned* n) {
  (void)d;
  *n = 7;
  return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* d, unsigned i, void** mig) {
  if ((int)i >= mig_count()) return 6; /* NOT_FOUND */
  *mig = handle(100 * id(d) + (long)i);
  return 0;
}
int nvmlDeviceGetEccMode(void* d, int* cur, int* pend) {
  (void)d;
  *cur = *pend = 1;
  return 0;
}
int nvmlDeviceGetTotalEccErrors(void* d, int type, int counter, unsigned long long* n) {
  (void)d, (void)type, (void)counter;
  *n = 0;
  return 0;
}
int nvmlDeviceGetRemappedRows(void* d, unsigned* c, unsigned* u, unsigned* p, unsigned* f) {
  (void)d;
  *c = *u = *p = *f = 0;
  return 0;
}
int nvmlDeviceGetTemperature(void* d, int sensor, unsigned* t) {
  (void)d, (void)sensor;
  *t = (unsigned)env_int("FAKE_NVML_TEMP", 36);
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* d, util_t* u) {
  (void)d;
  u->gpu = 0;
  u->memory = 0;
  return 0;
}
int nvmlDeviceGetPersistenceMode(void* d, int* mode) {
  (void)d;
  *mode = 1;
  return 0;
}
static int delivered;
int nvmlEventSetCreate(void** set) {
  *set = handle(1);
  delivered = 0;
  return 0;
}
int nvmlDeviceRegisterEvents(void* d, unsigned long long types, void* set) {
  (void)d, (void)types, (void)set;
  return 0;
}
int nvmlEventSetWait_v2(void* set, event_t* e, unsigned timeout_ms) {
  (void)set, (void)timeout_ms;
  int xid = env_int("FAKE_NVML_XID", 0);
  if (!xid || delivered) return 10; /* TIMEOUT, at once: tests need no wait */
  delivered = 1;
  e->device = handle(1);
  e->type = 0x8;
  e->data = (unsigned long long)xid;
  return 0;
}
int nvmlEventSetFree(void* set) {
  (void)set;
  return 0;
}
