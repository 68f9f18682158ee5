#include "packages/rpm_md.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <set>

#include <stdlib.h>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"
#include "packages/solver.hpp"

namespace gb::packages::rpm_md {

namespace {

constexpr std::uint64_t k_repomd_max = 4ull << 20;
constexpr std::uint64_t k_signature_max = 64ull << 10;
// Bounds far above any distribution repo's primary.xml, still refusing a runaway one.
constexpr std::uint64_t k_primary_max = 1ull << 30;       // packed
constexpr std::uint64_t k_primary_open_max = 2ull << 30;  // decompressed
constexpr std::uint64_t k_primary_max_ratio = 64;  // primary.xml packs 10-25x; more is a bomb
// filelists.xml names every file of every package: several times primary's size.
constexpr std::uint64_t k_filelists_open_max = 8ull << 30;

bool is_evr_part(std::string_view s) { return is_word(s, "._+~^"); }

bool safe_location(std::string_view href) {
  if (href.empty() || href[0] == '/' || href.find("..") != std::string_view::npos || href.find("://") != std::string_view::npos)
    return false;
  for (char c : href)
    if (static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#' || c == '\\' || c == 0x7f) return false;
  return true;
}

// Text that came from a repository, made fit for a one-line error.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 400)) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  return out;
}

// A source's repos: each suite below its URL, or the URL itself.
std::vector<std::string> repos_of(const recipes::PackageSource& source) {
  std::vector<std::string> out;
  for (const auto& suite : source.suites) out.push_back(source.url + "/" + suite);
  if (out.empty()) out.push_back(source.url);
  return out;
}

// "[epoch:]version-release", each part rpm's characters.
bool is_evr(std::string_view evr) {
  auto colon = evr.find(':');
  if (colon != std::string_view::npos && !is_digits(evr.substr(0, colon))) return false;
  std::string_view vr = colon == std::string_view::npos ? evr : evr.substr(colon + 1);
  auto dash = vr.rfind('-');
  return dash != std::string_view::npos && is_evr_part(vr.substr(0, dash)) && is_evr_part(vr.substr(dash + 1));
}

// Where the root element starts: '<' then a letter (not <?xml, <!-- or <!DOCTYPE).
std::size_t first_element(std::string_view text) {
  for (auto at = text.find('<'); at != std::string_view::npos; at = text.find('<', at + 1))
    if (at + 1 < text.size() && std::isalpha(static_cast<unsigned char>(text[at + 1]))) return at;
  return std::string_view::npos;
}

// Repository metadata has no DTD (createrepo_c writes none): one is refused before
// the parser sees it, so that no entity is ever declared, let alone expanded
// (a billion laughs took expat's parser seconds to refuse, minutes under ASan).
struct Prolog {
  std::string tail;
  bool done = false;
  std::string error;
  void feed(const char* data, size_t n) {
    if (done || !error.empty()) return;
    std::string window = tail + std::string(data, n);
    auto doctype = window.find("<!DOCTYPE"), root = first_element(window);
    if (doctype != std::string::npos && (root == std::string::npos || doctype < root)) {
      error = "a document type declaration (<!DOCTYPE), which repository metadata never has; refused";
    } else if (root != std::string::npos) {
      done = true;
    } else {
      tail = window.substr(window.size() > 16 ? window.size() - 16 : 0);
    }
  }
};

// The decompressed primary.xml as a stdio stream for libsolv, read through
// libarchive from the packed bytes: bounded, its size and sha256 kept.
struct OpenStream {
  gb::detail::ArchiveReader archive{archive_read_new()};
  std::uint64_t max_bytes = 0;
  std::uint64_t total = 0;
  signing::Sha256 sha;
  Prolog prolog;
  std::string error;

  static ssize_t read(void* cookie, char* buf, size_t n) {
    auto& s = *static_cast<OpenStream*>(cookie);
    auto fail = [&](std::string why) -> ssize_t {
      s.error = std::move(why);
      return -1;
    };
    if (!s.error.empty()) return -1;
    la_ssize_t got = archive_read_data(s.archive.get(), buf, n);
    if (got < 0) return fail("cannot decompress: " + gb::detail::archive_error(s.archive.get()));
    s.total += static_cast<std::uint64_t>(got);
    if (s.total > s.max_bytes) return fail("decompresses to more than " + std::to_string(s.max_bytes) + " bytes; refused");
    s.sha.update(buf, static_cast<size_t>(got));
    s.prolog.feed(buf, static_cast<size_t>(got));
    if (!s.prolog.error.empty()) return fail(s.prolog.error);
    return got;
  }
};

// `xml` as a stream for libsolv's readers, once the prolog check passes.
Result<detail::File> open_xml(std::string_view xml, const std::string& what) {
  Prolog prolog;
  prolog.feed(xml.data(), xml.size());
  if (!prolog.error.empty()) return op_error(what + ": " + prolog.error);
  detail::File in(xml.empty() ? std::fopen("/dev/null", "r") : fmemopen(const_cast<char*>(xml.data()), xml.size(), "r"));
  if (!in) return op_error(what + ": cannot read it: " + std::strerror(errno));
  return in;
}

// One pool per Index: the repos read, and a pseudo-installed repo that
// provides the rpmlib() features rpm itself has (createrepo_c leaves them out
// of primary.xml, but an index may list them).
struct RpmIndex final : detail::SolvIndex {
  explicit RpmIndex(const std::string& arch_) : SolvIndex(DISTTYPE_RPM, arch_, &rpm_md::compare_versions) {}

  struct RepoInfo {
    std::string repo_url{};
    recipes::PackageSource source{};
    Repo* repo = nullptr;
    // Where its filelists.xml is, as the verified repomd.xml says (load_index).
    std::string repomd_url{};
    std::optional<RepomdFile> filelists{};
    bool signed_repomd = false;
    bool files_read = false;
  };
  std::deque<RepoInfo> repos;  // Repo::appdata points here
  Repo* system = nullptr;
  bool file_unmet = false;  // the last resolve failed on a file requirement

  Package package(Id id) const override {
    Solvable* s = pool->solvables + id;
    const auto* info = static_cast<const RepoInfo*>(s->repo->appdata);
    Package out;
    out.name = str(s->name);
    out.version = str(s->evr);
    out.arch = str(s->arch);
    const char* src = solvable_lookup_sourcepkg(s);
    out.source = src ? src : "";
    unsigned medianr = 0;
    const char* loc = solvable_lookup_location(s, &medianr);
    out.location = loc ? loc : "";
    Id type = 0;
    const char* sum = solvable_lookup_checksum(s, SOLVABLE_CHECKSUM, &type);
    out.sha256 = sum && type == REPOKEY_TYPE_SHA256 ? to_lower(sum) : "";
    out.size = solvable_lookup_num(s, SOLVABLE_DOWNLOADSIZE, 0);
    out.repo_url = info->repo_url;
    out.origin = info->source.name;
    return out;
  }

  using Check = std::function<Result<void>()>;  // what the stream saw, once libsolv has read it

  // libsolv's rpm-md reader over `in` into `repo`.
  Result<void> read(Repo* repo, std::FILE* in, int flags, const Check& after_read, const std::string& what) {
    const bool failed = repo_add_rpmmd(repo, in, nullptr, flags) != 0;
    if (auto r = after_read(); !r) return r.error();
    if (failed) return op_error(what + ": " + printable(pool_errstr(pool)));
    repo_internalize(repo);
    return {};
  }

  // One primary.xml from `in` into a new repo, kept with `info`; on any
  // error the repo is gone again.
  Result<void> add(std::FILE* in, const Check& after_read, RepoInfo info, const std::string& what) {
    Repo* repo = repo_create(pool, what.c_str());
    if (auto r = read(repo, in, 0, after_read, what); !r) {
      repo_free(repo, 1);
      return r.error();
    }
    info.repo = repo;
    repos.push_back(std::move(info));
    repo->appdata = &repos.back();
    // Every package as the old reader demanded: the fields a download and
    // the site repository use, in rpm's own character sets.
    int n = 0;
    Id id;
    Solvable* s;
    FOR_REPO_SOLVABLES(repo, id, s) {
      ++n;
      Package pkg = package(id);
      auto where = [&] { return what + ": package " + std::to_string(n) + (pkg.name.empty() ? "" : " (" + printable(pkg.name) + ")"); };
      Failure bad{ErrorKind::Failed, ""};
      if (!is_word(pkg.name, "+._-")) bad.message = where() + ": name " + quote(pkg.name) + " is not an rpm package name";
      else if (!is_word(pkg.arch, "_")) bad.message = where() + ": arch " + quote(pkg.arch) + " is not an rpm architecture";
      else if (!is_evr(pkg.version)) bad.message = where() + ": version " + quote(pkg.version) + " is not an rpm version";
      else if (solvable_lookup_str(s, SOLVABLE_MEDIABASE))
        bad.message = where() + ": location xml:base (a package elsewhere) is not supported";
      else if (!safe_location(pkg.location) || !ends_with(pkg.location, ".rpm"))
        bad.message = where() + ": location href " + quote(pkg.location) + " is not an .rpm path below the repository";
      else if (pkg.sha256.size() != 64 || pkg.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
        bad.message = where() + ": no sha256 checksum (sha256 only)";
      else if (!pkg.source.empty() && !is_word(pkg.source, "+._-~^:"))
        bad.message = where() + ": sourcerpm " + quote(pkg.source) + " is not a file name";
      if (!bad.message.empty()) {
        repos.pop_back();
        repo_free(repo, 1);
        return bad;
      }
    }
    prepared = false;
    return {};
  }

  // A filelists.xml from `in` onto the packages of `info`'s repo, matched by
  // their checksum (libsolv's REPO_EXTEND_SOLVABLES, as dnf loads it).
  Result<void> extend(RepoInfo& info, std::FILE* in, const Check& after_read, const std::string& what) {
    if (auto r = read(info.repo, in, REPO_EXTEND_SOLVABLES, after_read, what); !r) return r.error();
    info.files_read = true;
    prepared = false;
    return {};
  }

  // The pseudo-installed rpmlib() provider, file provides and the provides index.
  void prepare() override {
    if (system) repo_free(system, 1);
    std::set<Id> features;
    Id id;
    FOR_POOL_SOLVABLES(id) {
      const Solvable* s = pool->solvables + id;
      if (!s->repo || !s->requires_) continue;
      for (Id* dp = s->repo->idarraydata + s->requires_; *dp; ++dp) {
        Id name = *dp;
        while (ISRELDEP(name)) name = GETRELDEP(pool, name)->name;
        if (starts_with(pool_id2str(pool, name), "rpmlib(")) features.insert(name);
      }
    }
    system = repo_create(pool, "@rpm");
    Solvable* rpm = pool_id2solvable(pool, repo_add_solvable(system));
    rpm->name = pool_str2id(pool, "gpubundle-rpmlib-features", 1);
    rpm->evr = pool_str2id(pool, "1-1", 1);
    rpm->arch = ARCH_NOARCH;
    for (Id f : features) rpm->provides = repo_addid_dep(system, rpm->provides, f, 0);
    repo_internalize(system);
    pool_set_installed(pool, system);
    pool_addfileprovides(pool);
    pool_createwhatprovides(pool);
  }
  void before_solve(detail::SolvQueue&) override { file_unmet = false; }

  // NAME, NAME.ARCH, NAME-[EPOCH:]VERSION[-RELEASE][.ARCH], as dnf takes them.
  std::set<Id> select(const std::string& name, detail::SolvQueue& job) override {
    detail::SolvQueue sel, found;
    selection_make(pool, sel.get(), name.c_str(), SELECTION_NAME | SELECTION_DOTARCH | SELECTION_CANON);
    selection_solvables(pool, sel.get(), found.get());
    std::set<Id> candidates;
    for (int i = 0; i < found.size(); ++i)
      if (pool->solvables[found[i]].repo != system && pool_installable(pool, pool->solvables + found[i])) candidates.insert(found[i]);
    for (int i = 0; !candidates.empty() && i < sel.size(); i += 2) queue_push2(job.get(), sel[i] | SOLVER_INSTALL, sel[i + 1]);
    return candidates;
  }

  std::string describe(const std::vector<recipes::PackageSource>& sources) const override {
    std::vector<std::string> parts;
    for (const auto& s : sources) parts.push_back("'" + s.name + "' (" + join(repos_of(s), ", ") + ")");
    return std::string(sources.size() == 1 ? "rpm-md source " : "rpm-md sources ") + join(parts, ", ");
  }

  // libsolv's words for the first problem, and whether a file requirement is
  // unmet: primary.xml lists only the files in bin/ and /etc, filelists.xml
  // the rest (load_filelists()).
  std::string problem(Solver* solver, const std::string& sources) override {
    for (Id n = 1; n <= static_cast<Id>(solver_problem_count(solver)); ++n)
      for (const auto& r : detail::problem_rules(solver, n))
        if (r.type == SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP && r.dep && pool_dep2str(pool, r.dep)[0] == '/') file_unmet = true;
    const bool any_read = std::ranges::any_of(repos, [](const RepoInfo& info) { return info.files_read; });
    const char* hint = !file_unmet ? ""
                       : needs_filelists() ? " (primary.xml lists only the files in bin/ and /etc; filelists.xml is not read yet)"
                       : any_read ? " (filelists.xml read too)"
                              : " (primary.xml lists only the files in bin/ and /etc, and the repository names no filelists.xml)";
    return printable(solver_problem2str(solver, 1)) + ", in " + sources + hint;
  }

  bool needs_filelists() const {
    return file_unmet && std::ranges::any_of(repos, [](const RepoInfo& info) { return info.filelists && !info.files_read; });
  }
};

// Fetches one metadata file that `info`'s verified repomd.xml names, checks
// its packed size and sha256 against it, and has `index` read it as it is
// decompressed (never whole in memory: peak memory is the packed bytes and
// the pool), bounded; its open-checksum is checked once libsolv has read it.
// A repo not read yet reads its primary.xml, a repo read its filelists.xml.
Result<void> stream_metadata(net::Transport& t, RpmIndex& index, RpmIndex::RepoInfo& info, const RepomdFile& f,
                             std::uint64_t open_limit) {
  const std::string url = info.repo_url + "/" + f.href, &repomd_url = info.repomd_url;
  if (f.size > k_primary_max)
    return op_error(url + ": larger than " + std::to_string(k_primary_max >> 20) + " MiB packed, by the signed " + repomd_url +
                    "; refused");
  auto packed = get_document(t, info.source, url, f.size ? f.size : k_primary_max);
  if (!packed) return packed.error();
  if (f.size && packed->size() != f.size)
    return op_error(url + ": " + std::to_string(packed->size()) + " bytes, but the signed " + repomd_url + " says " +
                    std::to_string(f.size));
  if (auto got = signing::sha256_hex(*packed); got != f.sha256)
    return op_error(url + ": sha256 " + got + " differs from the signed " + repomd_url + "'s " + f.sha256);
  // An unsigned repomd.xml (signatures: packages) is the sender's word: the
  // decompressed size is bounded by a plausible ratio to the bytes that came too.
  OpenStream stream;
  stream.max_bytes = info.signed_repomd ? open_limit
                                        : std::min(open_limit, std::max<std::uint64_t>(packed->size(), 1) * k_primary_max_ratio);
  gb::detail::support_builtin_filters(stream.archive.get());
  archive_read_support_format_raw(stream.archive.get());
  archive_entry* e = nullptr;
  if (archive_read_open_memory(stream.archive.get(), packed->data(), packed->size()) != ARCHIVE_OK ||
      archive_read_next_header(stream.archive.get(), &e) != ARCHIVE_OK)
    return op_error(url + ": cannot decompress: " + gb::detail::archive_error(stream.archive.get()));
  cookie_io_functions_t io{};
  io.read = &OpenStream::read;
  detail::File in(fopencookie(&stream, "r", io));
  if (!in) return op_error(url + ": cannot read it: " + std::strerror(errno));
  auto after_read = [&]() -> Result<void> {
    if (!stream.error.empty()) return op_error(url + ": " + stream.error);
    if (!f.open_sha256.empty() && stream.sha.hex() != f.open_sha256)
      return op_error(url + ": the decompressed sha256 differs from the signed " + repomd_url + "'s open-checksum");
    return {};
  };
  return info.repo ? index.extend(info, in.get(), after_read, url) : index.add(in.get(), after_read, info, url);
}

}  // namespace

Result<Repomd> parse_repomd(std::string_view xml, const std::string& what) {
  auto in = open_xml(xml, what);
  if (!in) return in.error();
  detail::SolvPool pool(pool_create());
  Pool* p = pool.get();
  Repo* repo = repo_create(p, what.c_str());
  if (repo_add_repomdxml(repo, in->get(), 0) != 0) return op_error(what + ": " + printable(pool_errstr(p)));
  repo_internalize(repo);
  std::optional<RepomdFile> primary, filelists;
  Failure bad{ErrorKind::Failed, ""};
  Dataiterator di;
  dataiterator_init(&di, p, repo, SOLVID_META, REPOSITORY_REPOMD_TYPE, nullptr, 0);
  dataiterator_prepend_keyname(&di, REPOSITORY_REPOMD);
  while (bad.message.empty() && dataiterator_step(&di)) {
    dataiterator_setpos_parent(&di);
    const char* type_str = pool_lookup_str(p, SOLVID_POS, REPOSITORY_REPOMD_TYPE);
    const std::string type = type_str ? type_str : "";
    if (type != "primary" && type != "filelists") continue;
    auto& slot = type == "primary" ? primary : filelists;
    if (slot) {
      bad.message = what + ": two <data type=\"" + type + "\">";
      break;
    }
    RepomdFile f;
    const char* href = pool_lookup_str(p, SOLVID_POS, REPOSITORY_REPOMD_LOCATION);
    Id sum_type = 0, open_type = 0;
    const char* sum = pool_lookup_checksum(p, SOLVID_POS, REPOSITORY_REPOMD_CHECKSUM, &sum_type);
    const char* open_sum = pool_lookup_checksum(p, SOLVID_POS, REPOSITORY_REPOMD_OPENCHECKSUM, &open_type);
    f.size = pool_lookup_num(p, SOLVID_POS, REPOSITORY_REPOMD_SIZE, 0);
    if (!href || !*href) bad.message = what + ": the " + type + " data has no location";
    else if (!safe_location(href))
      bad.message = what + ": " + type + " location href " + quote(printable(href)) + " is not a path below the repository";
    else if (!sum) bad.message = what + ": the " + type + " data has no checksum";
    else if (sum_type != REPOKEY_TYPE_SHA256) bad.message = what + ": " + type + " checksum type is not supported (sha256 only)";
    if (!bad.message.empty()) break;
    f.href = href;
    f.sha256 = sum;
    if (open_sum && open_type == REPOKEY_TYPE_SHA256) f.open_sha256 = open_sum;
    slot = std::move(f);
  }
  dataiterator_free(&di);
  if (!bad.message.empty()) return bad;
  if (!primary) return op_error(what + ": no <data type=\"primary\">");
  return Repomd{std::move(*primary), std::move(filelists)};
}

Index::Index(const std::string& arch) : PackageIndex(std::make_unique<RpmIndex>(arch)) {}

Result<void> Index::add_primary(std::string_view xml, const recipes::PackageSource& source, const std::string& repo_url,
                                const std::string& what) {
  auto in = open_xml(xml, what);
  if (!in) return in.error();
  return static_cast<RpmIndex&>(*m_impl).add(in->get(), [] { return Result<void>(); }, {.repo_url = repo_url, .source = source}, what);
}

Result<void> Index::add_filelists(std::string_view xml, const std::string& repo_url, const std::string& what) {
  auto in = open_xml(xml, what);
  if (!in) return in.error();
  auto& impl = static_cast<RpmIndex&>(*m_impl);
  for (auto& info : impl.repos)
    if (info.repo_url == repo_url) return impl.extend(info, in->get(), [] { return Result<void>(); }, what);
  return op_error(what + ": no primary.xml read for " + repo_url);
}

bool Index::needs_filelists() const { return static_cast<const RpmIndex&>(*m_impl).needs_filelists(); }


int compare_versions(std::string_view a, std::string_view b) {
  auto has_release = [](std::string_view v) {
    auto colon = v.find(':');
    return v.find('-', colon == std::string_view::npos ? 0 : colon) != std::string_view::npos;
  };
  auto without_release = [](std::string_view v) { return std::string(v.substr(0, v.rfind('-'))); };
  std::string x(a), y(b);
  if (has_release(x) != has_release(y)) (has_release(x) ? x : y) = without_release(has_release(x) ? x : y);
  return detail::evr_compare(DISTTYPE_RPM, x, y);
}

Result<void> load_index(net::Transport& t, const recipes::PackageSource& source, Index& index) {
  for (const auto& repo : repos_of(source)) {
    std::string repomd_url = repo + "/repodata/repomd.xml";
    auto repomd = get_document(t, source, repomd_url, k_repomd_max);
    if (!repomd) return repomd.error();
    auto sig = get_optional_document(t, source, repomd_url + ".asc", k_signature_max);
    if (!sig) return sig.error();
    if (!*sig && !source.package_signatures)
      return op_error(repomd_url + ": not signed (" + repomd_url + ".asc: not found); package source '" + source.name +
                      "' must be a signed repository, or say `signatures: packages` to check each rpm's signature instead");
    if (*sig)
      if (auto ok = signing::openpgp::verify_detached(source.keyring, *repomd, **sig, repomd_url); !ok) return ok.error();
    auto md = parse_repomd(*repomd, repomd_url);
    if (!md) return md.error();
    // filelists.xml only when a resolve needs it (load_filelists()).
    RpmIndex::RepoInfo info{.repo_url = repo, .source = source, .repomd_url = repomd_url, .filelists = md->filelists,
                            .signed_repomd = sig->has_value()};
    if (auto r = stream_metadata(t, static_cast<RpmIndex&>(*index.m_impl), info, md->primary, k_primary_open_max); !r)
      return r.error();
  }
  return {};
}

Result<void> load_filelists(net::Transport& t, Index& index) {
  auto& impl = static_cast<RpmIndex&>(*index.m_impl);
  for (auto& info : impl.repos)
    if (info.filelists && !info.files_read)
      if (auto r = stream_metadata(t, impl, info, *info.filelists, k_filelists_open_max); !r) return r.error();
  return {};
}

Result<WrittenRepo> write_repo(const std::vector<Fetched>& files, const signing::openpgp::SigningKey& key, const std::filesystem::path& dir,
                               CommandRunner* runner) {
  namespace fs = std::filesystem;
  std::error_code ec;
  WrittenRepo out;
  out.root = dir;
  fs::create_directories(dir / "Packages", ec);
  if (ec) return op_error((dir / "Packages").string() + ": " + ec.message());
  std::set<std::string> names;
  for (const auto& f : files) {
    std::string name = f.package.file_name();
    if (!names.insert(name).second) return op_error(name + ": two packages with one file name for " + dir.string());
    fs::copy_file(f.file, dir / "Packages" / name, ec);
    if (ec) return op_error(f.file.string() + ": cannot copy into " + (dir / "Packages").string() + ": " + ec.message());
    ++out.packages;
    out.bytes += f.package.size;
  }
  // gz metadata, which every dnf and yum reads; no sqlite (dnf never reads
  // it); fixed names, so the layout is the one above.
  std::vector<std::string> argv = {"createrepo_c", "--quiet", "--no-database", "--simple-md-filenames",
                                   "--general-compress-type=gz", "--checksum=sha256"};
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  if (*epoch) argv.insert(argv.end(), {"--revision=" + std::to_string(**epoch), "--set-timestamp-to-revision"});
  argv.push_back(dir.string());
  auto run = (runner ? *runner : system_runner()).run(argv, {});
  if (!run) return run.error();
  if (run->status != 0)
    return op_error(dir.string() + ": createrepo_c failed (exit " + std::to_string(run->status) +
                    "): " + bounded_line(std::string(trim(run->err))));
  fs::path repomd = dir / "repodata" / "repomd.xml";
  auto text = read_file(repomd, k_repomd_max);
  if (!text) return text.error();
  auto sig = key.detach_sign(*text, true);
  if (!sig) return sig.error();
  if (auto w = write_atomic(repomd.string() + ".asc", *sig); !w) return w.error();
  if (auto w = write_atomic(dir / "RPM-GPG-KEY-gpubundle", key.public_armored()); !w) return w.error();
  out.release_sha256 = signing::sha256_hex(*text);
  return out;
}

Result<void> verify_package_signature(const std::filesystem::path& keyring, const Fetched& file, CommandRunner* runner) {
  namespace fs = std::filesystem;
  const std::string what = file.file.string();
  std::string tmpl = (fs::temp_directory_path() / "gpubundle-rpmkeys-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return op_error("cannot make a temporary folder in " + fs::temp_directory_path().string());
  ScratchDir scratch(tmpl);
  const fs::path home = scratch.path() / "gnupg", db = scratch.path() / "rpmdb";
  std::error_code ec;
  fs::create_directories(home, ec);
  fs::create_directories(db, ec);
  if (ec) return op_error(scratch.path().string() + ": " + ec.message());
  fs::permissions(home, fs::perms::owner_all, ec);
  ProcessOptions c_locale;
  c_locale.env = {{"LC_ALL", "C"}};
  CommandRunner& tools = runner ? *runner : system_runner();
  auto run = [&](std::vector<std::string> argv) -> Result<ProcessResult> {
    auto r = tools.run(argv, c_locale);
    if (r && r->status != 0)
      return op_error(what + ": " + argv[0] + " failed (exit " + std::to_string(r->status) + "): " + bounded_line(std::string(trim(r->err))));
    return r;
  };
  // rpmkeys imports one armoured key per file: gpg splits the keyring (binary
  // or armoured, one key or many) into those.
  auto gpg = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"gpg", "--homedir", home.string(), "--batch", "--no-tty", "--quiet"});
    return run(args);
  };
  if (auto r = gpg({"--import", keyring.string()}); !r) return r.error();
  auto listed = gpg({"--with-colons", "--list-keys"});
  if (!listed) return listed.error();
  int keys = 0;
  for (const auto& line : split(listed->out, '\n')) {
    auto f = split(line, ':');
    if (f.size() < 10 || f[0] != "fpr" || f[9].size() != 40) continue;
    auto armored = gpg({"--armor", "--export", f[9]});
    if (!armored) return armored.error();
    fs::path key = scratch.path() / ("key" + std::to_string(keys++) + ".asc");
    if (auto w = write_atomic(key, armored->out); !w) return w.error();
    if (auto r = run({"rpmkeys", "--dbpath", db.string(), "--import", key.string()}); !r) return r.error();
  }
  if (keys == 0) return input_error(keyring.string() + ": no OpenPGP public key");
  // rpmkeys exits 0 for an unsigned rpm whose digests match: the signature
  // lines decide. Every one must be OK, and there must be one.
  auto checked = tools.run({"rpmkeys", "--dbpath", db.string(), "--checksig", "-v", what}, c_locale);
  if (!checked) return checked.error();
  bool signed_ok = false;
  for (const auto& line : split(checked->out, '\n')) {
    // "Payload SHA256 digest: BAD (Expected ... != ...)": bytes changed after
    // signing, whoever signed; said as such, not as a missing signature.
    if (line.find(" digest:") != std::string::npos && !ends_with(trim(line), ": OK"))
      return op_error(what + ": its contents do not match its signed digests (" + bounded_line(std::string(trim(line))) + ")");
    if (line.find("Signature") == std::string::npos) continue;
    if (!ends_with(trim(line), ": OK"))
      return op_error(what + ": " + bounded_line(std::string(trim(line))) + " (checked against " + keyring.string() + ")");
    signed_ok = true;
  }
  if (!signed_ok)
    return op_error(what + ": not signed by a key in " + keyring.string() + " (rpmkeys: " +
                    bounded_line(std::string(trim(checked->out + checked->err))) + ")");
  if (checked->status != 0)
    return op_error(what + ": rpmkeys --checksig failed (exit " + std::to_string(checked->status) + "): " +
                    bounded_line(std::string(trim(checked->out + checked->err))));
  // The signed header is the package the index named.
  auto header = run({"rpm", "--dbpath", db.string(), "-qp", "--nosignature", "--nodigest", "--qf",
                     "%{NAME} %{EPOCHNUM}:%{VERSION}-%{RELEASE} %{ARCH}", what});
  if (!header) return header.error();
  const Package& p = file.package;
  std::string want = p.name + " " + (p.version.find(':') == std::string::npos ? "0:" : "") + p.version + " " + p.arch;
  if (header->out != want) return op_error(what + ": its signed header says " + quote(header->out) + ", the index " + quote(want));
  return {};
}

std::string repo_file(const std::string& id, const std::string& baseurl, const std::string& key_url) {
  return "[" + id + "]\nname=" + id + " (kernel packages from gpubundle)\nbaseurl=" + baseurl +
         "\nenabled=1\nrepo_gpgcheck=1\ngpgcheck=0\ngpgkey=" + key_url + "\n";
}

}  // namespace gb::packages::rpm_md
