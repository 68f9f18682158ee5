#pragma once
// Private header: include it from .cpp files only (it brings in libsolv's C
// headers). Move-only owners of the libsolv objects the apt and rpm-md
// clients use, and the SameSource filter they share.
// Include libsolv only through this header: Solvable's member `requires` is
// a C++20 keyword, so it is spelled `requires_` here.

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

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

struct PoolFree {
  void operator()(Pool* p) const { pool_free(p); }
};
struct SolverFree {
  void operator()(Solver* s) const { solver_free(s); }
};
struct TransactionFree {
  void operator()(Transaction* t) const { transaction_free(t); }
};
using SolvPool = std::unique_ptr<Pool, PoolFree>;
using SolvSolver = std::unique_ptr<Solver, SolverFree>;
using SolvTransaction = std::unique_ptr<Transaction, TransactionFree>;

// A FILE* for libsolv's readers (fmemopen, fopencookie).
struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileClose>;

// A libsolv Queue (a growable Id array) that frees itself.
class SolvQueue {
public:
  SolvQueue() { queue_init(&m_q); }
  ~SolvQueue() { queue_free(&m_q); }
  SolvQueue(const SolvQueue&) = delete;
  SolvQueue& operator=(const SolvQueue&) = delete;
  Queue* get() { return &m_q; }
  const Queue& operator*() const { return m_q; }
  int size() const { return m_q.count; }
  Id operator[](int i) const { return m_q.elements[i]; }

private:
  Queue m_q;
};

// The providers of `dep`, through rich dependencies (rpm) and alternatives
// (apt's "a | b") to their leaves. Needs pool_createwhatprovides.
inline void dep_providers(Pool* pool, Id dep, std::set<Id>& out) {
  if (ISRELDEP(dep)) {
    const Reldep* rd = GETRELDEP(pool, dep);
    if (rd->flags == REL_AND || rd->flags == REL_OR || rd->flags == REL_WITH || rd->flags == REL_WITHOUT ||
        rd->flags == REL_COND || rd->flags == REL_UNLESS || rd->flags == REL_ELSE) {
      Id name = rd->name, evr = rd->evr;
      dep_providers(pool, name, out);
      dep_providers(pool, evr, out);
      return;
    }
  }
  Id p, pp;
  FOR_PROVIDES(p, pp, dep) out.insert(p);
}

// Closure::SameSource as a filter over a solved Full closure `chosen`: from
// each solvable in `asked`, the requirements met by chosen packages built
// from the same source (`source_of`; "" is no source, never followed).
inline std::set<Id> same_source_closure(Pool* pool, const std::set<Id>& chosen, const std::vector<std::set<Id>>& asked,
                                        const std::function<std::string(Id)>& source_of) {
  std::set<Id> kept;
  std::vector<Id> todo;
  for (const auto& candidates : asked)
    for (Id id : candidates)
      if (chosen.count(id) && kept.insert(id).second) todo.push_back(id);
  while (!todo.empty()) {
    Id id = todo.back();
    todo.pop_back();
    const Solvable* s = pool->solvables + id;
    const std::string own = source_of(id);
    if (own.empty() || !s->requires_) continue;
    for (const Id* dp = s->repo->idarraydata + s->requires_; *dp; ++dp) {
      if (*dp == SOLVABLE_PREREQMARKER) continue;
      std::set<Id> provided;
      dep_providers(pool, *dp, provided);
      for (Id q : provided)
        if (chosen.count(q) && source_of(q) == own && kept.insert(q).second) todo.push_back(q);
    }
  }
  return kept;
}

}  // namespace gb::detail
