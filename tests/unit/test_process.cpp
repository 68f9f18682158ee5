// common/process.hpp: run_process, the one way a helper program is started.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/process.hpp"
#include "fixtures.hpp"

using namespace gb;

TEST_CASE("run_process captures output and status, and names a missing program", "[process]") {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}).value_or_throw();
  CHECK(r.status == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  ProcessOptions with_x;
  with_x.env = {{"GB_X", "y"}};
  auto env = run_process({"sh", "-c", "printf %s \"$GB_X\""}, with_x).value_or_throw();
  CHECK(env.out == "y");
  auto missing = run_process({"gpubundle-no-such-program"});
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("gpubundle-no-such-program") && Catch::Contains("cannot run"));
  ProcessOptions hinted;
  hinted.not_found_hint = "install binutils";
  CHECK_THAT(run_process({"gpubundle-no-such-program"}, hinted).error().message, Catch::EndsWith("(install binutils)"));
  // A build's log: both streams appended to the file, nothing captured, in the folder asked for.
  gbtest::TempDir dir;
  gbtest::spit(dir / "build.log", "$ make\n");
  ProcessOptions logged;
  logged.log = dir / "build.log";
  logged.cwd = dir.path();
  auto made = run_process({"sh", "-c", "echo out; echo err >&2; pwd; exit 2"}, logged).value_or_throw();
  CHECK(made.status == 2);
  CHECK(made.out.empty());
  CHECK(made.err.empty());
  CHECK(gbtest::slurp(dir / "build.log") == "$ make\nout\nerr\n" + std::filesystem::canonical(dir.path()).string() + "\n");
}
