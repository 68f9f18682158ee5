#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/parallel.hpp"

using namespace gb;

TEST_CASE("parallel_for runs every task once, on several threads", "[parallel]") {
  std::vector<std::atomic<int>> runs(200);
  std::mutex m;
  std::set<std::thread::id> threads;
  parallel_for(runs.size(), 4, [&](std::size_t i) {
    ++runs[i];
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard lock(m);
    threads.insert(std::this_thread::get_id());
  });
  for (const auto& r : runs) CHECK(r == 1);
  CHECK(threads.size() > 1);
  CHECK(threads.size() <= 4);
  parallel_for(0, 4, [](std::size_t) { FAIL("no task to run"); });
}

TEST_CASE("parallel_try reports every failure, sorted; Input only when all are", "[parallel]") {
  auto r = parallel_try(6, 3, [](std::size_t i) -> Result<void> {
    if (i == 4) return op_error("e4 broke");
    if (i == 1) return input_error("e1 bad");
    return {};
  });
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "e1 bad\ne4 broke");
  CHECK(r.error().kind == ErrorKind::Failed);
  auto input = parallel_try(3, 2, [](std::size_t i) -> Result<void> { return input_error("bad " + std::to_string(i)); });
  REQUIRE_FALSE(input.ok());
  CHECK(input.error().kind == ErrorKind::Input);
  CHECK(parallel_try(5, 2, [](std::size_t) -> Result<void> { return {}; }).ok());
}

TEST_CASE("grouped tasks: at most per_group of one group at once, others go ahead", "[parallel]") {
  // 12 tasks on host a, 4 on host b, listed a first: b's tasks must not
  // wait behind a's, and a never has more than 2 running.
  std::vector<std::string> group(12, "a");
  group.insert(group.end(), 4, "b");
  std::mutex m;
  std::map<std::string, int> running, peak;
  std::atomic<int> done{0};
  auto r = parallel_try(group, 6, 2, [&](std::size_t i) -> Result<void> {
    {
      std::lock_guard lock(m);
      peak[group[i]] = std::max(peak[group[i]], ++running[group[i]]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    {
      std::lock_guard lock(m);
      --running[group[i]];
    }
    ++done;
    return {};
  });
  REQUIRE(r.ok());
  CHECK(done == 16);
  CHECK(peak["a"] == 2);
  CHECK(peak["b"] == 2);
}
