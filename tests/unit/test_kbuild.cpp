// node-images/kbuild.hpp's build_modules around make, with a FakeRunner: the
// sandbox copy and make's argv, its log, and what is checked of what it
// built. tests/integration/driver.sh runs the real make.
#include <catch2/catch.hpp>
#include <fstream>

#include "common/strings.hpp"
#include "fake_runner.hpp"
#include "fixtures.hpp"
#include "node-images/kbuild.hpp"

using namespace gb;
using namespace gb::node_images;
using namespace std::string_literals;
using namespace gbtest;
namespace fs = std::filesystem;

namespace {

struct Build {
  TempDir t;
  Installer installer;
  KernelTree tree;
  fs::path sandbox = t / "sandbox";
  fs::path work = sandbox / "modules-6.1.0-57-amd64";
  ModuleBuildOptions options;

  Build() {
    installer.root = t / "installer";
    installer.source = "NVIDIA-Linux-x86_64-580.95.05.run";
    installer.manifest.version = "580.95.05";
    installer.manifest.modules = {"nvidia", "nvidia-uvm"};
    gbtest::spit(installer.root / "kernel-open/Makefile", "open\n");
    gbtest::spit(installer.root / "kernel/Makefile", "proprietary\n");
    tree.dir = "/usr/src/linux-headers-6.1.0-57-amd64";
    tree.release = "6.1.0-57-amd64";
  }
  Result<std::vector<BuiltModule>> run(FakeRunner& make) {
    options.runner = &make;
    return build_modules(installer, tree, sandbox, options);
  }
};

std::string module_for(const std::string& release) {
  return gbtest::tiny_module("license=Dual MIT/GPL\0vermagic="s + release + " SMP preempt mod_unload modversions \0"s);
}

// make that writes the modules into the folder it was given, as kbuild does.
FakeRunner make_building(const std::string& release) {
  return FakeRunner([release](const Call& c) -> Result<ProcessResult> {
    fs::path dir = c.after("-C");
    gbtest::spit(dir / "nvidia.ko", module_for(release));
    gbtest::spit(dir / "nvidia-uvm/nvidia-uvm.ko", module_for(release));
    return exited(0);
  });
}

}  // namespace

TEST_CASE("make runs on a sandbox copy, objects' paths mapped off the sandbox, output to make.log", "[node-images][kbuild][runner]") {
  Build b;
  b.options.jobs = 6;
  std::string copied;
  auto make = make_building("6.1.0-57-amd64");
  FakeRunner watching([&](const Call& c) -> Result<ProcessResult> {
    copied = gbtest::slurp(c.options.cwd / "Makefile");
    return make.run(c.argv, c.options);
  });
  auto built = b.run(watching).value_or_throw();
  REQUIRE(watching.calls.size() == 1);
  const Call& c = watching.calls[0];
  fs::path src = b.work / "kernel-open";
  CHECK(c.argv == std::vector<std::string>{"make", "-C", src.string(), "modules", "SYSSRC=/usr/src/linux-headers-6.1.0-57-amd64",
                                           "KCFLAGS=-ffile-prefix-map=" + b.work.string() + "=/usr/src/nvidia-580.95.05 -ffile-prefix-map=" +
                                               (b.sandbox / "headers").string() + "/=/",
                                           "-j", "6"});
  CHECK(c.options.cwd == src);
  CHECK(c.options.log == b.work / "make.log");
  CHECK(copied == "open\n");
  // The command heads the log, so a reader knows what produced it.
  CHECK(gbtest::slurp(b.work / "make.log") == "$ " + gb::join(c.argv, " ") + "\n");

  REQUIRE(built.size() == 2);
  CHECK(built[0].name == "nvidia");
  CHECK(built[0].file == src / "nvidia.ko");
  CHECK(built[1].file == src / "nvidia-uvm/nvidia-uvm.ko");
  CHECK(built[1].vermagic == "6.1.0-57-amd64 SMP preempt mod_unload modversions ");

  SECTION("the proprietary modules come from kernel/; at least one job") {
    Build p;
    p.options.module_type = "proprietary";
    p.options.jobs = 0;
    auto make2 = make_building("6.1.0-57-amd64");
    REQUIRE(p.run(make2));
    CHECK(make2.calls[0].after("-C") == (p.work / "kernel").string());
    CHECK(make2.calls[0].after("-j") == "1");
  }
}

TEST_CASE("make's failure names its exit status, the command, the log and the log's last 15 lines", "[node-images][kbuild][runner]") {
  Build b;
  FakeRunner make([](const Call& c) -> Result<ProcessResult> {
    std::string out;
    for (int i = 1; i <= 20; ++i) out += "line " + std::to_string(i) + "\n";
    std::ofstream(c.options.log, std::ios::app) << out;
    return exited(2);
  });
  auto r = b.run(make);
  REQUIRE_FALSE(r);
  const std::string& m = r.error().message;
  fs::path log = b.work / "make.log";
  CHECK_THAT(m, Catch::StartsWith("module build for kernel 6.1.0-57-amd64 failed (exit 2): " + gb::join(make.calls[0].argv, " ") +
                                  "\nlast lines of " + log.string() + ":"));
  CHECK_THAT(m, Catch::EndsWith("\n  | line 6\n  | line 7\n  | line 8\n  | line 9\n  | line 10\n  | line 11\n  | line 12\n  | line 13"
                                "\n  | line 14\n  | line 15\n  | line 16\n  | line 17\n  | line 18\n  | line 19\n  | line 20"));
  CHECK(m.find("| line 5\n") == std::string::npos);

  // make not installed: the runner's error, as it is.
  FakeRunner missing([](const Call&) -> Result<ProcessResult> { return op_error("make: cannot run it: No such file or directory (is it installed?)"); });
  CHECK(b.run(missing).error().message == "make: cannot run it: No such file or directory (is it installed?)");
}

TEST_CASE("what make built is checked: every module of the manifest, for the target kernel", "[node-images][kbuild][runner]") {
  Build b;
  FakeRunner only_nvidia([](const Call& c) -> Result<ProcessResult> {
    gbtest::spit(fs::path(c.after("-C")) / "nvidia.ko", module_for("6.1.0-57-amd64"));
    return exited(0);
  });
  auto missing = b.run(only_nvidia);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "module build for kernel 6.1.0-57-amd64 did not produce nvidia-uvm.ko (listed on .manifest line 4)");

  // A tree for another kernel than its name says.
  auto other = make_building("6.1.0-58-amd64");
  auto wrong = b.run(other);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().kind == ErrorKind::Input);
  CHECK_THAT(wrong.error().message, Catch::StartsWith("nvidia.ko was built for kernel '6.1.0-58-amd64'") &&
                                        Catch::Contains("the target kernel is 6.1.0-57-amd64"));

  // The recipe's kernel, when given, is what the modules must match.
  b.options.target_release = "6.1.0-58-amd64";
  CHECK(b.run(other));
  auto same = make_building("6.1.0-57-amd64");
  CHECK_FALSE(b.run(same));

  // A module type the installer lacks stops before make.
  b.options.target_release.clear();
  b.options.module_type = "closed";
  FakeRunner unused;
  CHECK_FALSE(b.run(unused));
  CHECK(unused.calls.empty());
}
