#include "node/gpu_probe.hpp"

#include <dlfcn.h>
#include <link.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "common/strings.hpp"

namespace gb::node {

namespace fs = std::filesystem;

namespace {

// The handful of NVML and CUDA driver API types used here, as the public
// headers define them; the toolkit's headers are not a build dependency.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
constexpr unsigned long long kXidCriticalError = 0x8;

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUevent = struct CUevent_st*;
using CUstream = struct CUstream_st*;
constexpr CUresult CUDA_SUCCESS = 0;

// y[i] = (x[i] * 2654435761) ^ (i + salt), 32-bit wrapping. PTX ISA 6.0 for
// sm_50, so that every driver branch the operator supports can JIT it.
constexpr const char* k_ptx = R"PTX(.version 6.0
.target sm_50
.address_size 64

.visible .entry gb_mix(.param .u64 out, .param .u64 in, .param .u32 n, .param .u32 salt)
{
  .reg .pred p;
  .reg .b32 r<8>;
  .reg .b64 a<6>;
  ld.param.u64 a0, [out];
  ld.param.u64 a1, [in];
  ld.param.u32 r0, [n];
  ld.param.u32 r1, [salt];
  mov.u32 r2, %ctaid.x;
  mov.u32 r3, %ntid.x;
  mov.u32 r4, %tid.x;
  mad.lo.u32 r2, r2, r3, r4;
  setp.ge.u32 p, r2, r0;
  @p bra done;
  cvta.to.global.u64 a0, a0;
  cvta.to.global.u64 a1, a1;
  mul.wide.u32 a2, r2, 4;
  add.u64 a3, a1, a2;
  ld.global.u32 r5, [a3];
  mul.lo.u32 r5, r5, 2654435761;
  add.u32 r6, r2, r1;
  xor.b32 r5, r5, r6;
  add.u64 a4, a0, a2;
  st.global.u32 [a4], r5;
done:
  ret;
}
)PTX";

std::uint32_t expected_mix(std::uint32_t x, std::uint32_t i, std::uint32_t salt) { return (x * 2654435761u) ^ (i + salt); }

// Where driver installs put the libraries when the loader does not know, below root.
std::vector<fs::path> driver_library_dirs(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const char* d : {"usr/local/nvidia/lib64", "usr/local/nvidia/lib", "run/nvidia/driver/usr/lib/x86_64-linux-gnu",
                        "run/nvidia/driver/usr/lib64", "run/nvidia/driver/usr/lib/aarch64-linux-gnu", "usr/lib/x86_64-linux-gnu",
                        "usr/lib64", "usr/lib/aarch64-linux-gnu"})
    dirs.push_back(root / d);
  return dirs;
}

// A dlopen handle. The driver's libraries are not unloaded: libcuda in
// particular does not promise a clean dlclose, and the process ends soon.
class DriverLibrary {
public:
  static std::pair<std::unique_ptr<DriverLibrary>, LoadedFrom> open(const char* soname, const ProbeOptions& o) {
    std::vector<fs::path> tried;
    auto attempt = [&](const std::string& file) -> void* {
      void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) tried.emplace_back(file);
      return h;
    };
    void* h = nullptr;
    for (const auto& d : o.lib_dirs)
      if (!h) h = attempt((d / soname).string());
    if (!h) h = attempt(soname);  // the dynamic loader's own search
    for (const auto& d : driver_library_dirs(o.root))
      if (!h && fs::exists(d / soname)) h = attempt((d / soname).string());
    LoadedFrom from;
    if (!h) {
      std::vector<std::string> dirs;
      for (const auto& d : o.lib_dirs) dirs.push_back(d.string());
      dirs.push_back("the loader's path");
      for (const auto& d : driver_library_dirs(o.root)) dirs.push_back(d.string());
      from.missing = std::string(soname) + " not found (searched " + join(dirs, ", ") + ")";
      return {nullptr, from};
    }
    link_map* lm = nullptr;
    from.path = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name ? lm->l_name : soname;
    std::error_code ec;
    if (auto real = fs::canonical(from.path, ec); !ec) from.path = real.string();
    return {std::unique_ptr<DriverLibrary>(new DriverLibrary(h)), from};
  }

  template <typename F>
  F sym(const char* name) const {
    return reinterpret_cast<F>(dlsym(m_handle, name));
  }

private:
  explicit DriverLibrary(void* h) : m_handle(h) {}
  void* m_handle;
};

// The entry points used, each as (return type, name without the "nvml" or
// "cu" prefix, parameters): one list makes the table's fields and loads them.
#define GB_NVML_SYMBOLS(X) \
  X(nvmlReturn_t, Init_v2, ()) \
  X(nvmlReturn_t, Shutdown, ()) \
  X(const char*, ErrorString, (nvmlReturn_t)) \
  X(nvmlReturn_t, SystemGetDriverVersion, (char*, unsigned)) \
  X(nvmlReturn_t, DeviceGetCount_v2, (unsigned*)) \
  X(nvmlReturn_t, DeviceGetHandleByIndex_v2, (unsigned, nvmlDevice_t*)) \
  X(nvmlReturn_t, DeviceGetName, (nvmlDevice_t, char*, unsigned)) \
  X(nvmlReturn_t, DeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t*)) \
  X(nvmlReturn_t, DeviceGetMigMode, (nvmlDevice_t, unsigned*, unsigned*)) \
  X(nvmlReturn_t, DeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned*)) \
  X(nvmlReturn_t, DeviceGetMigDeviceHandleByIndex, (nvmlDevice_t, unsigned, nvmlDevice_t*)) \
  X(nvmlReturn_t, DeviceGetEccMode, (nvmlDevice_t, int*, int*)) \
  X(nvmlReturn_t, DeviceGetTotalEccErrors, (nvmlDevice_t, int, int, unsigned long long*)) \
  X(nvmlReturn_t, DeviceGetRetiredPages, (nvmlDevice_t, int, unsigned*, unsigned long long*)) \
  X(nvmlReturn_t, DeviceGetRemappedRows, (nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*)) \
  X(nvmlReturn_t, DeviceGetTemperature, (nvmlDevice_t, int, unsigned*)) \
  X(nvmlReturn_t, DeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t*)) \
  X(nvmlReturn_t, DeviceGetPersistenceMode, (nvmlDevice_t, int*)) \
  X(nvmlReturn_t, EventSetCreate, (nvmlEventSet_t*)) \
  X(nvmlReturn_t, DeviceRegisterEvents, (nvmlDevice_t, unsigned long long, nvmlEventSet_t)) \
  X(nvmlReturn_t, EventSetWait_v2, (nvmlEventSet_t, nvmlEventData_t*, unsigned)) \
  X(nvmlReturn_t, EventSetFree, (nvmlEventSet_t))
#define GB_FIELD(ret, name, params) ret(*name) params;
struct Nvml {
  GB_NVML_SYMBOLS(GB_FIELD)
};

std::string nvml_error(const Nvml& n, const char* call, nvmlReturn_t rc) {
  const char* s = n.ErrorString ? n.ErrorString(rc) : nullptr;
  return std::string(call) + ": " + (s ? s : "NVML error " + std::to_string(rc));
}

std::string mig_profile(const std::string& mig_name) {
  auto pos = mig_name.rfind("MIG ");
  return pos == std::string::npos ? mig_name : mig_name.substr(pos + 4);
}

void read_gpu(const Nvml& n, nvmlDevice_t d, NvmlGpu& g) {
  char buf[128] = {};
  if (n.DeviceGetName(d, buf, sizeof buf) == NVML_SUCCESS) g.name = buf;
  nvmlMemory_t mem{};
  if (nvmlReturn_t rc = n.DeviceGetMemoryInfo(d, &mem); rc == NVML_SUCCESS) {
    g.memory_total = mem.total;
    g.memory_used = mem.used;
  } else {
    g.problem = nvml_error(n, "nvmlDeviceGetMemoryInfo", rc);
  }
  unsigned cur = 0, pend = 0;
  if (n.DeviceGetMigMode && n.DeviceGetMigMode(d, &cur, &pend) == NVML_SUCCESS) {
    g.mig_enabled = cur == 1;
    unsigned max = 0;
    if (cur == 1 && n.DeviceGetMaxMigDeviceCount && n.DeviceGetMigDeviceHandleByIndex && n.DeviceGetMaxMigDeviceCount(d, &max) == NVML_SUCCESS)
      for (unsigned i = 0; i < max && i < 64; ++i) {
        nvmlDevice_t mig = nullptr;
        if (n.DeviceGetMigDeviceHandleByIndex(d, i, &mig) != NVML_SUCCESS) continue;
        char mbuf[128] = {};
        if (n.DeviceGetName(mig, mbuf, sizeof mbuf) == NVML_SUCCESS) g.mig_profiles.push_back(mig_profile(mbuf));
      }
  }
  int ecc = 0, ecc_pend = 0;
  if (n.DeviceGetEccMode && n.DeviceGetEccMode(d, &ecc, &ecc_pend) == NVML_SUCCESS) {
    g.ecc_enabled = ecc == 1;
    unsigned long long count = 0;
    // uncorrected (1), volatile counter (0)
    if (ecc == 1 && n.DeviceGetTotalEccErrors && n.DeviceGetTotalEccErrors(d, 1, 0, &count) == NVML_SUCCESS) g.ecc_uncorrected = count;
  }
  unsigned pages = 0;
  if (n.DeviceGetRetiredPages) {
    nvmlReturn_t rc = n.DeviceGetRetiredPages(d, 1 /* double-bit ECC */, &pages, nullptr);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) g.retired_pages = pages;
  }
  unsigned corr = 0, unc = 0, pending = 0, failed = 0;
  if (n.DeviceGetRemappedRows && n.DeviceGetRemappedRows(d, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
    g.remap_pending = pending != 0;
    g.remap_failed = failed != 0;
  }
  unsigned t = 0;
  if (n.DeviceGetTemperature(d, 0 /* GPU die */, &t) == NVML_SUCCESS) g.temperature_c = t;
  nvmlUtilization_t u{};
  if (n.DeviceGetUtilizationRates(d, &u) == NVML_SUCCESS) g.utilization_pct = u.gpu;
  int pm = 0;
  if (n.DeviceGetPersistenceMode && n.DeviceGetPersistenceMode(d, &pm) == NVML_SUCCESS) g.persistence = pm == 1;
}

// XID events are not counters in NVML: they arrive as events. Listen for
// `wait_ms` and record what comes; the kit's alert watches the same signal.
void collect_xids(const Nvml& n, std::vector<nvmlDevice_t>& devs, NvmlReport& r) {
  if (!n.EventSetCreate || !n.DeviceRegisterEvents || !n.EventSetWait_v2 || !n.EventSetFree || r.xid_wait_ms <= 0) return;
  nvmlEventSet_t set = nullptr;
  if (n.EventSetCreate(&set) != NVML_SUCCESS) return;
  bool any = false;
  for (auto* d : devs) any = n.DeviceRegisterEvents(d, kXidCriticalError, set) == NVML_SUCCESS || any;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(r.xid_wait_ms);
  while (any) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    nvmlEventData_t e{};
    nvmlReturn_t rc = n.EventSetWait_v2(set, &e, static_cast<unsigned>(left));
    if (rc == NVML_ERROR_TIMEOUT || rc != NVML_SUCCESS) break;
    if (!(e.eventType & kXidCriticalError)) continue;
    for (std::size_t i = 0; i < devs.size(); ++i)
      if (devs[i] == e.device && r.gpus[i].xids.size() < 32) r.gpus[i].xids.push_back(e.eventData);
  }
  n.EventSetFree(set);
}

#define GB_CUDA_SYMBOLS(X) \
  X(CUresult, Init, (unsigned)) \
  X(CUresult, DriverGetVersion, (int*)) \
  X(CUresult, GetErrorName, (CUresult, const char**)) \
  X(CUresult, DeviceGetCount, (int*)) \
  X(CUresult, DeviceGet, (CUdevice*, int)) \
  X(CUresult, DeviceGetName, (char*, int, CUdevice)) \
  X(CUresult, DevicePrimaryCtxRetain, (CUcontext*, CUdevice)) \
  X(CUresult, DevicePrimaryCtxRelease_v2, (CUdevice)) \
  X(CUresult, CtxSetCurrent, (CUcontext)) \
  X(CUresult, CtxSynchronize, ()) \
  X(CUresult, ModuleLoadData, (CUmodule*, const void*)) \
  X(CUresult, ModuleUnload, (CUmodule)) \
  X(CUresult, ModuleGetFunction, (CUfunction*, CUmodule, const char*)) \
  X(CUresult, MemAlloc_v2, (CUdeviceptr*, std::size_t)) \
  X(CUresult, MemFree_v2, (CUdeviceptr)) \
  X(CUresult, MemcpyHtoD_v2, (CUdeviceptr, const void*, std::size_t)) \
  X(CUresult, MemcpyDtoH_v2, (void*, CUdeviceptr, std::size_t)) \
  X(CUresult, MemcpyDtoD_v2, (CUdeviceptr, CUdeviceptr, std::size_t)) \
  X(CUresult, LaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**)) \
  X(CUresult, EventCreate, (CUevent*, unsigned)) \
  X(CUresult, EventRecord, (CUevent, CUstream)) \
  X(CUresult, EventSynchronize, (CUevent)) \
  X(CUresult, EventElapsedTime, (float*, CUevent, CUevent)) \
  X(CUresult, EventDestroy_v2, (CUevent))
struct Cuda {
  GB_CUDA_SYMBOLS(GB_FIELD)
};

std::string cuda_error(const Cuda& c, const char* call, CUresult rc) {
  const char* name = nullptr;
  if (c.GetErrorName) c.GetErrorName(rc, &name);
  return std::string(call) + ": " + (name ? name : "CUDA error " + std::to_string(rc));
}

// Device memory freed on every path out of run_kernel and measure_copy.
class DeviceBuffers {
public:
  explicit DeviceBuffers(const Cuda& c) : m_c(c) {}
  ~DeviceBuffers() {
    for (auto p : m_ptrs) m_c.MemFree_v2(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  CUresult alloc(CUdeviceptr& p, std::size_t bytes) {
    CUresult rc = m_c.MemAlloc_v2(&p, bytes);
    if (rc == CUDA_SUCCESS) m_ptrs.push_back(p);
    return rc;
  }

private:
  const Cuda& m_c;
  std::vector<CUdeviceptr> m_ptrs;
};

#define GB_CU(call, ...)                                                 \
  do {                                                                   \
    if (CUresult rc_ = c.call(__VA_ARGS__); rc_ != CUDA_SUCCESS) {       \
      g.error = cuda_error(c, "cu" #call, rc_);                          \
      return;                                                            \
    }                                                                    \
  } while (0)

void run_kernel(const Cuda& c, CudaGpu& g, std::size_t n) {
  CUmodule mod = nullptr;
  GB_CU(ModuleLoadData, &mod, k_ptx);
  struct Unload {
    const Cuda& c;
    CUmodule m;
    ~Unload() { c.ModuleUnload(m); }
  } unload{c, mod};
  CUfunction fn = nullptr;
  GB_CU(ModuleGetFunction, &fn, mod, "gb_mix");
  std::vector<std::uint32_t> in(n), out(n, 0);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint32_t>(i * 7919u + 17u);
  DeviceBuffers bufs(c);
  CUdeviceptr d_in = 0, d_out = 0;
  if (CUresult rc = bufs.alloc(d_in, n * 4); rc != CUDA_SUCCESS) return void(g.error = cuda_error(c, "cuMemAlloc", rc));
  if (CUresult rc = bufs.alloc(d_out, n * 4); rc != CUDA_SUCCESS) return void(g.error = cuda_error(c, "cuMemAlloc", rc));
  GB_CU(MemcpyHtoD_v2, d_in, in.data(), n * 4);
  std::uint32_t count = static_cast<std::uint32_t>(n);
  std::uint32_t salt = 0x9e3779b9u + static_cast<std::uint32_t>(g.ordinal);
  void* params[] = {&d_out, &d_in, &count, &salt};
  unsigned block = 256, grid = static_cast<unsigned>((n + block - 1) / block);
  GB_CU(LaunchKernel, fn, grid, 1, 1, block, 1, 1, 0, nullptr, params, nullptr);
  GB_CU(CtxSynchronize);
  GB_CU(MemcpyDtoH_v2, out.data(), d_out, n * 4);
  g.elements = n;
  for (std::size_t i = 0; i < n; ++i)
    if (out[i] != expected_mix(in[i], static_cast<std::uint32_t>(i), salt)) ++g.mismatches;
  g.kernel_ok = g.mismatches == 0;
}

void measure_copy(const Cuda& c, CudaGpu& g, std::size_t bytes) {
  if (!c.EventCreate || !c.EventRecord || !c.EventSynchronize || !c.EventElapsedTime || bytes == 0) return;
  DeviceBuffers bufs(c);
  CUdeviceptr a = 0, b = 0;
  if (bufs.alloc(a, bytes) != CUDA_SUCCESS || bufs.alloc(b, bytes) != CUDA_SUCCESS) return;
  CUevent start = nullptr, stop = nullptr;
  if (c.EventCreate(&start, 0) != CUDA_SUCCESS || c.EventCreate(&stop, 0) != CUDA_SUCCESS) return;
  constexpr int reps = 10;
  c.MemcpyDtoD_v2(b, a, bytes);  // warm-up
  c.EventRecord(start, nullptr);
  for (int i = 0; i < reps; ++i) c.MemcpyDtoD_v2(i % 2 ? a : b, i % 2 ? b : a, bytes);
  c.EventRecord(stop, nullptr);
  float ms = 0;
  if (c.EventSynchronize(stop) == CUDA_SUCCESS && c.EventElapsedTime(&ms, start, stop) == CUDA_SUCCESS && ms > 0)
    g.copy_gbps = static_cast<double>(bytes) * reps / (ms / 1000.0) / 1e9;
  c.EventDestroy_v2(start);
  c.EventDestroy_v2(stop);
}

}  // namespace

NvmlReport probe_nvml(const ProbeOptions& o) {
  NvmlReport r;
  r.xid_wait_ms = o.xid_wait_ms;
  auto [lib, from] = DriverLibrary::open("libnvidia-ml.so.1", o);
  r.library = from;
  if (!lib) return r;
  Nvml n{};
#define GB_LOAD(ret, name, params) n.name = lib->sym<decltype(n.name)>("nvml" #name);
  GB_NVML_SYMBOLS(GB_LOAD)
#undef GB_LOAD
  if (!n.Init_v2 || !n.Shutdown || !n.SystemGetDriverVersion || !n.DeviceGetCount_v2 || !n.DeviceGetHandleByIndex_v2 || !n.DeviceGetName ||
      !n.DeviceGetMemoryInfo || !n.DeviceGetTemperature || !n.DeviceGetUtilizationRates) {
    r.error = from.path + " lacks NVML entry points this check needs";
    return r;
  }
  if (nvmlReturn_t rc = n.Init_v2(); rc != NVML_SUCCESS) {
    r.error = nvml_error(n, "nvmlInit", rc);
    return r;
  }
  char ver[96] = {};
  if (nvmlReturn_t rc = n.SystemGetDriverVersion(ver, sizeof ver); rc == NVML_SUCCESS) r.driver_version = ver;
  unsigned count = 0;
  if (nvmlReturn_t rc = n.DeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    r.error = nvml_error(n, "nvmlDeviceGetCount", rc);
    n.Shutdown();
    return r;
  }
  std::vector<nvmlDevice_t> devs;
  for (unsigned i = 0; i < count && i < 64; ++i) {
    NvmlGpu g;
    g.index = i;
    nvmlDevice_t d = nullptr;
    if (nvmlReturn_t rc = n.DeviceGetHandleByIndex_v2(i, &d); rc != NVML_SUCCESS) {
      g.problem = nvml_error(n, "nvmlDeviceGetHandleByIndex", rc);
    } else {
      read_gpu(n, d, g);
      devs.push_back(d);
    }
    r.gpus.push_back(std::move(g));
  }
  if (devs.size() == r.gpus.size()) collect_xids(n, devs, r);
  n.Shutdown();
  return r;
}

CudaReport probe_cuda(const ProbeOptions& o) {
  CudaReport r;
  auto [lib, from] = DriverLibrary::open("libcuda.so.1", o);
  r.library = from;
  if (!lib) return r;
  Cuda c{};
#define GB_LOAD(ret, name, params) c.name = lib->sym<decltype(c.name)>("cu" #name);
  GB_CUDA_SYMBOLS(GB_LOAD)
#undef GB_LOAD
  if (!c.Init || !c.DeviceGetCount || !c.DeviceGet || !c.DevicePrimaryCtxRetain || !c.DevicePrimaryCtxRelease_v2 || !c.CtxSetCurrent ||
      !c.CtxSynchronize || !c.ModuleLoadData || !c.ModuleUnload || !c.ModuleGetFunction || !c.MemAlloc_v2 || !c.MemFree_v2 ||
      !c.MemcpyHtoD_v2 || !c.MemcpyDtoH_v2 || !c.MemcpyDtoD_v2 || !c.LaunchKernel) {
    r.error = from.path + " lacks CUDA driver API entry points this check needs";
    return r;
  }
  if (CUresult rc = c.Init(0); rc != CUDA_SUCCESS) {
    r.error = cuda_error(c, "cuInit", rc);
    return r;
  }
  if (c.DriverGetVersion) c.DriverGetVersion(&r.cuda_version);
  int count = 0;
  if (CUresult rc = c.DeviceGetCount(&count); rc != CUDA_SUCCESS) {
    r.error = cuda_error(c, "cuDeviceGetCount", rc);
    return r;
  }
  for (int i = 0; i < count && i < 64; ++i) {
    CudaGpu g;
    g.ordinal = i;
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    char name[128] = {};
    if (CUresult rc = c.DeviceGet(&dev, i); rc != CUDA_SUCCESS) {
      g.error = cuda_error(c, "cuDeviceGet", rc);
    } else if (CUresult rc2 = c.DevicePrimaryCtxRetain(&ctx, dev); rc2 != CUDA_SUCCESS) {
      g.error = cuda_error(c, "cuDevicePrimaryCtxRetain", rc2);
    } else {
      if (c.DeviceGetName && c.DeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) g.name = name;
      if (CUresult rc3 = c.CtxSetCurrent(ctx); rc3 != CUDA_SUCCESS) {
        g.error = cuda_error(c, "cuCtxSetCurrent", rc3);
      } else {
        run_kernel(c, g, o.cuda_elements);
        if (g.error.empty()) measure_copy(c, g, o.copy_bytes);
      }
      c.CtxSetCurrent(nullptr);
      c.DevicePrimaryCtxRelease_v2(dev);
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

}  // namespace gb::node
