#pragma once
// Private header: include it from .cpp files only (it brings in libsolv's C
// headers). Move-only owners of the libsolv objects the rpm-md client uses.
// Include libsolv only through this header: Solvable's member `requires` is
// a C++20 keyword, so it is spelled `requires_` here.

#include <memory>

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

}  // namespace gb::detail
