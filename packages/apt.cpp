#include "packages/apt.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/strings.hpp"
#include "common/time.hpp"
#include "net/transport.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"
#include "packages/solver.hpp"

namespace gb::packages::apt {

namespace {

constexpr std::uint64_t k_release_max_bytes = 32ull << 20;    // Ubuntu's InRelease is ~300 KB
constexpr std::uint64_t k_packages_max_bytes = 1ull << 30;    // a decompressed Packages list (Ubuntu universe: ~80 MB)
constexpr size_t k_paragraph_max_fields = 256;                 // a package has ~20; the duplicate check is quadratic

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Not empty, and each character one of `chars`.
bool only(std::string_view s, std::string_view chars) { return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos; }

bool is_package_name(std::string_view s) {
  return only(s.substr(0, 1), "0123456789abcdefghijklmnopqrstuvwxyz") && only(s, "0123456789abcdefghijklmnopqrstuvwxyz+-.");
}
bool is_version(std::string_view s) { return only(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-~:"); }
bool is_arch_name(std::string_view s) { return only(s, "0123456789abcdefghijklmnopqrstuvwxyz-"); }
bool is_hex64(std::string_view s) { return s.size() == 64 && only(s, "0123456789abcdefABCDEF"); }

// A path below the archive root: no empty, "." or ".." part, no leading '/',
// nothing that is not printable.
bool is_pool_path(std::string_view s) {
  if (s.empty() || s.front() == '/' || s.back() == '/') return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) <= ' ' || c == '\\' || c == 0x7f) return false;
  for (const auto& part : split(s, '/'))
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  if (!is_digits(s) || std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) return std::nullopt;
  return v;
}

// Whitespace-separated words (spaces, tabs and the newlines of continuation lines).
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// --- versions ---

// A Debian version spelled so that libsolv's Debian order is dpkg's:
// libsolv weighs a digit against the end of a string where dpkg reads a
// missing number as 0, and puts "1.0" before "1.0-0", which dpkg holds
// equal. With each part ending in digits (no revision is "0") they agree.
std::string solv_version(std::string_view v) {
  std::string out;
  if (auto colon = v.find(':'); colon != std::string_view::npos) {
    out = std::string(v.substr(0, colon + 1));
    v.remove_prefix(colon + 1);
  }
  auto closed = [&](std::string_view part) {
    out += part;
    if (part.empty() || !is_digit(part.back())) out += '0';
  };
  auto dash = v.rfind('-');
  closed(v.substr(0, dash));
  out += '-';
  closed(dash == std::string_view::npos ? std::string_view() : v.substr(dash + 1));
  return out;
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
  return detail::evr_compare(DISTTYPE_DEB, solv_version(a), solv_version(b));
}

// --- deb822 ---

std::optional<std::string_view> Paragraph::field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (iequals(k, name)) return v;
  return std::nullopt;
}

Result<std::vector<Paragraph>> parse_deb822(std::string_view text, const std::string& what) {
  std::vector<Paragraph> out;
  Paragraph cur;
  size_t para_start = 0, line_no = 0;     // cur.line is 0 between paragraphs
  size_t value_start = 0, value_end = 0;  // the open field's value, as offsets into text
  auto at = [&] { return what + ":" + std::to_string(line_no) + ": "; };
  auto close_field = [&] {
    if (!cur.fields.empty()) cur.fields.back().second = trim(text.substr(value_start, value_end - value_start));
  };
  auto close_para = [&](size_t end) {
    if (cur.line == 0) return;
    close_field();
    cur.text = text.substr(para_start, end - para_start);
    out.push_back(std::move(cur));
    cur = Paragraph{};
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(pos, (nl == std::string_view::npos ? text.size() : nl) - pos);
    ++line_no;
    if (trim(line).empty()) {
      close_para(pos);
    } else if (is_blank(line.front())) {
      if (cur.line == 0) return op_error(at() + "a continuation line outside a field");
      value_end = pos + line.size();
    } else {
      auto colon = line.find(':');
      std::string_view name = colon == std::string_view::npos ? std::string_view() : line.substr(0, colon);
      if (name.empty() || name.find_first_of(" \t") != std::string_view::npos)
        return op_error(at() + quote(line, 80) + " is not a 'Field: value' line");
      if (cur.line == 0) {
        para_start = pos;
        cur.line = line_no;
      }
      close_field();
      if (cur.fields.size() == k_paragraph_max_fields)
        return op_error(at() + "more than " + std::to_string(k_paragraph_max_fields) + " fields in one paragraph");
      if (cur.field(name)) return op_error(at() + "field " + quote(name) + " twice in one paragraph");
      cur.fields.emplace_back(name, std::string_view());
      value_start = pos + colon + 1;
      value_end = pos + line.size();
    }
    pos = end;
  }
  close_para(text.size());
  return out;
}

// --- Release ---

std::optional<std::int64_t> parse_release_date(std::string_view text) {
  auto w = words(text);
  // "Sat," is optional; then DD Mon YYYY HH:MM:SS ZONE.
  if (!w.empty() && w.front().size() == 4 && w.front().back() == ',') w.erase(w.begin());
  if (w.size() != 5) return std::nullopt;
  static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm{};
  auto day = parse_u64(w[0]), year = parse_u64(w[2]);
  if (!day || !year || *day < 1 || *day > 31 || *year < 1970 || *year > 9999) return std::nullopt;
  int month = -1;
  for (int m = 0; m < 12; ++m)
    if (iequals(w[1], months[m])) month = m;
  if (month < 0) return std::nullopt;
  auto hms = split(w[3], ':');
  if (hms.size() != 3) return std::nullopt;
  auto h = parse_u64(hms[0]), mi = parse_u64(hms[1]), s = parse_u64(hms[2]);
  if (!h || !mi || !s || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;
  std::int64_t offset = 0;
  std::string_view zone = w[4];
  if (zone == "UTC" || zone == "GMT" || zone == "Z") {
  } else if (zone.size() == 5 && (zone[0] == '+' || zone[0] == '-') && is_digits(zone.substr(1))) {
    offset = ((zone[1] - '0') * 10 + (zone[2] - '0')) * 3600 + ((zone[3] - '0') * 10 + (zone[4] - '0')) * 60;
    if (zone[0] == '-') offset = -offset;
  } else {
    return std::nullopt;
  }
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*h);
  tm.tm_min = static_cast<int>(*mi);
  tm.tm_sec = static_cast<int>(*s);
  return static_cast<std::int64_t>(timegm(&tm)) - offset;
}

Result<Release> parse_release(std::string_view text, const std::string& what) {
  auto paras = parse_deb822(text, what);
  if (!paras) return paras.error();
  if (paras->size() != 1) return op_error(what + ": not one Release paragraph but " + std::to_string(paras->size()));
  const Paragraph& p = paras->front();
  Release r;
  if (auto v = p.field("Suite")) r.suite = std::string(*v);
  if (auto v = p.field("Codename")) r.codename = std::string(*v);
  if (auto v = p.field("Valid-Until")) {
    r.valid_until = parse_release_date(*v);
    if (!r.valid_until) return op_error(what + ": Valid-Until " + quote(*v) + " is not a date");
  }
  auto list = p.field("SHA256");
  if (!list) return op_error(what + ": no SHA256 list (apt repositories since 2017 carry one)");
  for (std::string_view line : split(*list, '\n')) {
    if (trim(line).empty()) continue;
    auto w = words(line);
    auto size = w.size() == 3 ? parse_u64(w[1]) : std::nullopt;
    if (w.size() != 3 || !is_hex64(w[0]) || !size || !is_pool_path(w[2]))
      return op_error(what + ": SHA256 line " + quote(trim(line), 120) + " is not '<sha256> <size> <path>'");
    r.sha256.push_back({std::string(w[2]), *size, to_lower(w[0])});
  }
  return r;
}

Result<void> check_release(const Release& release, const std::string& suite, std::int64_t now, const std::string& what) {
  if (release.suite != suite && release.codename != suite)
    return op_error(what + ": is the Release of suite " + quote(release.suite) + " (codename " + quote(release.codename) +
                    "), not of " + quote(suite) + " (refused: a signed Release of another suite)");
  // Ubuntu's pockets share their Codename (jammy-security: Codename jammy): a
  // Codename match whose Suite is another pocket of it is that other suite.
  if (release.suite != suite && starts_with(release.suite, suite + "-"))
    return op_error(what + ": is the Release of suite " + quote(release.suite) + ", which shares the codename " + quote(suite) +
                    " (refused: a signed Release of another suite)");
  if (release.valid_until && *release.valid_until <= now)
    return op_error(what + ": expired: Valid-Until " + rfc3339_utc(*release.valid_until) +
                    " has passed (a stale or replayed Release)");
  return {};
}

Result<IndexFile> packages_file(const Release& release, const std::string& component, const std::string& arch,
                                const std::string& what) {
  std::string base = component + "/binary-" + arch + "/Packages";
  for (const char* ext : {".xz", ".gz", ".zst", ".bz2", ""})
    for (const auto& f : release.sha256)
      if (f.path == base + ext) return f;
  return input_error(what + ": the Release lists no Packages for component " + quote(component) + ", architecture " +
                  quote(arch) + " (no " + base + " in its SHA256 list)");
}

// --- relations ---

Result<std::vector<std::vector<Relation>>> parse_relations(std::string_view field) {
  std::vector<std::vector<Relation>> out;
  if (trim(field).empty()) return out;
  for (const auto& group_text_ : split(field, ',')) {
    std::vector<Relation> group;
    for (const auto& alt_text : split(group_text_, '|')) {
      std::string_view s = trim(alt_text);
      Relation r;
      size_t i = 0;
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '(' && s[i] != ':') ++i;
      r.name = std::string(s.substr(0, i));
      if (!is_package_name(r.name)) return input_error(quote(s, 80) + " does not start with a package name");
      if (i < s.size() && s[i] == ':') {
        size_t start = ++i;
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '(') ++i;
        r.arch = std::string(s.substr(start, i - start));
        if (!is_arch_name(r.arch)) return input_error(quote(s, 80) + " has a bad architecture qualifier");
      }
      std::string_view rest = trim(s.substr(i));
      if (!rest.empty()) {
        if (rest.front() != '(' || rest.back() != ')') return input_error(quote(s, 80) + " is not 'name [(op version)]'");
        rest = trim(rest.substr(1, rest.size() - 2));
        size_t k = 0;
        while (k < rest.size() && (rest[k] == '<' || rest[k] == '>' || rest[k] == '=')) ++k;
        std::string_view op = rest.substr(0, k);
        if (op == "<<") r.op = Op::Less;
        else if (op == "<=" || op == "<") r.op = Op::LessEq;  // '<' and '>' are dpkg's obsolete spellings
        else if (op == "=") r.op = Op::Eq;
        else if (op == ">=" || op == ">") r.op = Op::GreaterEq;
        else if (op == ">>") r.op = Op::Greater;
        else return input_error(quote(s, 80) + " has no relation operator (<< <= = >= >>)");
        r.version = std::string(trim(rest.substr(k)));
        if (!is_version(r.version)) return input_error(quote(s, 80) + " has no valid version");
      }
      group.push_back(std::move(r));
    }
    out.push_back(std::move(group));
  }
  return out;
}

// --- Packages ---

Result<std::vector<Package>> parse_packages(std::string_view text, const recipes::PackageSource& source, const std::string& what) {
  auto paras = parse_deb822(text, what);
  if (!paras) return paras.error();
  std::vector<Package> out;
  out.reserve(paras->size());
  for (const Paragraph& p : *paras) {
    auto name = p.field("Package");
    std::string at = what + ":" + std::to_string(p.line);
    if (!name || !is_package_name(*name))
      return op_error(at + ": a paragraph without a valid Package name" + (name ? " (" + quote(*name, 80) + ")" : ""));
    at += ": package " + std::string(*name);
    Package pkg;
    pkg.name = std::string(*name);
    for (const char* f : {"Version", "Architecture", "Filename", "Size", "SHA256"})
      if (!p.field(f) || p.field(f)->empty()) return op_error(at + " has no " + f);
    pkg.version = std::string(*p.field("Version"));
    if (!is_version(pkg.version)) return op_error(at + ": Version " + quote(pkg.version, 80) + " is not a Debian version");
    pkg.arch = std::string(*p.field("Architecture"));
    if (!is_arch_name(pkg.arch)) return op_error(at + ": Architecture " + quote(pkg.arch, 80) + " is not an architecture");
    pkg.location = std::string(*p.field("Filename"));
    if (!is_pool_path(pkg.location))
      return op_error(at + ": Filename " + quote(pkg.location, 120) + " is not a relative path below the archive");
    auto size = parse_u64(*p.field("Size"));
    if (!size) return op_error(at + ": Size " + quote(*p.field("Size"), 40) + " is not a number");
    pkg.size = *size;
    if (!is_hex64(*p.field("SHA256"))) return op_error(at + ": SHA256 " + quote(*p.field("SHA256"), 80) + " is not 64 hex digits");
    pkg.sha256 = to_lower(*p.field("SHA256"));
    pkg.source = pkg.name;
    if (auto src = p.field("Source")) {
      auto w = words(*src);
      if (w.empty() || !is_package_name(w[0])) return op_error(at + ": Source " + quote(*src, 80) + " is not a package name");
      pkg.source = std::string(w[0]);  // "linux (6.1.192-3)": the version of the source, when it differs
    }
    for (const char* f : {"Depends", "Pre-Depends", "Provides"})
      if (auto v = p.field(f))
        if (auto rel = parse_relations(*v); !rel) return op_error(at + ": " + f + ": " + rel.error().message);
    pkg.entry = std::string(p.text);
    while (ends_with(pkg.entry, "\n")) pkg.entry.pop_back();  // the stanza without its separator
    pkg.entry += '\n';
    pkg.repo_url = source.url;
    pkg.origin = source.name;
    out.push_back(std::move(pkg));
  }
  return out;
}

// --- the index: one libsolv pool ---

namespace {

// An entry as libsolv's reader is to see it: dpkg reads the obsolete
// "(< v)" and "(> v)" as <= and >=, libsolv as << and >>.
std::string solv_entry(std::string_view entry) {
  std::string out;
  out.reserve(entry.size() + 1);
  for (size_t i = 0; i < entry.size(); ++i) {
    out += entry[i];
    if (entry[i] != '(') continue;
    size_t j = i + 1;
    while (j < entry.size() && is_blank(entry[j])) ++j;
    if (j + 1 < entry.size() && (entry[j] == '<' || entry[j] == '>') && entry[j + 1] != '<' && entry[j + 1] != '=' &&
        entry[j + 1] != '>') {
      out.append(entry.substr(i + 1, j - i));
      out += '=';
      i = j;
    }
  }
  return out;
}

// The kept entries, one after the other with a blank line between, as
// libsolv reads them (through solv_entry): no second copy of a whole list.
struct EntryStream {
  const std::vector<Package>& packages;
  size_t next = 0;
  std::string entry;
  size_t at = 0;

  static ssize_t read(void* cookie, char* out, size_t size) {
    auto& s = *static_cast<EntryStream*>(cookie);
    size_t done = 0;
    while (done < size && (s.at < s.entry.size() || s.next < s.packages.size())) {
      if (s.at == s.entry.size()) {
        s.entry = solv_entry(s.packages[s.next++].entry) + "\n";  // each entry ends in '\n'
        s.at = 0;
      }
      const size_t n = s.entry.copy(out + done, size - done, s.at);
      s.at += n;
      done += n;
    }
    return static_cast<ssize_t>(done);
  }
};

int priority_rank(std::string_view priority) {
  static const char* const ranks[] = {"required", "important", "standard", "optional", "extra"};
  if (priority.empty()) return 0;  // as apt: no Priority ranks first
  for (int i = 0; i < 5; ++i)
    if (priority == ranks[i]) return i + 1;
  return 5;
}

struct AptIndex final : detail::SolvIndex {
  explicit AptIndex(const std::string& arch_) : SolvIndex(DISTTYPE_DEB, arch_, &apt::compare_versions) {}

  using Key = std::tuple<std::string, std::string, std::string>;  // name, version, arch
  using Rank = std::tuple<bool, bool, int>;                       // not Essential, not Important, Priority
  std::vector<Package> listed;  // in the order read
  std::vector<int> package_of;  // solvable id -> listed index, -1 for none
  std::set<Key> seen;
  std::unordered_map<Id, Id> fixed;           // dependency as read -> as solved
  std::unordered_map<Id, std::string> shown;  // version as solved -> as written
  // apt's view of the prepared pool, and its marks (before_solve()).
  std::unordered_map<Id, Id> candidate;  // name -> its highest version
  std::unordered_map<Id, bool> can_install;
  std::unordered_map<Id, Rank> rank;
  std::set<Id> marked;
  std::vector<Id> marks;  // in the order marked

  const Package* find(Id id) const {
    return id > 0 && static_cast<size_t>(id) < package_of.size() && package_of[id] >= 0 ? &listed[package_of[id]] : nullptr;
  }
  Package package(Id id) const override { return *find(id); }

  Id version(Id evr) {
    std::string written = pool_id2str(pool, evr);
    Id solved = pool_str2id(pool, solv_version(written).c_str(), 1);
    if (solved != evr) shown.emplace(solved, written);
    return solved;
  }

  // A dependency as the solver is to read it: versions in dpkg's order,
  // "name:native" and "name:<arch>" the name itself (only `arch` and all are
  // in the pool), and "name:any" a name that only Multi-Arch: allowed
  // packages provide (libsolv would take any package of that name).
  Id fix(Id dep) {
    if (auto it = fixed.find(dep); it != fixed.end()) return it->second;
    Id out = dep;
    if (!ISRELDEP(dep)) {
      std::string_view name = pool_id2str(pool, dep);
      for (std::string suffix : {std::string(":native"), ":" + arch})
        if (ends_with(name, suffix)) out = pool_strn2id(pool, name.data(), static_cast<unsigned>(name.size() - suffix.size()), 1);
    } else {
      const Reldep* rd = GETRELDEP(pool, dep);
      const Id name = rd->name, evr = rd->evr;
      const int flags = rd->flags;
      if (flags == REL_MULTIARCH && evr == ARCH_ANY) out = any(name);
      else if (flags == REL_OR) out = pool_rel2id(pool, fix(name), fix(evr), flags, 1);
      else if (flags > 0 && flags < 8) out = pool_rel2id(pool, fix(name), version(evr), flags, 1);
    }
    return fixed[dep] = out;
  }
  Id any(Id name) { return pool_str2id(pool, (std::string(pool_id2str(pool, name)) + ":any").c_str(), 1); }

  // The package and each of its Provides as name:any (= version).
  void provide_any(Repo* repo, Solvable* s) {
    std::vector<Id> out;
    for (Id* dp = repo->idarraydata + s->provides; s->provides && *dp; ++dp) {
      const Reldep* rd = ISRELDEP(*dp) ? GETRELDEP(pool, *dp) : nullptr;
      const Id name = rd ? rd->name : *dp, evr = rd ? rd->evr : 0;
      const int flags = rd ? rd->flags : 0;
      if (!ISRELDEP(name)) out.push_back(flags ? pool_rel2id(pool, any(name), evr, flags, 1) : any(name));
    }
    for (Id a : out) s->provides = repo_addid_dep(repo, s->provides, a, 0);
  }

  Result<void> add(std::string_view text, const recipes::PackageSource& source, const std::string& what) {
    auto parsed = parse_packages(text, source, what);
    if (!parsed) return parsed.error();
    std::vector<Package> kept;
    std::set<Key> here;
    for (auto& pkg : *parsed) {
      // Another arch's package is not installable; one read already (a
      // suite and its -updates) is taken from where it was read first.
      if (pkg.arch != arch && pkg.arch != "all") continue;
      Key key{pkg.name, pkg.version, pkg.arch};
      if (seen.count(key) || !here.insert(key).second) continue;
      if (pkg.entry.find('\0') != std::string::npos) return op_error(what + ": package " + pkg.name + ": a NUL byte in its entry");
      kept.push_back(std::move(pkg));
    }
    if (kept.empty()) return {};
    EntryStream stream{kept, 0, "", 0};
    cookie_io_functions_t io{};
    io.read = &EntryStream::read;
    detail::File in(fopencookie(&stream, "r", io));
    if (!in) return op_error(what + ": cannot read it: " + std::strerror(errno));
    Repo* repo = repo_create(pool, what.c_str());
    repo_add_debpackages(repo, in.get(), 0);
    // libsolv read the entries we checked, one solvable each, in order.
    size_t n = 0;
    Id id;
    Solvable* s;
    std::string differs;
    FOR_REPO_SOLVABLES(repo, id, s) {
      const Package* want = n < kept.size() ? &kept[n] : nullptr;
      if (!want || want->name != str(s->name) || want->version != str(s->evr) || want->arch != str(s->arch))
        differs = (want ? "package " + want->name + ": " : "") + "libsolv reads '" + str(s->name) + " " +
                  str(s->evr) + " " + str(s->arch) + "'";
      if (!differs.empty()) break;
      ++n;
    }
    if (differs.empty() && n != kept.size())
      differs = "libsolv reads " + std::to_string(n) + " of its " + std::to_string(kept.size()) + " packages";
    if (!differs.empty()) {
      repo_free(repo, 1);
      return op_error(bounded_line(what + ": " + differs));
    }
    package_of.resize(static_cast<size_t>(pool->nsolvables), -1);
    n = 0;
    FOR_REPO_SOLVABLES(repo, id, s) {
      s->evr = version(s->evr);
      for (Offset deps : {s->provides, s->requires_, s->conflicts, s->obsoletes})
        for (Id* dp = repo->idarraydata + deps; deps && *dp; ++dp)
          if (*dp != SOLVABLE_PREREQMARKER) *dp = fix(*dp);
      const char* multi_arch = solvable_lookup_str(s, SOLVABLE_MULTIARCH);
      if (multi_arch && std::strcmp(multi_arch, "allowed") == 0) provide_any(repo, s);
      package_of[id] = static_cast<int>(listed.size() + n++);
    }
    seen.merge(here);
    std::move(kept.begin(), kept.end(), std::back_inserter(listed));
    prepared = false;
    return {};
  }

  void prepare() override {
    pool_createwhatprovides(pool);
    candidate.clear();
    can_install.clear();
    Id id;
    FOR_POOL_SOLVABLES(id) {
      const Solvable* s = pool->solvables + id;
      Id& best = candidate[s->name];
      if (!best || pool_evrcmp(pool, s->evr, pool->solvables[best].evr, EVRCMP_COMPARE) > 0) best = id;
    }
  }

  // NAME or NAME:ARCH, as apt-get takes them; the pool holds one arch (and all).
  std::set<Id> select(const std::string& name, detail::SolvQueue& job) override {
    std::string plain = ends_with(name, ":" + arch) ? name.substr(0, name.size() - arch.size() - 1) : name;
    Id id = pool_str2id(pool, plain.c_str(), 0);
    std::set<Id> candidates;
    for (Id q : id ? detail::providers(pool, id) : std::vector<Id>())
      if (pool->solvables[q].name == id) candidates.insert(q);
    if (!candidates.empty()) queue_push2(job.get(), SOLVER_INSTALL | SOLVER_SOLVABLE_NAME, id);
    return candidates;
  }

  std::string describe(const std::vector<recipes::PackageSource>& sources) const override {
    std::string s;
    for (const auto& src : sources) s += (s.empty() ? "" : ", ") + src.name + " (" + src.url + ")";
    return s.empty() ? "no package source" : s;
  }

  // The entry's one paragraph, for the fields libsolv does not keep.
  std::optional<Paragraph> paragraph(Id id) const {
    const Package* pkg = find(id);
    auto para = pkg ? parse_deb822(pkg->entry, pkg->name) : Result<std::vector<Paragraph>>(std::vector<Paragraph>());
    return para && para->size() == 1 ? std::optional<Paragraph>(para->front()) : std::nullopt;
  }

  // Essential, Important and Priority, for apt's choice among providers.
  const Rank& rank_of(Id id) {
    if (auto it = rank.find(id); it != rank.end()) return it->second;
    Rank r{true, true, 0};
    if (auto f = paragraph(id))
      r = {f->field("Essential") != "yes", f->field("Important") != "yes", priority_rank(f->field("Priority").value_or(""))};
    return rank[id] = r;
  }

  // The name a dependency is on, without ":any".
  std::string_view target(Id dep) const {
    while (ISRELDEP(dep)) dep = GETRELDEP(pool, dep)->name;
    std::string_view name = str(dep);
    if (ends_with(name, ":any")) name.remove_suffix(4);
    return name;
  }

  // A dependency as a Packages file spells it, versions as written.
  std::string dep_text(Id dep) const {
    if (!ISRELDEP(dep)) return str(dep);
    const Reldep* rd = GETRELDEP(pool, dep);
    if (rd->flags == REL_OR) return dep_text(rd->name) + " | " + dep_text(rd->evr);
    static const char* const ops[] = {"", ">>", "=", ">=", "<<", "", "<=", ""};
    auto written = shown.find(rd->evr);
    if (rd->flags > 0 && rd->flags < 8 && *ops[rd->flags])
      return dep_text(rd->name) + " (" + ops[rd->flags] + " " + (written != shown.end() ? written->second : str(rd->evr)) + ")";
    return pool_dep2str(pool, dep);
  }

  std::string who(Id id) const {
    const Package* pkg = find(id);
    return pkg ? pkg->name + " " + pkg->version : str(pool_id2solvable(pool, id)->name);
  }

  // "breaks" when `dep` is in the package's Breaks, else "conflicts with".
  std::string negative(Id id, Id dep) const {
    const std::string_view name = target(dep);
    if (auto f = paragraph(id))
      if (auto breaks = f->field("Breaks"))
        if (auto rels = parse_relations(*breaks))
          for (const auto& g : *rels)
            for (const auto& r : g)
              if (r.name == name) return "breaks";
    return "conflicts with";
  }

  // The solver's first problem, in the terms of the Packages files: of the
  // rules behind it, the one that says most (nothing provides, a conflict,
  // two versions, a requirement), else libsolv's own words.
  std::string problem(Solver* solver, const std::string& sources) override {
    using Rule = detail::ProblemRule;
    const std::vector<Rule> rules = detail::problem_rules(solver, 1);
    auto first = [&](SolverRuleinfo type) -> const Rule* {
      auto it = std::ranges::find(rules, type, &Rule::type);
      return it == rules.end() ? nullptr : &*it;
    };
    // The requirement in this problem that only `id` meets.
    auto need_of = [&](Id id) -> const Rule* {
      for (const auto& r : rules)
        if (r.type == SOLVER_RULE_PKG_REQUIRES && std::ranges::count(detail::providers(pool, r.dep), id)) return &r;
      return nullptr;
    };
    if (const Rule* r = first(SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP))
      return who(r->source) + " needs " + dep_text(r->dep) + ", which none of the sources has: " + sources;
    if (const Rule* r = first(SOLVER_RULE_PKG_CONFLICTS))
      return who(r->source) + " " + negative(r->source, r->dep) + " " + dep_text(r->dep) + ", but " + who(r->target) +
             " is needed too, in " + sources;
    if (const Rule* r = first(SOLVER_RULE_PKG_SAME_NAME)) {
      const Rule *a = need_of(r->source), *b = need_of(r->target);
      if (a && b)
        return who(a->source) + " needs " + dep_text(a->dep) + ", but " + who(b->source) + " needs " + dep_text(b->dep) + ", in " +
               sources;
      return who(r->source) + " and " + who(r->target) + " are both needed, in " + sources;
    }
    if (const Rule* r = first(SOLVER_RULE_PKG_REQUIRES))
      return who(r->source) + " needs " + dep_text(r->dep) + ", but nothing that meets it can be installed with the rest, in " +
             sources;
    return bounded_line(solver_problem2str(solver, 1)) + ", in " + sources;
  }

  // --- apt's choices ---
  // What `apt-get install` would mark, walked as apt's MarkInstall walks
  // (apt-pkg/depcache.cc), for libsolv to prefer: the names asked for first,
  // then depth first through each one's Pre-Depends and Depends in order. A
  // group a marked package meets is passed; else the first alternative with a
  // provider that can be marked. Only a package's candidate (its highest
  // version) counts; providers rank as apt ranks them (the package of that
  // name, Essential, Important, Priority; then by name). A provider that
  // conflicts with a marked package, or has a group no candidate meets, is
  // passed over, and what was marked for it is dropped. The marks go in as
  // weak jobs (dropped where they clash), favoured where libsolv chooses.
  void before_solve(detail::SolvQueue& job) override {
    marked.clear();
    marks.clear();
    for (int i = 0; i < job.size(); i += 2)  // the names' jobs
      if (Id id = candidate[job[i + 1]]; marked.insert(id).second) marks.push_back(id);
    for (size_t i = 0, n = marks.size(); i < n; ++i) follow(marks[i]);
    for (Id id : marks) queue_push2(job.get(), SOLVER_INSTALL | SOLVER_SOLVABLE | SOLVER_WEAK, id);
    for (Id id : marks) queue_push2(job.get(), SOLVER_FAVOR | SOLVER_SOLVABLE, id);
  }

  std::vector<Id> groups(Id id) const {  // Pre-Depends (after the marker), then Depends
    std::vector<Id> depends, pre;
    const Solvable* s = pool->solvables + id;
    bool after = false;
    for (const Id* dp = s->repo->idarraydata + s->requires_; s->requires_ && *dp; ++dp)
      if (*dp == SOLVABLE_PREREQMARKER) after = true;
      else (after ? pre : depends).push_back(*dp);
    pre.insert(pre.end(), depends.begin(), depends.end());
    return pre;
  }
  std::vector<Id> alternatives(Id dep) const {
    if (!ISRELDEP(dep) || GETRELDEP(pool, dep)->flags != REL_OR) return {dep};
    std::vector<Id> out = alternatives(GETRELDEP(pool, dep)->name), more = alternatives(GETRELDEP(pool, dep)->evr);
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  bool is_candidate(Id id) const {
    auto it = candidate.find(pool->solvables[id].name);
    return it != candidate.end() && it->second == id;
  }
  // The candidates that provide `alt`, in apt's order.
  std::vector<Id> ranked(Id alt) {
    std::vector<Id> out;
    std::ranges::copy_if(detail::providers(pool, alt), std::back_inserter(out), [&](Id q) { return is_candidate(q); });
    const std::string_view wanted = target(alt);
    auto key = [&](Id id) {
      std::string_view name = pool_id2str(pool, pool->solvables[id].name);
      return std::tuple_cat(std::make_tuple(wanted != name), rank_of(id), std::make_tuple(name, id));
    };
    std::sort(out.begin(), out.end(), [&](Id a, Id b) { return key(a) < key(b); });
    return out;
  }
  // Every group has an alternative some candidate meets (apt's "DepCVer").
  bool installable(Id id) {
    if (auto it = can_install.find(id); it != can_install.end()) return it->second;
    return can_install[id] = std::ranges::all_of(groups(id), [&](Id g) {
             return std::ranges::any_of(alternatives(g), [&](Id a) {
               return std::ranges::any_of(detail::providers(pool, a), [&](Id q) { return is_candidate(q); });
             });
           });
  }
  bool conflicts(Id id) const {
    auto hits = [&](Id from, Id to) {
      const Solvable* s = pool->solvables + from;
      for (const Id* dp = s->repo->idarraydata + s->conflicts; s->conflicts && *dp; ++dp)
        for (Id q : detail::providers(pool, *dp))
          if (q != from && (to ? q == to : marked.count(q) > 0)) return true;
      return false;
    };
    return hits(id, 0) || std::any_of(marked.begin(), marked.end(), [&](Id other) { return hits(other, id); });
  }
  bool mark(Id id) {
    if (marked.count(id)) return true;
    if (!installable(id) || conflicts(id)) return false;
    const size_t at = marks.size();
    marked.insert(id);
    marks.push_back(id);
    if (follow(id)) return true;
    for (; marks.size() > at; marks.pop_back()) marked.erase(marks.back());
    return false;
  }
  bool follow(Id id) {
    auto pick = [&](Id group) {
      for (Id a : alternatives(group))
        for (Id q : ranked(a))
          if (mark(q)) return true;
      return false;
    };
    return std::ranges::all_of(groups(id), [&](Id g) { return met(g) || pick(g); });
  }
  bool met(Id dep) const {
    return std::ranges::any_of(detail::providers(pool, dep), [&](Id q) { return marked.count(q) > 0; });
  }
};

}  // namespace

Index::Index(const std::string& arch) : PackageIndex(std::make_unique<AptIndex>(arch)) {}

Result<void> Index::add_packages(std::string_view text, const recipes::PackageSource& source, const std::string& what) {
  return static_cast<AptIndex&>(*m_impl).add(text, source, what);
}

Result<void> load_index(net::Transport& t, const recipes::PackageSource& source, Index& index) {
  for (const auto& suite : source.suites) {
    std::string base = source.url + "/dists/" + suite + "/";
    std::string release_text, shown = base + "InRelease";
    auto in_release = get_optional_document(t, source, shown, k_release_max_bytes);
    if (!in_release) return in_release.error();
    if (*in_release) {
      auto signed_text = signing::openpgp::verify_clearsigned(source.keyring, **in_release, shown);
      if (!signed_text) return signed_text.error();
      release_text = std::move(signed_text.value());
    } else {  // no InRelease: Release and its detached signature
      shown = base + "Release";
      auto release = get_document(t, source, shown, k_release_max_bytes);
      if (!release) return release.error();
      auto signature = get_document(t, source, shown + ".gpg", 1 << 20);
      if (!signature) return signature.error();
      if (auto v = signing::openpgp::verify_detached(source.keyring, *release, *signature, shown); !v) return v.error();
      release_text = std::move(release.value());
    }
    auto release = parse_release(release_text, shown);
    if (!release) return release.error();
    if (auto c = check_release(*release, suite, std::time(nullptr), shown); !c) return c.error();

    for (const auto& component : source.components) {
      auto file = packages_file(*release, component, index.arch(), source.name + " (" + base + ")");
      if (!file) return file.error();
      std::string url = base + file->path;
      auto data = get_document(t, source, url, file->size);
      if (!data) return data.error();
      if (data->size() != file->size)
        return op_error(url + ": " + std::to_string(data->size()) + " bytes, the signed Release says " +
                        std::to_string(file->size));
      if (auto got = signing::sha256_hex(*data); got != file->sha256)
        return op_error(url + ": sha256 " + got + " does not match the signed Release (" + file->sha256 + ")");
      auto text = decompress(*data, url, k_packages_max_bytes);
      if (!text) return text.error();
      if (auto r = index.add_packages(*text, source, url); !r) return r.error();
    }
  }
  return {};
}

}  // namespace gb::packages::apt
