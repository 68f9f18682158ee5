#pragma once
// Independent tasks on a few threads: the mirror's checks and blob fetches,
// import's pushes. The caller's thread is one of the workers. Every task runs
// even when one fails: callers report every failure at once, not the first.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

// Runs task(i) for every i in [0, count) on up to `jobs` threads (at least one).
void parallel_for(std::size_t count, int jobs, const std::function<void(std::size_t)>& task);

// Tasks that can fail: every failure's message, sorted, one per line. The
// kind is Input only when every failure is Input.
Result<void> parallel_try(std::size_t count, int jobs, const std::function<Result<void>(std::size_t)>& task);

// Tasks in groups (group[i] names task i's, e.g. the registry host it talks
// to): besides `jobs` in all, at most `per_group` tasks of one group run at
// once. A free worker takes the first waiting task whose group has room.
Result<void> parallel_try(const std::vector<std::string>& group, int jobs, int per_group,
                          const std::function<Result<void>(std::size_t)>& task);

}  // namespace gb
