// `gpubundle node check` against a fake node: a sysfs/proc/dev tree written
// here, and the stand-in NVML and CUDA libraries from tests/fakes, steered by
// environment variables the fakes read on every call.
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "node/check.hpp"

namespace {

namespace fs = std::filesystem;
using gb::node::Status;
using namespace std::string_literals;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// One H200 with the open 580.159.04 driver on Ubuntu 24.04, as the real node.
struct FakeNode {
  gbtest::TempDir dir;
  FakeNode() {
    fs::path r = dir.path();
    put(r / "sys/bus/pci/devices/0000:00:06.0/vendor", "0x10de\n");
    put(r / "sys/bus/pci/devices/0000:00:06.0/device", "0x2335\n");
    put(r / "sys/bus/pci/devices/0000:00:06.0/class", "0x030200\n");
    put(r / "sys/bus/pci/devices/0000:00:01.0/vendor", "0x8086\n");  // not ours
    put(r / "sys/bus/pci/devices/0000:00:01.0/class", "0x030000\n");
    put(r / "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (builder@)\n");
    put(r / "sys/module/nvidia/version", "580.159.04\n");
    put(r / "proc/sys/kernel/osrelease", "6.18.44-gpu\n");
    put(r / "proc/sys/kernel/arch", "x86_64\n");
    put(r / "etc/os-release", "NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"24.04\"\n");
    for (const char* d : {"nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps/nvidia-cap1"}) put(r / "dev" / d, "");
    put(r / "proc/1/comm", "systemd\n");
  }
  fs::path root() const { return dir.path(); }
};

struct FakeEnv {
  std::vector<std::string> names;
  void set(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    names.emplace_back(name);
  }
  ~FakeEnv() {
    for (const auto& n : names) unsetenv(n.c_str());
  }
};

gb::node::Expectation h200_lock() {
  gb::node::Expectation e;
  e.source = "site.lock.json";
  e.gpus = {"H200-SXM-141GB"};
  e.os = "ubuntu24.04";
  e.kernels = {"6.18.44-gpu"};
  e.driver_mode = "host";
  e.driver_version = "580.159.04";
  e.driver_branch = "580";
  e.module_type = "open";
  e.mig_config = "all-disabled";
  return e;
}

gb::node::NodeCheckOptions options(const FakeNode& node, std::optional<gb::node::Expectation> e = h200_lock()) {
  gb::node::NodeCheckOptions o;
  o.root = node.root();
  o.probe.root = node.root();
  o.probe.lib_dirs = {GB_NODE_FAKES_DIR};
  o.probe.xid_wait_ms = 50;
  o.probe.cuda_elements = 1000;
  o.probe.copy_bytes = 1 << 16;
  o.expected = std::move(e);
  return o;
}

const gb::node::CheckResult& find(const gb::node::NodeReport& r, const std::string& check) {
  for (const auto& c : r.checks)
    if (c.check == check) return c;
  FAIL("no check " << check << " in\n" << r.text());
  throw;
}

}  // namespace

TEST_CASE("node check: a node that matches its lock passes every check it can run", "[node]") {
  FakeNode node;
  auto r = gb::node::check_node(options(node));
  INFO(r.text());
  CHECK(r.exit_code() == 0);
  for (const char* c : {"gpus", "os", "kernel", "driver", "devices", "nvml", "mig", "ecc", "signals", "cuda", "persistenced"})
    CHECK(find(r, c).status == Status::Pass);
  CHECK(find(r, "module").status == Status::Skip);         // no /lib/modules in the tree
  CHECK(find(r, "fabricmanager").status == Status::Skip);  // no NVSwitch
  CHECK(find(r, "gpus").detail.find("1 x H200-SXM-141GB") != std::string::npos);
  CHECK(find(r, "cuda").detail.find("PTX kernel ok on 1000 elements") != std::string::npos);
  CHECK(find(r, "nvml").detail.find(GB_NODE_FAKES_DIR) != std::string::npos);
  auto j = r.json();
  CHECK(j.find("\"exitCode\": 0") != std::string::npos);
  CHECK(j.find("\"kernelModuleType\": \"open\"") != std::string::npos);
}

TEST_CASE("node check: a driver other than the lock's fails, naming both", "[node]") {
  FakeNode node;
  auto e = h200_lock();
  e.driver_version = "570.195.03";
  e.driver_branch = "570";
  auto r = gb::node::check_node(options(node, e));
  CHECK(r.exit_code() == 1);
  const auto& d = find(r, "driver");
  CHECK(d.status == Status::Fail);
  CHECK(d.detail.find("580.159.04") != std::string::npos);
  CHECK(d.detail.find("570.195.03") != std::string::npos);

  SECTION("proprietary modules where the lock wants open") {
    put(node.root() / "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Release Build\n");
    auto r2 = gb::node::check_node(options(node));
    CHECK(find(r2, "driver").status == Status::Fail);
    CHECK(find(r2, "driver").detail.find("wants open") != std::string::npos);
  }
  SECTION("NVML's library from another driver than the loaded module") {
    FakeEnv env;
    env.set("FAKE_NVML_DRIVER", "580.95.05");
    auto r3 = gb::node::check_node(options(node));
    CHECK(find(r3, "nvml").status == Status::Fail);
    CHECK(find(r3, "nvml").detail.find("580.95.05") != std::string::npos);
  }
}

TEST_CASE("node check: a missing GPU fails", "[node]") {
  FakeNode node;
  SECTION("fewer on the bus than the node should have") {
    auto o = options(node);
    o.expect_gpu_count = 8;
    auto r = gb::node::check_node(o);
    CHECK(r.exit_code() == 1);
    CHECK(find(r, "gpus").status == Status::Fail);
    CHECK(find(r, "gpus").detail.find("expected 8") != std::string::npos);
  }
  SECTION("on the bus but lost to the driver") {
    FakeEnv env;
    env.set("FAKE_NVML_GPUS", "0");
    env.set("FAKE_CUDA_GPUS", "0");
    auto r = gb::node::check_node(options(node));
    CHECK(r.exit_code() == 1);
    CHECK(find(r, "nvml").status == Status::Fail);
    CHECK(find(r, "nvml").detail.find("NVML sees 0 GPUs, the PCI bus has 1") != std::string::npos);
    CHECK(find(r, "cuda").status == Status::Fail);
  }
  SECTION("a model the lock does not list") {
    put(node.root() / "sys/bus/pci/devices/0000:00:06.0/device", "0x2330\n");  // H100 SXM
    auto r = gb::node::check_node(options(node));
    CHECK(find(r, "gpus").status == Status::Fail);
    CHECK(find(r, "gpus").detail.find("H100") != std::string::npos);
  }
}

TEST_CASE("node check: wrong CUDA results fail the workload", "[node]") {
  FakeNode node;
  FakeEnv env;
  env.set("FAKE_CUDA_CORRUPT", "3");
  auto r = gb::node::check_node(options(node));
  CHECK(r.exit_code() == 1);
  CHECK(find(r, "cuda").status == Status::Fail);
  CHECK(find(r, "cuda").detail.find("3 of 1000 results wrong") != std::string::npos);
}

TEST_CASE("node check: live signals and MIG layout against the lock", "[node]") {
  FakeNode node;
  FakeEnv env;
  SECTION("an XID event fails") {
    env.set("FAKE_NVML_XID", "79");
    auto r = gb::node::check_node(options(node));
    CHECK(find(r, "signals").status == Status::Fail);
    CHECK(find(r, "signals").detail.find("XID 79") != std::string::npos);
  }
  SECTION("a GPU hotter than the alert's threshold fails") {
    env.set("FAKE_NVML_TEMP", "91");
    CHECK(find(gb::node::check_node(options(node)), "signals").status == Status::Fail);
  }
  SECTION("MIG on while the lock says all-disabled") {
    env.set("FAKE_NVML_MIG", "1g.18gb,1g.18gb");
    auto r = gb::node::check_node(options(node));
    CHECK(find(r, "mig").status == Status::Fail);
  }
  SECTION("an all-<profile> layout is checked instance by instance") {
    env.set("FAKE_NVML_MIG", "1g.18gb,2g.35gb");
    auto e = h200_lock();
    e.mig_config = "all-1g.18gb";
    auto r = gb::node::check_node(options(node, e));
    CHECK(find(r, "mig").status == Status::Fail);
    CHECK(find(r, "mig").detail.find("2g.35gb") != std::string::npos);
    env.set("FAKE_NVML_MIG", "1g.18gb,1g.18gb,1g.18gb");
    CHECK(find(gb::node::check_node(options(node, e)), "mig").status == Status::Pass);
  }
  SECTION("missing /dev/nvidia-uvm fails the devices check") {
    fs::remove(node.root() / "dev/nvidia-uvm");
    auto r = gb::node::check_node(options(node));
    CHECK(find(r, "devices").status == Status::Fail);
    CHECK(find(r, "devices").detail.find("/dev/nvidia-uvm") != std::string::npos);
  }
}

TEST_CASE("node check: no GPU at all is SKIP with reasons, exit 3", "[node]") {
  gbtest::TempDir empty;
  put(empty.path() / "proc/sys/kernel/osrelease", "6.1.0-26-amd64\n");
  put(empty.path() / "etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
  FakeEnv env;
  env.set("FAKE_NVML_INIT", "9");  // NVML_ERROR_DRIVER_NOT_LOADED
  env.set("FAKE_CUDA_INIT", "100");  // CUDA_ERROR_NO_DEVICE
  gb::node::NodeCheckOptions o;
  o.root = empty.path();
  o.probe.root = empty.path();
  o.probe.lib_dirs = {GB_NODE_FAKES_DIR};
  auto r = gb::node::check_node(o);
  INFO(r.text());
  CHECK(r.exit_code() == 3);
  for (const auto& c : r.checks) {
    CHECK(c.status == Status::Skip);
    CHECK_FALSE(c.detail.empty());
  }
  CHECK(find(r, "nvml").detail.find("Driver Not Loaded") != std::string::npos);

  SECTION("with a lock that lists GPUs, an empty bus is a failure") {
    o.expected = h200_lock();
    auto r2 = gb::node::check_node(o);
    CHECK(r2.exit_code() == 1);
    CHECK(find(r2, "gpus").status == Status::Fail);
    CHECK(find(r2, "os").status == Status::Fail);  // debian12, not ubuntu24.04
  }
}

TEST_CASE("node detect writes the recipe's target from the node", "[node]") {
  FakeNode node;
  std::string yaml = gb::node::detect_target(gb::node::read_node_facts(node.root()));
  CHECK(yaml.find("- H200-SXM-141GB  # 1 on this node") != std::string::npos);
  CHECK(yaml.find("os: ubuntu24.04") != std::string::npos);
  CHECK(yaml.find("kernels: [6.18.44-gpu]") != std::string::npos);
  CHECK(yaml.find("platforms: [linux/amd64]") != std::string::npos);
  put(node.root() / "sys/bus/pci/devices/0000:00:07.0/vendor", "0x10de\n");
  put(node.root() / "sys/bus/pci/devices/0000:00:07.0/device", "0x9999\n");
  put(node.root() / "sys/bus/pci/devices/0000:00:07.0/class", "0x030200\n");
  yaml = gb::node::detect_target(gb::node::read_node_facts(node.root()));
  CHECK(yaml.find("\"10de:9999\"  # 1 on this node; not in gpubundle's catalog") != std::string::npos);
}

TEST_CASE("node check reads nvidia.ko's vermagic and version", "[node]") {
  FakeNode node;
  std::string info = "version=580.159.04\0license=Dual MIT/GPL\0vermagic=6.18.44-gpu SMP preempt mod_unload \0"s;
  auto fields = gb::node::modinfo_fields(gbtest::tiny_module(info));
  REQUIRE(fields.size() == 3);
  CHECK(fields[2].second == "6.18.44-gpu SMP preempt mod_unload ");
  CHECK(gb::node::modinfo_fields("not an elf").empty());
  CHECK(gb::node::modinfo_fields(gbtest::tiny_module(info).substr(0, 70)).empty());  // cut short: no crash, nothing

  put(node.root() / "lib/modules/6.18.44-gpu/kernel/drivers/video/nvidia.ko", gbtest::tiny_module(info));
  auto r = gb::node::check_node(options(node));
  CHECK(find(r, "module").status == Status::Pass);
  CHECK(find(r, "module").detail.find("unsigned") != std::string::npos);

  SECTION("a module built for another kernel fails") {
    std::string other = "version=580.159.04\0vermagic=6.8.0-45-generic SMP mod_unload \0"s;
    put(node.root() / "lib/modules/6.18.44-gpu/updates/dkms/nvidia.ko", gbtest::tiny_module(other));  // updates/ wins, as with depmod
    auto r2 = gb::node::check_node(options(node));
    CHECK(find(r2, "module").status == Status::Fail);
    CHECK(find(r2, "module").detail.find("6.8.0-45-generic") != std::string::npos);
  }
  SECTION("a lock from a signed bake wants a signed module") {
    auto e = h200_lock();
    e.signer_fingerprint = std::string(64, 'a');
    e.signer_subject = "CN=site module key";
    auto r3 = gb::node::check_node(options(node, e));
    CHECK(find(r3, "module").status == Status::Fail);
    CHECK(find(r3, "module").detail.find("not signed") != std::string::npos);
  }
}

TEST_CASE("node facts under a hostile --root: bounded, never blocking, never above it", "[node][hostile]") {
  FakeNode node;
  const fs::path r = node.root();
  SECTION("a FIFO at etc/os-release is not opened for a read that would wait") {
    fs::remove(r / "etc/os-release");
    fs::create_directories(r / "etc");
    REQUIRE(::mkfifo((r / "etc/os-release").c_str(), 0644) == 0);
    auto f = gb::node::read_node_facts(r);  // would block forever on a plain open()
    CHECK(f.os.empty());
  }
  SECTION("a kernel release that climbs out is refused, not walked") {
    put(r / "proc/sys/kernel/osrelease", "../..\n");
    auto f = gb::node::read_node_facts(r);
    CHECK(f.kernel.empty());
    CHECK(f.kernel_problem.find("'../..' (proc/sys/kernel/osrelease) is not a kernel release") != std::string::npos);
    CHECK_FALSE(f.module_file);
    auto res = gb::node::check_node(options(node));
    CHECK(find(res, "kernel").status == Status::Fail);
  }
  SECTION("bytes that are not UTF-8 in os-release still give valid --json (fuzz_node_facts)") {
    put(r / "etc/os-release", "ID=u\x9c" "buntu\nVERSION_ID=\"24.04\"\n");
    auto res = gb::node::check_node(options(node));
    std::string j;
    REQUIRE_NOTHROW(j = res.json());
    CHECK(nlohmann::json::accept(j));
    CHECK(j.find("u\xef\xbf\xbd" "buntu24.04") != std::string::npos);  // U+FFFD
  }
  SECTION("a sparse 1 GiB nvidia.ko is read in bounded parts") {
    std::string info = "version=580.159.04\0vermagic=6.18.44-gpu SMP mod_unload \0"s;
    fs::path ko = r / "lib/modules/6.18.44-gpu/kernel/drivers/video/nvidia.ko";
    put(ko, gbtest::tiny_module(info));
    fs::resize_file(ko, 1ULL << 30);  // a hole: no disk, and no memory unless read whole
    struct rusage before {}, after {};
    ::getrusage(RUSAGE_SELF, &before);
    auto f = gb::node::read_node_facts(r);
    ::getrusage(RUSAGE_SELF, &after);
    REQUIRE(f.module_file);
    CHECK(f.module_file->vermagic == "6.18.44-gpu SMP mod_unload ");
    CHECK(after.ru_maxrss - before.ru_maxrss < 64 * 1024);  // KiB: far below the file's 1 GiB
  }
}

TEST_CASE("node check: a recipe's auto module type is the one the lock pins", "[node][kmt]") {
  gbtest::TempDir dir;
  auto expect = [&](const std::string& gpus, const std::string& driver) {
    put(dir / "r.yaml", "apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: t}\noperator: {version: v26.7.0}\n"
                        "target: {gpus: [" + gpus + "], os: ubuntu22.04}\ndriver: {" + driver + "}\n");
    auto e = gb::node::expectation_from_recipe(dir / "r.yaml");
    REQUIRE(e.ok());
    return e->module_type;
  };
  // nvidia-installer 580 recommends proprietary while a V100 is present.
  CHECK(expect("V100-SXM2-16GB, H100-SXM5-80GB", "version: \"580.105.08\"") == "proprietary");
  CHECK(expect("H100-SXM5-80GB", "version: \"580.105.08\"") == "open");
  CHECK(expect("H100-SXM5-80GB", "version: \"535.247.01\"") == "proprietary");
  // 565's installer cannot recommend: the driver container falls back on the branch.
  CHECK(expect("V100-SXM2-16GB", "version: \"565.57.01\"") == "open");
  // A host driver: by its branch, as the resolver pins it.
  CHECK(expect("V100-SXM2-16GB, H100-SXM5-80GB", "mode: host, version: \"580.105.08\"") == "open");
}
