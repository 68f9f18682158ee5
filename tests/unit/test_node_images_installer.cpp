// Installer input: makeself headers (upstream and NVIDIA's fork), payload
// extraction, .manifest parsing and destinations; the deterministic layer.
#include <archive.h>
#include <archive_entry.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <locale.h>
#include <fstream>
#include <map>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "fixtures.hpp"
#include "node-images/driver_files.hpp"
#include "node-images/installer.hpp"
#include "node-images/kbuild.hpp"
#include "node-images/layer.hpp"

using namespace gb;
using namespace gb::node_images;
using namespace gb::recipes;
using gbtest::tar_gz;
namespace fs = std::filesystem;

namespace {

const char* k_manifest =
    "NVIDIA Accelerated Graphics Driver for Linux-x86_64\n"
    "580.95.05\n"
    "\n"
    "nvidia nvidia-uvm nvidia-modeset\n"
    "\n\n\n\n"
    "kernel-open/nvidia/nv.c 0644 KERNEL_MODULE_SRC INHERIT_PATH_DEPTH:1 MODULE:resman\n"
    "firmware/gsp_ga10x.bin 0644 FIRMWARE INHERIT_PATH_DEPTH:1 MODULE:resman\n"
    "libnvidia-ml.so.580.95.05 0755 UTILITY_LIB NATIVE MODULE:nvml\n"
    "libnvidia-ml.so.1 0777 UTILITY_LIB_SYMLINK NATIVE libnvidia-ml.so.580.95.05 MODULE:nvml\n"
    "32/libcuda.so.580.95.05 0755 CUDA_LIB COMPAT32 MODULE:compute\n"
    "libcuda.so.580.95.05 0755 CUDA_LIB NATIVE MODULE:compute\n"
    "nvidia-smi 0755 UTILITY_BINARY MODULE:nvml\n"
    "LICENSE 0644 DOCUMENTATION share/doc/NVIDIA_GLX-1.0 MODULE:resman\n";

std::string upstream_header(std::size_t payload_size) {
  // Two lines before skip=, skip counts all header lines; payload after them.
  std::string h = "#!/bin/sh\n# This script was generated using Makeself 2.4.5\n";
  h += "label=\"stand-in\"\nfilesizes=\"" + std::to_string(payload_size) + "\"\n";
  h += "skip=\"7\"\n# body\nexit 0\n";
  return h;
}

std::string fork_header() {
  return "#! /bin/sh\nCRCsum=0\nMD5=0\nskip=8\nskip_decompress=0\nsize_decompress=0\nversion_string=\"580.95.05\"\n";
}

}  // namespace

TEST_CASE("makeself headers: upstream skip= counts lines before the payload", "[node-images][installer]") {
  std::string payload = tar_gz({{"./.manifest", k_manifest}});
  std::string run = upstream_header(payload.size()) + payload;
  auto h = parse_makeself_header(run, run.size(), "x.run");
  REQUIRE(h.ok());
  CHECK(h->flavour == MakeselfFlavour::Upstream);
  CHECK(h->payload_offset == upstream_header(payload.size()).size());
  CHECK(h->payload_size == payload.size());
  CHECK(h->compression == PayloadCompression::Gzip);
  CHECK(h->label == "stand-in");
}

TEST_CASE("makeself headers: NVIDIA's fork starts the archive at line skip", "[node-images][installer]") {
  std::string payload = tar_gz({{"./.manifest", k_manifest}});
  std::string run = fork_header() + payload;
  auto h = parse_makeself_header(run, run.size(), "x.run");
  REQUIRE(h.ok());
  CHECK(h->flavour == MakeselfFlavour::NvidiaFork);
  CHECK(h->payload_offset == fork_header().size());
  CHECK(h->payload_size == 0);
  CHECK(h->compression == PayloadCompression::Gzip);
}

TEST_CASE("makeself headers: compression is sniffed from magic bytes", "[node-images][installer]") {
  for (auto [magic, want] : std::vector<std::pair<std::string, PayloadCompression>>{
           {std::string("\xfd" "7zXZ\0xx", 8), PayloadCompression::Xz},
           {"\x28\xb5\x2f\xfd....", PayloadCompression::Zstd},
           {"BZh91AY", PayloadCompression::Bzip2},
           {"plain tar", PayloadCompression::None}}) {
    std::string run = fork_header() + magic;
    auto h = parse_makeself_header(run, run.size(), "x.run");
    REQUIRE(h.ok());
    CHECK(h->compression == want);
  }
}

TEST_CASE("makeself headers: truncated or foreign files fail with a clear error", "[node-images][installer]") {
  std::string payload = tar_gz({{"./.manifest", k_manifest}});
  std::string run = upstream_header(payload.size()) + payload;
  SECTION("payload shorter than filesizes") {
    std::string cut = run.substr(0, run.size() - 10);
    auto h = parse_makeself_header(cut, cut.size(), "cut.run");
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().message.find("cut.run: truncated") != std::string::npos);
  }
  SECTION("file ends inside the header") {
    std::string cut = run.substr(0, 40);
    auto h = parse_makeself_header(cut, cut.size(), "cut.run");
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().message.find("truncated") != std::string::npos);
  }
  SECTION("fork header with the payload cut off") {
    std::string cut = fork_header().substr(0, fork_header().size() - 1);
    auto h = parse_makeself_header(cut, cut.size(), "nv.run");
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().message.find("truncated") != std::string::npos);
  }
  SECTION("not a shell archive") {
    auto h = parse_makeself_header("\x7f" "ELF....", 7, "a.out");
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().message.find("not a makeself installer") != std::string::npos);
  }
}

TEST_CASE("makeself payload extraction, both flavours; damaged and unsafe payloads are refused", "[node-images][installer]") {
  gbtest::TempDir tmp;
  std::string payload = tar_gz({{"./.manifest", k_manifest}, {"./firmware/gsp_ga10x.bin", "fw"}});
  for (const auto& [name, run] : std::vector<std::pair<std::string, std::string>>{
           {"up.run", upstream_header(payload.size()) + payload}, {"nv.run", fork_header() + payload}}) {
    write_atomic(tmp / name, run).value_or_throw();
    auto h = read_makeself_header(tmp / name);
    REQUIRE(h.ok());
    auto dest = tmp / (name + ".d");
    REQUIRE(extract_makeself(tmp / name, *h, dest).ok());
    CHECK(read_file(dest / "firmware/gsp_ga10x.bin").value() == "fw");
    auto inst = open_installer(tmp / name, tmp / (name + ".sandbox"));
    REQUIRE(inst.ok());
    CHECK(inst->manifest.version == "580.95.05");
    CHECK(inst->sha256.size() == 64);
  }
  // Payload cut in the middle of a file's compressed data (the fork has no
  // filesizes to check against, so the gzip stream must catch it).
  std::string noise;
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    noise.push_back(static_cast<char>(x));
  }
  std::string big = tar_gz({{"./.manifest", k_manifest}, {"./libnvidia-ml.so.580.95.05", noise}});
  std::string cut = fork_header() + big.substr(0, big.size() / 2);
  write_atomic(tmp / "cut.run", cut).value_or_throw();
  auto h = read_makeself_header(tmp / "cut.run");
  REQUIRE(h.ok());
  auto r = extract_makeself(tmp / "cut.run", *h, tmp / "cut.d");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("truncated or damaged") != std::string::npos);

  std::string evil = tar_gz({{"../escape", "x"}});
  write_atomic(tmp / "evil.run", fork_header() + evil).value_or_throw();
  auto he = read_makeself_header(tmp / "evil.run");
  REQUIRE(he.ok());
  auto re = extract_makeself(tmp / "evil.run", *he, tmp / "evil.d");
  REQUIRE_FALSE(re.ok());
  CHECK(re.error().message.find("entry '../escape' is absolute or climbs out with '..'; refused") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.path() / "escape"));
}

TEST_CASE(".manifest: header, entries, optional fields per type", "[node-images][manifest]") {
  auto m = parse_manifest(k_manifest, ".manifest");
  REQUIRE(m.ok());
  CHECK(m->version == "580.95.05");
  CHECK(m->modules == std::vector<std::string>{"nvidia", "nvidia-uvm", "nvidia-modeset"});
  REQUIRE(m->entries.size() == 8);
  CHECK(m->entries[0].inherit_depth == 1);
  CHECK(m->entries[2].arch == "NATIVE");
  CHECK(m->entries[3].symlink_target == "libnvidia-ml.so.580.95.05");
  CHECK(m->entries[3].mode == 0777);
  CHECK(m->entries[7].path == "share/doc/NVIDIA_GLX-1.0");
  CHECK(m->entries[6].line == 15);
}

TEST_CASE(".manifest: unknown types and malformed entries are rejected by name", "[node-images][manifest]") {
  std::string bad = std::string(k_manifest) + "libfoo.so 0755 SHINY_NEW_LIB NATIVE\n";
  auto m = parse_manifest(bad, "x/.manifest");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message == "x/.manifest:17: unknown file type 'SHINY_NEW_LIB' for libfoo.so (nvidia-installer rejects such a manifest)");
  CHECK_FALSE(parse_manifest(std::string(k_manifest) + "libx.so 0755 UTILITY_LIB\n", "m").ok());           // no arch word
  CHECK_FALSE(parse_manifest(std::string(k_manifest) + "libx.so 0755 UTILITY_LIB WRONG\n", "m").ok());     // bad arch word
  CHECK_FALSE(parse_manifest(std::string(k_manifest) + "libx.so 0899 UTILITY_BINARY\n", "m").ok());        // bad mode
  CHECK_FALSE(parse_manifest(std::string(k_manifest) + "../x 0644 UTILITY_BINARY\n", "m").ok());           // unsafe
  CHECK_FALSE(parse_manifest("desc\n1.2\n", "m").ok());                                                     // truncated
  // Entries end at the first empty line: what follows is not parsed.
  CHECK(parse_manifest(std::string(k_manifest) + "\ngarbage here\n", "m").ok());
}

TEST_CASE(".manifest destinations for a headless compute node", "[node-images][manifest]") {
  auto m = parse_manifest(k_manifest, ".manifest").value_or_throw();
  const std::string lib = "usr/lib/x86_64-linux-gnu";
  auto dst = [&](size_t i) { return manifest_destination(m.entries[i], m.version, lib); };
  CHECK_FALSE(dst(0));  // kernel sources
  CHECK(dst(1) == std::optional<std::string>("lib/firmware/nvidia/580.95.05/gsp_ga10x.bin"));
  CHECK(dst(2) == std::optional<std::string>(lib + "/libnvidia-ml.so.580.95.05"));
  CHECK(dst(3) == std::optional<std::string>(lib + "/libnvidia-ml.so.1"));
  CHECK_FALSE(dst(4));  // COMPAT32
  CHECK(dst(5) == std::optional<std::string>(lib + "/libcuda.so.580.95.05"));
  CHECK(dst(6) == std::optional<std::string>("usr/bin/nvidia-smi"));
  CHECK_FALSE(dst(7));  // documentation
}

namespace {

// One entry of every TYPE in nvidia-installer's manifest.c table (590.48.01
// and the types dropped since), written with the fields that type carries.
// Expected: arch, path, symlink target, inherit depth.
struct TypedLine {
  const char* line;
  const char* arch;
  const char* path;
  const char* target;
  int inherit;
};
const TypedLine k_every_type[] = {
    {"kernel/nvidia/nv.c 0644 KERNEL_MODULE_SRC INHERIT_PATH_DEPTH:1 MODULE:resman", "", "", "", 1},
    {"nvidia.ko 0644 KERNEL_MODULE", "", "", "", -1},
    {"nvidia.icd 0644 CUDA_ICD", "", "", "", -1},
    {"libGLX_nvidia.so.1 0755 OPENGL_LIB NATIVE", "NATIVE", "", "", -1},
    {"nvngx.dll 0644 WINE_LIB NATIVE", "NATIVE", "", "", -1},
    {"libcuda.so.1 0755 CUDA_LIB NATIVE vdpau", "NATIVE", "vdpau", "", -1},
    {"libnvidia-opencl.so.1 0755 OPENCL_LIB NATIVE /", "NATIVE", "/", "", -1},
    {"libOpenCL.so.1.0.0 0755 OPENCL_WRAPPER_LIB NATIVE /", "NATIVE", "/", "", -1},
    {"libnvidia-opencl.so 0777 OPENCL_LIB_SYMLINK NATIVE / libnvidia-opencl.so.1", "NATIVE", "/", "libnvidia-opencl.so.1", -1},
    {"libOpenCL.so.1 0777 OPENCL_WRAPPER_SYMLINK NATIVE / libOpenCL.so.1.0.0", "NATIVE", "/", "libOpenCL.so.1.0.0", -1},
    {"libnvidia-tls.so.1 0755 TLS_LIB NATIVE tls", "NATIVE", "tls", "", -1},
    {"libnvidia-ml.so.1 0755 UTILITY_LIB NATIVE", "NATIVE", "", "", -1},
    {"nvidia-drm_gbm.so 0755 GBM_BACKEND_LIB NATIVE", "NATIVE", "", "", -1},
    {"README.txt 0644 DOCUMENTATION share/doc/NVIDIA_GLX-1.0", "", "share/doc/NVIDIA_GLX-1.0", "", -1},
    {"nvidia-application-profiles-rc 0644 APPLICATION_PROFILE /usr/share/nvidia", "", "/usr/share/nvidia", "", -1},
    {"nvidia-smi.1.gz 0644 MANPAGE share/man/man1", "", "share/man/man1", "", -1},
    {"nvoptix.bin 0644 EXPLICIT_PATH /usr/share/nvidia", "", "/usr/share/nvidia", "", -1},
    {"libGL.so 0777 OPENGL_SYMLINK NATIVE libGL.so.1", "NATIVE", "", "libGL.so.1", -1},
    {"libcuda.so 0777 CUDA_SYMLINK NATIVE / libcuda.so.1", "NATIVE", "/", "libcuda.so.1", -1},
    {"libnvidia-ml.so 0777 UTILITY_LIB_SYMLINK NATIVE libnvidia-ml.so.1", "NATIVE", "", "libnvidia-ml.so.1", -1},
    {"nvidia-drm_gbm.so.1 0777 GBM_BACKEND_LIB_SYMLINK NATIVE ../nvidia-drm_gbm.so", "NATIVE", "", "../nvidia-drm_gbm.so", -1},
    {"nvidia-installer 0755 INSTALLER_BINARY", "", "", "", -1},
    {"nvidia-smi 0755 UTILITY_BINARY", "", "", "", -1},
    {"nvidia-uninstall 0777 UTILITY_BIN_SYMLINK nvidia-installer", "", "", "nvidia-installer", -1},
    {"nvidia-settings.desktop 0644 DOT_DESKTOP share/applications", "", "share/applications", "", -1},
    {"nvidia-settings.png 0644 ICON share/pixmaps", "", "share/pixmaps", "", -1},
    {"nvidia_drv.so 0755 XMODULE_SHARED_LIB drivers", "", "drivers", "", -1},
    {"libglxserver_nvidia.so.1 0755 GLX_MODULE_SHARED_LIB extensions", "", "extensions", "", -1},
    {"libglxserver_nvidia.so 0777 GLX_MODULE_SYMLINK extensions libglxserver_nvidia.so.1", "", "extensions", "libglxserver_nvidia.so.1", -1},
    {"libvdpau_nvidia.so.1 0755 VDPAU_LIB NATIVE vdpau", "NATIVE", "vdpau", "", -1},
    {"libvdpau_nvidia.so 0777 VDPAU_SYMLINK NATIVE vdpau libvdpau_nvidia.so.1", "NATIVE", "vdpau", "libvdpau_nvidia.so.1", -1},
    {"libnvcuvid.so.1 0755 NVCUVID_LIB NATIVE", "NATIVE", "", "", -1},
    {"libnvcuvid.so 0777 NVCUVID_LIB_SYMLINK NATIVE libnvcuvid.so.1", "NATIVE", "", "libnvcuvid.so.1", -1},
    {"libnvidia-encode.so.1 0755 ENCODEAPI_LIB NATIVE", "NATIVE", "", "", -1},
    {"libnvidia-encode.so 0777 ENCODEAPI_LIB_SYMLINK NATIVE libnvidia-encode.so.1", "NATIVE", "", "libnvidia-encode.so.1", -1},
    {"libnvidia-vgxcfg.so.1 0755 VGX_LIB", "", "", "", -1},
    {"libnvidia-vgxcfg.so 0777 VGX_LIB_SYMLINK libnvidia-vgxcfg.so.1", "", "", "libnvidia-vgxcfg.so.1", -1},
    {"libnvidia-gridd.so.1 0755 GRID_LIB nvidia/gridd", "", "nvidia/gridd", "", -1},
    {"libnvidia-gridd.so 0777 GRID_LIB_SYMLINK nvidia/gridd libnvidia-gridd.so.1", "", "nvidia/gridd", "libnvidia-gridd.so.1", -1},
    {"nvidia-modprobe 4755 NVIDIA_MODPROBE /usr/bin", "", "/usr/bin", "", -1},
    {"nvidia-modprobe.1.gz 0644 NVIDIA_MODPROBE_MANPAGE share/man/man1", "", "share/man/man1", "", -1},
    {"signing.key 0600 MODULE_SIGNING_KEY", "", "", "", -1},
    {"nvidia-drm-outputclass.conf 0644 XORG_OUTPUTCLASS_CONFIG", "", "", "", -1},
    {"kernel/dkms.conf 0644 DKMS_CONF INHERIT_PATH_DEPTH:1", "", "", "", 1},
    {"libGLX.so.0 0755 GLVND_LIB NATIVE", "NATIVE", "", "", -1},
    {"libGLX.so 0777 GLVND_SYMLINK NATIVE libGLX.so.0", "NATIVE", "", "libGLX.so.0", -1},
    {"libGLX_nvidia.so.0 0755 GLX_CLIENT_LIB NATIVE", "NATIVE", "", "", -1},
    {"libGLX_indirect.so.0 0777 GLX_CLIENT_SYMLINK NATIVE libGLX_nvidia.so.0", "NATIVE", "", "libGLX_nvidia.so.0", -1},
    {"nvidia_icd.json 0644 VULKAN_ICD_JSON vulkan/icd.d", "", "vulkan/icd.d", "", -1},
    {"10_nvidia.json 0644 GLVND_EGL_ICD_JSON", "", "", "", -1},
    {"libEGL_nvidia.so.0 0755 EGL_CLIENT_LIB NATIVE", "NATIVE", "", "", -1},
    {"libEGL_nvidia.so 0777 EGL_CLIENT_SYMLINK NATIVE libEGL_nvidia.so.0", "NATIVE", "", "libEGL_nvidia.so.0", -1},
    {"15_nvidia_gbm.json 0644 EGL_EXTERNAL_PLATFORM_JSON", "", "", "", -1},
    {"libFlxCore64.so.2021.02 0755 FLEXERA_LIB /", "", "/", "", -1},
    {"libFlxCore64.so 0777 FLEXERA_LIB_SYMLINK / libFlxCore64.so.2021.02", "", "/", "libFlxCore64.so.2021.02", -1},
    {"32/nvidia-pcc 0755 INTERNAL_UTILITY_BINARY COMPAT32", "COMPAT32", "", "", -1},
    {"libnvidia-pkcs11.so.1 0755 INTERNAL_UTILITY_LIB NATIVE", "NATIVE", "", "", -1},
    {"nvidia-pcc.data 0644 INTERNAL_UTILITY_DATA", "", "", "", -1},
    {"firmware/tu/gsp_tu10x.bin 0644 FIRMWARE INHERIT_PATH_DEPTH:2", "", "", "", 2},
    {"systemd/nvidia-suspend.service 0644 SYSTEMD_UNIT", "", "", "", -1},
    {"nvidia-suspend.service 0777 SYSTEMD_UNIT_SYMLINK systemd/system/systemd-suspend.service.wants x",
     "", "systemd/system/systemd-suspend.service.wants", "x", -1},
    {"systemd/nvidia 0755 SYSTEMD_SLEEP_SCRIPT", "", "", "", -1},
    {"nvidia-dbus.conf 0644 OPENGL_DATA /usr/share/dbus-1/system.d", "", "/usr/share/dbus-1/system.d", "", -1},
    {"nvidia_icd_vksc.json 0644 VULKANSC_ICD_JSON vulkansc/icd.d", "", "vulkansc/icd.d", "", -1},
    {"sandboxutils-filelist.json 0644 SANDBOXUTILS_FILELIST_JSON /", "", "/", "", -1},
    {"libnvidia-ifr.so.1 0755 NVIFR_LIB NATIVE", "NATIVE", "", "", -1},
    {"libnvidia-ifr.so 0777 NVIFR_LIB_SYMLINK NATIVE libnvidia-ifr.so.1", "NATIVE", "", "libnvidia-ifr.so.1", -1},
    {"nvidia.json 0644 ALLOCATOR_JSON", "", "", "", -1},
    {"libGL.la 0644 LIBGL_LA NATIVE", "NATIVE", "", "", -1},
    {"nvidia_drv.o 0777 XMODULE_SYMLINK drivers nvidia_drv.so", "", "drivers", "nvidia_drv.so", -1},
    {"libglx.so 0777 XMODULE_NEWSYM extensions libglx.so.1", "", "extensions", "libglx.so.1", -1},
    {"gl.h 0644 OPENGL_HEADER include/GL", "", "include/GL", "", -1},
    {"libvdpau.so.1.0.0 0755 VDPAU_WRAPPER_LIB NATIVE /", "NATIVE", "/", "", -1},
    {"libvdpau.so.1 0777 VDPAU_WRAPPER_SYMLINK NATIVE / libvdpau.so.1.0.0", "NATIVE", "/", "libvdpau.so.1.0.0", -1},
};

std::string manifest_with(const std::string& entries) {
  return "GRID driver\n535.230.02\n\nnvidia nvidia-uvm\n\n\n\n\n" + entries;
}

}  // namespace

TEST_CASE(".manifest: every type of nvidia-installer's table, with the fields it carries", "[node-images][manifest]") {
  std::string entries;
  for (const auto& t : k_every_type) entries += std::string(t.line) + "\n";
  auto m = parse_manifest(manifest_with(entries), "grid/.manifest");
  REQUIRE(m.ok());
  REQUIRE(m->entries.size() == std::size(k_every_type));
  for (std::size_t i = 0; i < m->entries.size(); ++i) {
    const auto& e = m->entries[i];
    INFO(k_every_type[i].line);
    CHECK(e.arch == k_every_type[i].arch);
    CHECK(e.path == k_every_type[i].path);
    CHECK(e.symlink_target == k_every_type[i].target);
    CHECK(e.inherit_depth == k_every_type[i].inherit);
  }
}

TEST_CASE(".manifest: a GRID entry lacking a field its type carries is refused", "[node-images][manifest]") {
  auto bad = [](const std::string& line) { return parse_manifest(manifest_with(line + "\n"), "g/.manifest"); };
  auto m = bad("libnvidia-gridd.so 0777 GRID_LIB_SYMLINK nvidia/gridd");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message == "g/.manifest:9: GRID_LIB_SYMLINK entry libnvidia-gridd.so lacks its symlink target");
  CHECK(bad("libFlxCore64.so 0755 FLEXERA_LIB").error().message == "g/.manifest:9: FLEXERA_LIB entry libFlxCore64.so lacks its path");
  CHECK(bad("libnvidia-vgxcfg.so 0777 VGX_LIB_SYMLINK").error().message ==
        "g/.manifest:9: VGX_LIB_SYMLINK entry libnvidia-vgxcfg.so lacks its symlink target");
  // VGX_LIB has no arch word: NATIVE is an ignored extra token, not its arch.
  CHECK(bad("libnvidia-vgxcfg.so.1 0755 VGX_LIB NATIVE")->entries[0].arch.empty());
  // INHERIT_PATH_DEPTH strips folders the file has, no more.
  CHECK(bad("gsp.bin 0644 FIRMWARE INHERIT_PATH_DEPTH:0").error().message ==
        "g/.manifest:9: INHERIT_PATH_DEPTH:0 but gsp.bin has 0 folder(s) to strip");
  CHECK_FALSE(bad("firmware/gsp.bin 0644 FIRMWARE INHERIT_PATH_DEPTH:2").ok());
  CHECK(bad("firmware/gsp.bin 0644 FIRMWARE INHERIT_PATH_DEPTH:1").ok());
}

TEST_CASE(".manifest destinations: vGPU guest (GRID) files land where nvidia-installer puts them", "[node-images][manifest]") {
  std::string entries;
  for (const auto& t : k_every_type) entries += std::string(t.line) + "\n";
  auto m = parse_manifest(manifest_with(entries), "grid/.manifest").value_or_throw();
  const std::string lib = "usr/lib/x86_64-linux-gnu";
  std::map<std::string, std::string> placed;
  for (const auto& e : m.entries)
    if (auto d = manifest_destination(e, m.version, lib)) placed[e.type] = *d;
  CHECK(placed["VGX_LIB"] == lib + "/libnvidia-vgxcfg.so.1");
  CHECK(placed["VGX_LIB_SYMLINK"] == lib + "/libnvidia-vgxcfg.so");
  CHECK(placed["GRID_LIB"] == lib + "/nvidia/gridd/libnvidia-gridd.so.1");
  CHECK(placed["GRID_LIB_SYMLINK"] == lib + "/nvidia/gridd/libnvidia-gridd.so");
  CHECK(placed["FLEXERA_LIB"] == lib + "/libFlxCore64.so.2021.02");
  CHECK(placed["FLEXERA_LIB_SYMLINK"] == lib + "/libFlxCore64.so");
  CHECK(placed["CUDA_LIB"] == lib + "/vdpau/libcuda.so.1");
  CHECK(placed["NVIDIA_MODPROBE"] == "usr/bin/nvidia-modprobe");
  CHECK(placed["FIRMWARE"] == "lib/firmware/nvidia/535.230.02/gsp_tu10x.bin");
  CHECK(placed["INTERNAL_UTILITY_LIB"] == "usr/lib/nvidia/libnvidia-pkcs11.so.1");
  CHECK(placed.count("INTERNAL_UTILITY_BINARY") == 0);  // COMPAT32: not on a headless node
  CHECK(placed.count("SYSTEMD_UNIT") == 0);
  CHECK(placed.count("DOCUMENTATION") == 0);
}

TEST_CASE("vermagic release", "[node-images][kbuild]") {
  CHECK(vermagic_release("6.1.0-57-amd64 SMP preempt mod_unload modversions ") == "6.1.0-57-amd64");
  CHECK_FALSE(read_modinfo("not elf", "x.ko").ok());
}

TEST_CASE("a layer name that is not ASCII is written as its UTF-8 bytes, whatever the locale", "[node-images][layer]") {
  // Debian's ca-certificates ships such names; this process runs in the "C" locale.
  gbtest::TempDir tmp;
  const std::string name = "usr/share/ca-certificates/mozilla/NetLock_Arany_=Class_Gold=_F\xc5\x91tan\xc3\xbas\xc3\xadtv\xc3\xa1ny.crt";
  LayerBuilder l;
  l.add_data(name, "-----BEGIN CERTIFICATE-----\n");
  l.add_symlink("etc/ssl/certs/NetLock.pem", "/" + name);
  l.add_data("etc/ascii", "x");
  auto tar = l.write_tar(tmp / "utf8.tar");
  INFO((tar ? std::string() : tar.error().message));
  REQUIRE(tar.ok());
  // Read back as a reader in a UTF-8 locale reads it (Go's archive/tar in containerd and umoci takes the pax record as UTF-8).
  locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  REQUIRE(utf8);
  locale_t old = ::uselocale(utf8);
  std::map<std::string, std::string> read;  // path -> link target
  {
    gb::detail::ArchiveReader r(archive_read_new());
    archive_read_support_format_tar(r.get());
    REQUIRE(archive_read_open_filename(r.get(), (tmp / "utf8.tar").c_str(), 10240) == ARCHIVE_OK);
    archive_entry* e;
    while (archive_read_next_header(r.get(), &e) == ARCHIVE_OK) {
      const char* link = archive_entry_symlink(e);
      read[archive_entry_pathname(e)] = link ? link : "";
    }
  }
  ::uselocale(old);
  ::freelocale(utf8);
  CHECK(read.count(name) == 1);
  CHECK(read["etc/ssl/certs/NetLock.pem"] == "/" + name);
  CHECK(read.count("etc/ascii") == 1);
}

TEST_CASE("layer tar is deterministic: sorted, parents, root-owned, SOURCE_DATE_EPOCH", "[node-images][layer]") {
  gbtest::TempDir tmp;
  write_atomic(tmp / "src", "module bytes").value_or_throw();
  auto build = [&](bool reversed) {
    LayerBuilder l;
    if (reversed) {
      l.add_symlink("usr/lib/libx.so.1", "libx.so.1.2");
      l.add_data("/etc/modprobe.d/nvidia.conf", "blacklist nouveau\n");
      l.add_file("lib/modules/k/updates/nvidia.ko", tmp / "src", 0644);
    } else {
      l.add_file("lib/modules/k/updates/nvidia.ko", tmp / "src", 0644);
      l.add_data("etc/modprobe.d/nvidia.conf", "blacklist nouveau\n");
      l.add_symlink("usr/lib/libx.so.1", "libx.so.1.2");
    }
    return l;
  };
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  std::vector<LayerFileRecord> recs;
  auto a = build(false).write_tar(tmp / "a.tar", &recs);
  auto b = build(true).write_tar(tmp / "b.tar");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->sha256 == b->sha256);
  std::vector<std::string> paths;
  for (const auto& r : recs) paths.push_back(r.path);
  CHECK(paths == std::vector<std::string>{"etc", "etc/modprobe.d", "etc/modprobe.d/nvidia.conf", "lib", "lib/modules",
                                          "lib/modules/k", "lib/modules/k/updates", "lib/modules/k/updates/nvidia.ko", "usr",
                                          "usr/lib", "usr/lib/libx.so.1"});
  // Read back: owners, times, modes.
  gb::detail::ArchiveReader r(archive_read_new());
  archive_read_support_format_tar(r.get());
  REQUIRE(archive_read_open_filename(r.get(), (tmp / "a.tar").c_str(), 10240) == ARCHIVE_OK);
  archive_entry* e;
  while (archive_read_next_header(r.get(), &e) == ARCHIVE_OK) {
    CHECK(archive_entry_uid(e) == 0);
    CHECK(archive_entry_gid(e) == 0);
    CHECK(archive_entry_mtime(e) == 1700000000);
    if (std::string(archive_entry_pathname(e)) == "lib") CHECK((archive_entry_perm(e) & 07777) == 0755);
  }
  r.reset();
  ::setenv("SOURCE_DATE_EPOCH", "0", 1);
  auto c = build(false).write_tar(tmp / "c.tar");
  REQUIRE(c.ok());
  CHECK(c->sha256 != a->sha256);
  // A value that is not seconds is refused, not read as 0 (it used to be).
  ::setenv("SOURCE_DATE_EPOCH", "yesterday", 1);
  auto bad = build(false).write_tar(tmp / "d.tar");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::Input);
  CHECK(bad.error().message.find("SOURCE_DATE_EPOCH='yesterday'") == 0);
  ::unsetenv("SOURCE_DATE_EPOCH");

  auto g1 = gzip_layer(tmp / "a.tar", tmp / "a.tar.gz");
  REQUIRE(g1.ok());
  std::string gz = read_file(tmp / "a.tar.gz").value();
  REQUIRE(gz.size() > 10);
  CHECK(gz.substr(4, 4) == std::string(4, '\0'));  // no gzip MTIME
  auto g2 = gzip_layer(tmp / "b.tar", tmp / "b.tar.gz");
  REQUIRE(g2.ok());
  CHECK(g1->sha256 == g2->sha256);
}

TEST_CASE("driver build: auto builds the module type the lock pins", "[node-images][kmt]") {
  auto type = [](const std::string& gpus, const std::string& driver, const std::string& installer) {
    auto r = parse_recipe("apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: t}\noperator: {version: v26.7.0}\n"
                          "target: {gpus: [" + gpus + "], os: ubuntu22.04, kernels: [6.8.0-45-generic]}\ndriver: {" + driver + "}\n",
                          "recipe.yaml");
    REQUIRE(r.ok());
    return effective_module_type(*r, r->kernel_module_type, installer);
  };
  // nvidia-installer 580 recommends proprietary while a V100 is present.
  CHECK(type("V100-SXM2-16GB, H100-SXM5-80GB", "mode: precompiled, branch: \"580\"", "580.95.05") == "proprietary");
  CHECK(type("H100-SXM5-80GB", "mode: precompiled, branch: \"580\"", "580.95.05") == "open");
  CHECK(type("V100-SXM2-16GB, H100-SXM5-80GB", "mode: precompiled, branch: \"580\", kernelModuleType: open", "580.95.05") == "open");
  // Pinned from the branch's newest version, as the lock is, whatever this 570 installer is.
  CHECK(type("V100-SXM2-16GB, H100-SXM5-80GB", "mode: precompiled, branch: \"570\"", "570.86.15") == "proprietary");
  // Before 560: proprietary; a host driver's by the branch.
  CHECK(type("H100-SXM5-80GB", "mode: precompiled, branch: \"550\"", "550.127.08") == "proprietary");
  CHECK(type("V100-SXM2-16GB, H100-SXM5-80GB", "mode: host, version: \"580.95.05\"", "580.95.05") == "open");
}
