#include "packages/solver.hpp"

#include <algorithm>

#include "common/strings.hpp"

namespace gb::detail {

namespace {

// The providers of `dep`, through rich dependencies (rpm) and alternatives
// (apt's "a | b") to their leaves.
void dep_providers(Pool* pool, Id dep, std::set<Id>& out) {
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
  for (Id p : providers(pool, dep)) out.insert(p);
}

// Closure::SameSource as a filter over a solved Full closure `chosen`: from
// each solvable in `asked`, the requirements met by chosen packages built
// from the same source (Package::source; "" is none, never followed).
std::set<Id> same_source(const SolvIndex& index, const std::set<Id>& chosen, const std::vector<std::set<Id>>& asked) {
  std::set<Id> kept;
  std::vector<Id> todo;
  for (const auto& candidates : asked)
    for (Id id : candidates)
      if (chosen.count(id) && kept.insert(id).second) todo.push_back(id);
  while (!todo.empty()) {
    Id id = todo.back();
    todo.pop_back();
    const Solvable* s = index.pool->solvables + id;
    const std::string own = index.package(id).source;
    if (own.empty() || !s->requires_) continue;
    for (const Id* dp = s->repo->idarraydata + s->requires_; *dp; ++dp) {
      if (*dp == SOLVABLE_PREREQMARKER) continue;
      std::set<Id> provided;
      dep_providers(index.pool, *dp, provided);
      for (Id q : provided)
        if (chosen.count(q) && index.package(q).source == own && kept.insert(q).second) todo.push_back(q);
    }
  }
  return kept;
}

}  // namespace

int evr_compare(int disttype, const std::string& a, const std::string& b) {
  auto pool_of = [](int type) {
    Pool* p = pool_create();  // lives as long as the process
    pool_setdisttype(p, type);
    return p;
  };
  static Pool *const deb = pool_of(DISTTYPE_DEB), *const rpm = pool_of(DISTTYPE_RPM);
  int c = pool_evrcmp_str(disttype == DISTTYPE_DEB ? deb : rpm, a.c_str(), b.c_str(), EVRCMP_COMPARE);
  return (c > 0) - (c < 0);
}

std::vector<ProblemRule> problem_rules(Solver* solver, Id problem) {
  SolvQueue ids;
  solver_findallproblemrules(solver, problem, ids.get());
  std::vector<ProblemRule> out(static_cast<size_t>(ids.size()));
  for (int i = 0; i < ids.size(); ++i) out[i].type = solver_ruleinfo(solver, ids[i], &out[i].source, &out[i].target, &out[i].dep);
  return out;
}

SolvIndex::SolvIndex(int disttype, const std::string& arch_, Compare compare) : arch(arch_), vercmp(compare) {
  pool_setdisttype(pool, disttype);
  // That arch and all (apt) or noarch (rpm) only: libsolv's own table would
  // add i386 to amd64, i686 to x86_64.
  pool_setarchpolicy(pool, arch.c_str());
}

}  // namespace gb::detail

namespace gb::packages {

PackageIndex::PackageIndex(std::unique_ptr<detail::SolvIndex> impl) : m_impl(std::move(impl)) {}
PackageIndex::~PackageIndex() = default;
PackageIndex::PackageIndex(PackageIndex&&) noexcept = default;
PackageIndex& PackageIndex::operator=(PackageIndex&&) noexcept = default;

const std::string& PackageIndex::arch() const { return m_impl->arch; }

Result<std::vector<Package>> PackageIndex::resolve(const FetchRequest& request, const std::vector<recipes::PackageSource>& sources) {
  detail::SolvIndex& m = *m_impl;
  if (!m.prepared) m.prepare();
  m.prepared = true;
  const std::string prefix = request.why.empty() ? "" : request.why + ": ";
  detail::SolvQueue job;
  std::vector<std::set<Id>> asked;  // each name's candidates, where SameSource starts
  std::vector<std::pair<std::string, bool>> names;  // name, optional
  for (const auto& n : request.names) names.emplace_back(n, false);
  for (const auto& n : request.optional_names) names.emplace_back(n, true);
  for (const auto& [name, optional] : names) {
    std::set<Id> candidates = m.select(name, job);
    if (candidates.empty() && optional) continue;
    if (candidates.empty())
      return input_error(prefix + "no package " + quote(name) + " for " + m.arch + " in " + m.describe(sources));
    asked.push_back(std::move(candidates));
  }
  m.before_solve(job);
  detail::SolvSolver solver(solver_create(m.pool));
  solver_set_flag(solver.get(), SOLVER_FLAG_IGNORE_RECOMMENDED, 1);  // no weak dependencies
  if (solver_solve(solver.get(), job.get()) != 0) return input_error(prefix + m.problem(solver.get(), m.describe(sources)));
  detail::SolvTransaction trans(solver_create_transaction(solver.get()));
  std::set<Id> chosen(trans->steps.elements, trans->steps.elements + trans->steps.count);
  if (request.closure == Closure::SameSource) chosen = detail::same_source(m, chosen, asked);
  std::vector<Package> out;
  for (Id id : chosen) out.push_back(m.package(id));
  std::sort(out.begin(), out.end(), [&](const Package& a, const Package& b) {
    if (a.name != b.name) return a.name < b.name;
    if (int c = m.vercmp(a.version, b.version); c != 0) return c < 0;
    return a.arch < b.arch;
  });
  return out;
}

std::vector<Package> PackageIndex::packages() const {
  Pool* pool = m_impl->pool;  // the name FOR_POOL_SOLVABLES uses
  std::vector<Package> out;
  Id id;
  FOR_POOL_SOLVABLES(id) {
    if (pool->solvables[id].repo != pool->installed) out.push_back(m_impl->package(id));
  }
  return out;
}

}  // namespace gb::packages
