#pragma once
// Live probes through the driver's own user-space libraries, loaded with
// dlopen the way the operator's validator uses them: NVML
// (libnvidia-ml.so.1) for the GPUs' state, and the CUDA driver API
// (libcuda.so.1) for a real workload. No CUDA toolkit is needed: the kernel
// is PTX text that the driver compiles. Nothing here links against the
// driver, so the executable starts on a node without one.
//
// A library is looked for in the `lib_dirs` given (tests, --lib-dir), then
// wherever the dynamic loader finds it (LD_LIBRARY_PATH, ld.so.cache, the
// default folders), then where driver installs put it when the loader does
// not know (/usr/local/nvidia/lib64, the driver container's root under
// /run/nvidia/driver, ...).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gb::node {

struct LoadedFrom {
  std::string path;     // the file loaded, "" when none
  std::string missing;  // why not: the places searched
};

struct NvmlGpu {
  unsigned index = 0;
  std::string name;  // "NVIDIA H200"
  std::uint64_t memory_total = 0;
  std::uint64_t memory_used = 0;
  std::optional<bool> mig_enabled;
  std::vector<std::string> mig_profiles;  // of each MIG device, "1g.18gb"
  std::optional<bool> ecc_enabled;
  std::optional<std::uint64_t> ecc_uncorrected;  // volatile, since the driver loaded
  std::optional<unsigned> retired_pages;         // double-bit retirements (pre-Ampere)
  std::optional<bool> remap_failed;              // row remapping failed (Ampere and later)
  std::optional<bool> remap_pending;             // a reset is needed to remap rows
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> utilization_pct;
  std::optional<bool> persistence;
  std::vector<unsigned long long> xids;  // XID events seen while waiting
  std::string problem;                    // a call that failed, with NVML's reason
};

struct NvmlReport {
  LoadedFrom library;
  std::string error;  // nvmlInit or another global call failed
  std::string driver_version;
  std::vector<NvmlGpu> gpus;
  int xid_wait_ms = 0;
};

struct CudaGpu {
  int ordinal = 0;
  std::string name;
  bool kernel_ok = false;
  std::size_t elements = 0;
  std::size_t mismatches = 0;
  double copy_gbps = 0;  // device-to-device copy: bytes copied per second / 1e9
  std::string error;
};

struct CudaReport {
  LoadedFrom library;
  std::string error;  // cuInit and friends
  int cuda_version = 0;  // cuDriverGetVersion, e.g. 13000
  std::vector<CudaGpu> gpus;
};

struct ProbeOptions {
  std::vector<std::filesystem::path> lib_dirs;
  std::filesystem::path root = "/";  // prefixes the driver folders searched last
  int xid_wait_ms = 1000;
  std::size_t cuda_elements = 1 << 22;
  std::size_t copy_bytes = std::size_t{256} << 20;
};

NvmlReport probe_nvml(const ProbeOptions& options);
CudaReport probe_cuda(const ProbeOptions& options);

}  // namespace gb::node
