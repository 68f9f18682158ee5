#pragma once
// Private header: include it from .cpp files only (it brings in libsolv's C
// headers). Move-only owners of the libsolv objects the apt and rpm-md
// clients use, and the index and solving they share.
// Include libsolv only through this header: Solvable's member `requires` is
// a C++20 keyword, so it is spelled `requires_` here.

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "packages/packages.hpp"

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wkeyword-macro"
#endif
#define requires requires_
extern "C" {
#include <solv/evr.h>
#include <solv/knownid.h>
#include <solv/pool.h>
#include <solv/poolarch.h>
#include <solv/queue.h>
#include <solv/repo.h>
#include <solv/repo_deb.h>
#include <solv/repo_repomdxml.h>
#include <solv/repo_rpmmd.h>
#include <solv/selection.h>
#include <solv/solvable.h>
#include <solv/solver.h>
#include <solv/transaction.h>
}
#undef requires
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

namespace gb::detail {

// Owners of libsolv's objects, and of a FILE* for its readers (fmemopen, fopencookie).
template <auto F>
struct SolvFree {
  template <class T>
  void operator()(T* p) const { F(p); }
};
inline void close_file(std::FILE* f) { std::fclose(f); }
using SolvPool = std::unique_ptr<Pool, SolvFree<pool_free>>;
using SolvSolver = std::unique_ptr<Solver, SolvFree<solver_free>>;
using SolvTransaction = std::unique_ptr<Transaction, SolvFree<transaction_free>>;
using File = std::unique_ptr<std::FILE, SolvFree<close_file>>;

// A libsolv Queue (a growable Id array) that frees itself.
struct SolvQueue : Queue {
  SolvQueue() { queue_init(this); }
  ~SolvQueue() { queue_free(this); }
  SolvQueue(const SolvQueue&) = delete;
  SolvQueue& operator=(const SolvQueue&) = delete;
  Queue* get() { return this; }
  int size() const { return count; }
  Id operator[](int i) const { return elements[i]; }
};

// The solvables that provide `dep` (after pool_createwhatprovides).
inline std::vector<Id> providers(Pool* pool, Id dep) {
  std::vector<Id> out;
  Id p, pp;
  FOR_PROVIDES(p, pp, dep) out.push_back(p);
  return out;
}

// -1, 0 or 1: `a` and `b` in the order of `disttype` (DISTTYPE_DEB, DISTTYPE_RPM).
int evr_compare(int disttype, const std::string& a, const std::string& b);

// One rule behind a solver problem.
struct ProblemRule {
  SolverRuleinfo type{};
  Id source = 0, target = 0, dep = 0;
};
std::vector<ProblemRule> problem_rules(Solver* solver, Id problem);

// The pool behind a packages::PackageIndex, whose resolve() runs through the
// hooks below: what each format says.
struct SolvIndex {
  using Compare = int (*)(std::string_view, std::string_view);
  SolvIndex(int disttype, const std::string& arch, Compare compare);
  virtual ~SolvIndex() = default;

  // Before a resolve, once after each add: the pool made ready to solve.
  virtual void prepare() = 0;
  // The solvables a requested name stands for; where there are any, the job
  // that installs it is pushed onto `job`.
  virtual std::set<Id> select(const std::string& name, SolvQueue& job) = 0;
  // Right before solving, the names' jobs in: its own jobs, its state reset.
  virtual void before_solve(SolvQueue&) {}
  // The solver's failure as one line, ending with `sources` named.
  virtual std::string problem(Solver* solver, const std::string& sources) = 0;
  virtual std::string describe(const std::vector<recipes::PackageSource>& sources) const = 0;
  virtual packages::Package package(Id id) const = 0;

  const char* str(Id id) const { return id ? pool_id2str(pool, id) : ""; }

  SolvPool solv{pool_create()};
  Pool* const pool = solv.get();
  const std::string arch;
  const Compare vercmp;
  bool prepared = false;  // since the last add
};

}  // namespace gb::detail
