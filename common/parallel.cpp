#include "common/parallel.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "common/strings.hpp"

namespace gb {

namespace {

// The one pool: `jobs` workers take tasks in order, skipping those whose
// group is full (per_group 0 = no limit).
void run_pool(std::size_t count, int jobs, const std::vector<std::string>* group, int per_group,
              const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  std::mutex m;
  std::condition_variable cv;
  std::vector<bool> taken(count, false);
  std::size_t first_waiting = 0;  // every task before it is taken
  std::size_t left = count;
  std::map<std::string, int> running;
  auto has_room = [&](std::size_t i) { return !group || per_group <= 0 || running[(*group)[i]] < per_group; };
  auto pick = [&]() -> std::size_t {
    for (std::size_t i = first_waiting; i < count; ++i)
      if (!taken[i] && has_room(i)) return i;
    return count;
  };
  auto worker = [&] {
    while (true) {
      std::size_t i = count;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return left == 0 || (i = pick()) < count; });
        if (left == 0) return;
        taken[i] = true;
        --left;
        while (first_waiting < count && taken[first_waiting]) ++first_waiting;
        if (group) ++running[(*group)[i]];
      }
      task(i);
      if (group) {
        std::lock_guard lock(m);
        --running[(*group)[i]];
      }
      cv.notify_all();
    }
  };
  std::size_t threads = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, jobs)));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

Result<void> collect(const std::function<void(const std::function<void(std::size_t)>&)>& run,
                     const std::function<Result<void>(std::size_t)>& task) {
  std::mutex m;
  std::vector<Failure> failures;
  run([&](std::size_t i) {
    auto r = task(i);
    if (r) return;
    std::lock_guard lock(m);
    failures.push_back(r.error());
  });
  if (failures.empty()) return {};
  std::vector<std::string> lines;
  bool all_input = true;
  for (const auto& f : failures) {
    lines.push_back(f.message);
    all_input = all_input && f.kind == ErrorKind::Input;
  }
  std::sort(lines.begin(), lines.end());
  return Failure{all_input ? ErrorKind::Input : ErrorKind::Failed, join(lines, "\n")};
}

}  // namespace

void parallel_for(std::size_t count, int jobs, const std::function<void(std::size_t)>& task) {
  run_pool(count, jobs, nullptr, 0, task);
}

Result<void> parallel_try(std::size_t count, int jobs, const std::function<Result<void>(std::size_t)>& task) {
  return collect([&](const std::function<void(std::size_t)>& t) { run_pool(count, jobs, nullptr, 0, t); }, task);
}

Result<void> parallel_try(const std::vector<std::string>& group, int jobs, int per_group,
                          const std::function<Result<void>(std::size_t)>& task) {
  return collect([&](const std::function<void(std::size_t)>& t) { run_pool(group.size(), jobs, &group, per_group, t); },
                 task);
}

}  // namespace gb
