#include "packages/apt.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "common/strings.hpp"
#include "common/time.hpp"
#include "net/transport.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"

namespace gb::packages::apt {

namespace {

constexpr std::uint64_t k_release_max_bytes = 32ull << 20;    // Ubuntu's InRelease is ~300 KB
constexpr std::uint64_t k_packages_max_bytes = 1ull << 30;    // a decompressed Packages list (Ubuntu universe: ~80 MB)
constexpr size_t k_paragraph_max_fields = 256;                 // a package has ~20; the duplicate check is quadratic

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// dpkg's order of one character of a non-digit run: '~' before the end,
// the end before letters, letters before everything else.
int order(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  char c = s[i];
  if (is_digit(c)) return 0;
  if (is_alpha(c)) return c;
  if (c == '~') return -1;
  return static_cast<unsigned char>(c) + 256;
}

// dpkg's verrevcmp.
int verrevcmp(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit_at = [](std::string_view s, size_t k) { return k < s.size() && is_digit(s[k]); };
  while (i < a.size() || j < b.size()) {
    while ((i < a.size() && !is_digit(a[i])) || (j < b.size() && !is_digit(b[j]))) {
      int ac = order(a, i), bc = order(b, j);
      if (ac != bc) return ac - bc;
      ++i, ++j;
    }
    while (i < a.size() && a[i] == '0') ++i;
    while (j < b.size() && b[j] == '0') ++j;
    int first_diff = 0;
    while (digit_at(a, i) && digit_at(b, j)) {
      if (!first_diff) first_diff = a[i] - b[j];
      ++i, ++j;
    }
    if (digit_at(a, i)) return 1;
    if (digit_at(b, j)) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

// Epochs compare as numbers of any length: leading zeros off, then length, then digits.
int compare_epochs(std::string_view a, std::string_view b) {
  while (!a.empty() && a.front() == '0') a.remove_prefix(1);
  while (!b.empty() && b.front() == '0') b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b);
}

struct VersionParts {
  std::string_view epoch, upstream, revision;
};
VersionParts split_version(std::string_view v) {
  VersionParts p;
  if (auto colon = v.find(':'); colon != std::string_view::npos) {
    p.epoch = v.substr(0, colon);
    v.remove_prefix(colon + 1);
  }
  if (auto dash = v.rfind('-'); dash != std::string_view::npos) {
    p.revision = v.substr(dash + 1);
    v = v.substr(0, dash);
  }
  p.upstream = v;
  return p;
}

int sign(int v) { return (v > 0) - (v < 0); }

bool is_package_name(std::string_view s) {
  if (s.empty() || !(is_digit(s[0]) || (s[0] >= 'a' && s[0] <= 'z'))) return false;
  for (char c : s)
    if (!(is_digit(c) || (c >= 'a' && c <= 'z') || c == '+' || c == '-' || c == '.')) return false;
  return true;
}

bool is_version(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(is_digit(c) || is_alpha(c) || c == '.' || c == '+' || c == '-' || c == '~' || c == ':')) return false;
  return true;
}

bool is_arch_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(is_digit(c) || (c >= 'a' && c <= 'z') || c == '-')) return false;
  return true;
}

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

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (!is_digits(s)) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
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

std::string op_text(Op op) {
  switch (op) {
    case Op::Less: return "<<";
    case Op::LessEq: return "<=";
    case Op::Eq: return "=";
    case Op::GreaterEq: return ">=";
    case Op::Greater: return ">>";
    case Op::Any: break;
  }
  return "";
}

std::string relation_text(const Relation& r) {
  std::string s = r.name;
  if (!r.arch.empty()) s += ":" + r.arch;
  if (r.op != Op::Any) s += " (" + op_text(r.op) + " " + r.version + ")";
  return s;
}

std::string group_text(const std::vector<Relation>& g) {
  std::string s;
  for (const auto& r : g) s += (s.empty() ? "" : " | ") + relation_text(r);
  return s;
}

}  // namespace

// --- versions ---

int compare_versions(std::string_view a, std::string_view b) {
  VersionParts x = split_version(a), y = split_version(b);
  if (int c = compare_epochs(x.epoch, y.epoch)) return sign(c);
  if (int c = verrevcmp(x.upstream, y.upstream)) return sign(c);
  return sign(verrevcmp(x.revision, y.revision));
}

bool version_satisfies(std::string_view version, Op op, std::string_view wanted) {
  if (op == Op::Any) return true;
  int c = compare_versions(version, wanted);
  switch (op) {
    case Op::Less: return c < 0;
    case Op::LessEq: return c <= 0;
    case Op::Eq: return c == 0;
    case Op::GreaterEq: return c >= 0;
    case Op::Greater: return c > 0;
    case Op::Any: break;
  }
  return true;
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
  size_t para_start = 0, line_no = 0;
  bool in_para = false;
  size_t value_start = 0, value_end = 0;  // the open field's value, as offsets into text
  auto close_field = [&] {
    if (!cur.fields.empty()) cur.fields.back().second = trim(text.substr(value_start, value_end - value_start));
  };
  auto close_para = [&](size_t end) {
    if (!in_para) return;
    close_field();
    cur.text = text.substr(para_start, end - para_start);
    out.push_back(std::move(cur));
    cur = Paragraph{};
    in_para = false;
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
      if (!in_para) return op_error(what + ":" + std::to_string(line_no) + ": a continuation line outside a field");
      value_end = pos + line.size();
    } else {
      auto colon = line.find(':');
      std::string_view name = colon == std::string_view::npos ? std::string_view() : line.substr(0, colon);
      if (name.empty() || name.find_first_of(" \t") != std::string_view::npos)
        return op_error(what + ":" + std::to_string(line_no) + ": " + quote(line, 80) + " is not a 'Field: value' line");
      if (!in_para) {
        in_para = true;
        para_start = pos;
        cur.line = line_no;
      }
      close_field();
      if (cur.fields.size() == k_paragraph_max_fields)
        return op_error(what + ":" + std::to_string(line_no) + ": more than " + std::to_string(k_paragraph_max_fields) +
                        " fields in one paragraph");
      if (cur.field(name))
        return op_error(what + ":" + std::to_string(line_no) + ": field " + quote(name) + " twice in one paragraph");
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

Result<std::vector<Package>> parse_packages(std::string_view text, const PackageSource& source, const std::string& what) {
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

// --- the index of a source ---

Result<std::vector<Package>> load_index(net::Transport& t, const PackageSource& source, const std::string& arch) {
  std::vector<Package> out;
  for (const auto& suite : source.suites) {
    std::string base = source.url + "/dists/" + suite + "/";
    std::string release_text;
    std::string shown = base + "InRelease";
    auto in_release = get_optional_document(t, source, shown, k_release_max_bytes);
    if (!in_release) return in_release.error();
    if (*in_release) {
      auto signed_text = openpgp::verify_clearsigned(source.keyring, **in_release, shown);
      if (!signed_text) return signed_text.error();
      release_text = std::move(signed_text.value());
    } else {  // no InRelease: Release and its detached signature
      shown = base + "Release";
      auto release = get_document(t, source, shown, k_release_max_bytes);
      if (!release) return release.error();
      auto signature = get_document(t, source, shown + ".gpg", 1 << 20);
      if (!signature) return signature.error();
      if (auto v = openpgp::verify_detached(source.keyring, *release, *signature, shown); !v) return v.error();
      release_text = std::move(release.value());
    }
    auto release = parse_release(release_text, shown);
    if (!release) return release.error();
    if (auto c = check_release(*release, suite, std::time(nullptr), shown); !c) return c.error();

    for (const auto& component : source.components) {
      auto file = packages_file(*release, component, arch, source.name + " (" + base + ")");
      if (!file) return file.error();
      std::string url = base + file->path;
      auto data = get_document(t, source, url, file->size);
      if (!data) return data.error();
      if (data->size() != file->size)
        return op_error(url + ": " + std::to_string(data->size()) + " bytes, the signed Release says " +
                        std::to_string(file->size));
      if (auto got = sha256_hex(*data); got != file->sha256)
        return op_error(url + ": sha256 " + got + " does not match the signed Release (" + file->sha256 + ")");
      auto text = decompress(*data, url, k_packages_max_bytes);
      if (!text) return text.error();
      auto pkgs = parse_packages(*text, source, url);
      if (!pkgs) return pkgs.error();
      for (auto& p : *pkgs)
        if (p.arch == arch || p.arch == "all") out.push_back(std::move(p));
    }
  }
  return out;
}

// --- the closure ---

namespace {

enum class MultiArch { No, Same, Foreign, Allowed };

struct Candidate {
  const Package* pkg;
  MultiArch multi_arch = MultiArch::No;
  std::vector<std::pair<std::string, std::string>> provides;  // name, version ("" unversioned)
};

class Resolver {
public:
  Resolver(const std::vector<Package>& index, const FetchRequest& request, const std::vector<PackageSource>& sources)
      : m_request(request), m_sources(sources) {
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    for (const auto& p : index) {
      if (p.arch != request.arch && p.arch != "all") continue;
      if (!seen.insert({p.name, p.version, p.arch}).second) continue;  // the same package in two suites: the first
      m_all.push_back(Candidate{&p, MultiArch::No, {}});
    }
  }

  Result<std::vector<Package>> run() {
    for (size_t i = 0; i < m_all.size(); ++i) {
      Candidate& c = m_all[i];
      auto para = parse_deb822(c.pkg->entry, c.pkg->origin + " " + c.pkg->name);
      if (!para) return para.error();
      if (para->size() != 1) return op_error(c.pkg->name + ": its index entry is not one paragraph");
      m_paragraphs.push_back(std::move(para->front()));
      const Paragraph& p = m_paragraphs.back();
      if (auto ma = p.field("Multi-Arch")) {
        if (*ma == "same") c.multi_arch = MultiArch::Same;
        else if (*ma == "foreign") c.multi_arch = MultiArch::Foreign;
        else if (*ma == "allowed") c.multi_arch = MultiArch::Allowed;
      }
      m_by_name[c.pkg->name].push_back(i);
      if (auto prov = p.field("Provides")) {
        auto rel = parse_relations(*prov);
        if (!rel) return op_error(where(c) + ": Provides: " + rel.error().message);
        for (const auto& g : *rel) {
          if (g.size() != 1 || (g[0].op != Op::Any && g[0].op != Op::Eq))
            return op_error(where(c) + ": Provides " + quote(group_text(g)) + " is not 'name [(= version)]'");
          c.provides.emplace_back(g[0].name, g[0].version);
          m_providers[g[0].name].push_back(i);
        }
      }
    }
    // Highest version first; among equals, the order of the sources.
    for (auto& [name, list] : m_by_name)
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return compare_versions(m_all[a].pkg->version, m_all[b].pkg->version) > 0;
      });
    for (auto& [name, list] : m_providers)
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        if (m_all[a].pkg->name != m_all[b].pkg->name) return m_all[a].pkg->name < m_all[b].pkg->name;
        return compare_versions(m_all[a].pkg->version, m_all[b].pkg->version) > 0;
      });

    for (const auto& name : m_request.names) {
      auto pick = best({Relation{name, "", Op::Any, ""}}, nullptr);
      if (!pick)
        return input_error(prefix() + "no package " + quote(name) + " in " + sources_text());
      add(*pick);
    }
    for (const auto& name : m_request.optional_names)
      if (auto pick = best({Relation{name, "", Op::Any, ""}}, nullptr)) add(*pick);
    while (!m_queue.empty()) {
      size_t i = m_queue.front();
      m_queue.pop_front();
      if (auto r = follow(i); !r) return r.error();
    }
    std::vector<Package> out;
    for (const auto& [name, i] : m_selected) out.push_back(*m_all[i].pkg);
    return out;  // m_selected is a map by name: sorted by name
  }

private:
  std::string where(const Candidate& c) const { return c.pkg->origin + ": package " + c.pkg->name + " " + c.pkg->version; }
  std::string prefix() const { return m_request.why.empty() ? std::string() : m_request.why + ": "; }
  std::string sources_text() const {
    std::string s;
    for (const auto& src : m_sources) s += (s.empty() ? "" : ", ") + src.name + " (" + src.url + ")";
    return s.empty() ? "no package source" : s;
  }

  // dpkg's deparchsatisfied: may candidate c satisfy a relation qualified by `arch`?
  bool arch_ok(const Candidate& c, const std::string& arch) const {
    if (c.multi_arch == MultiArch::Foreign) return true;
    if (arch == "any") return c.multi_arch == MultiArch::Allowed;
    const std::string& native = m_request.arch;
    std::string want = arch.empty() || arch == "native" || arch == "all" ? native : arch;
    std::string have = c.pkg->arch == "all" ? native : c.pkg->arch;
    return want == have;
  }

  bool same_source(size_t c, const Candidate* from) const {
    return !from || m_request.closure != Closure::SameSource || m_all[c].pkg->source == from->pkg->source;
  }

  // The candidates that satisfy r: real packages (highest version first), then providers.
  std::vector<size_t> satisfying(const Relation& r, const Candidate* from) const {
    std::vector<size_t> out;
    if (auto it = m_by_name.find(r.name); it != m_by_name.end())
      for (size_t i : it->second)
        if (same_source(i, from) && arch_ok(m_all[i], r.arch) && version_satisfies(m_all[i].pkg->version, r.op, r.version))
          out.push_back(i);
    if (auto it = m_providers.find(r.name); it != m_providers.end())
      for (size_t i : it->second) {
        if (!same_source(i, from) || !arch_ok(m_all[i], r.arch)) continue;
        for (const auto& [name, version] : m_all[i].provides)
          if (name == r.name && (r.op == Op::Any || (!version.empty() && version_satisfies(version, r.op, r.version)))) {
            out.push_back(i);
            break;
          }
      }
    return out;
  }

  // Does the relation's name lead anywhere from `from` under the closure rule?
  bool reachable(const Relation& r, const Candidate* from) const {
    if (auto it = m_by_name.find(r.name); it != m_by_name.end())
      for (size_t i : it->second)
        if (same_source(i, from)) return true;
    if (auto it = m_providers.find(r.name); it != m_providers.end())
      for (size_t i : it->second)
        if (same_source(i, from)) return true;
    return false;
  }

  // The package that satisfies a group: one already chosen if any does, else
  // the best candidate of the first alternative that has one.
  std::optional<size_t> best(const std::vector<Relation>& group, const Candidate* from) const {
    for (const auto& r : group)
      for (size_t i : satisfying(r, from))
        if (auto s = m_selected.find(m_all[i].pkg->name); s != m_selected.end() && s->second == i) return i;
    for (const auto& r : group)
      for (size_t i : satisfying(r, from))
        if (!m_selected.count(m_all[i].pkg->name)) return i;
    return std::nullopt;
  }

  void add(size_t i) {
    if (m_selected.emplace(m_all[i].pkg->name, i).second) m_queue.push_back(i);
  }

  Result<void> follow(size_t i) {
    const Candidate& c = m_all[i];
    const Paragraph& p = m_paragraphs[i];
    for (const char* field : {"Pre-Depends", "Depends"}) {
      auto v = p.field(field);
      if (!v) continue;
      auto groups = parse_relations(*v);
      if (!groups) return op_error(where(c) + ": " + field + ": " + groups.error().message);
      for (const auto& g : *groups) {
        if (m_request.closure == Closure::SameSource &&
            std::none_of(g.begin(), g.end(), [&](const Relation& r) { return reachable(r, &c); }))
          continue;  // built from another source: not followed
        auto pick = best(g, &c);
        if (!pick) {
          // A version of a name that is chosen already but does not fit, or nothing at all.
          for (const auto& r : g)
            if (auto s = m_selected.find(r.name); s != m_selected.end())
              return input_error(prefix() + c.pkg->name + " " + c.pkg->version + " needs " + group_text(g) + ", but " +
                                 r.name + " " + m_all[s->second].pkg->version + " is needed too");
          return input_error(prefix() + c.pkg->name + " " + c.pkg->version + " needs " + group_text(g) +
                             ", which none of the sources has: " + sources_text());
        }
        add(*pick);
      }
    }
    return {};
  }

  const FetchRequest& m_request;
  const std::vector<PackageSource>& m_sources;
  std::vector<Candidate> m_all;
  std::vector<Paragraph> m_paragraphs;  // m_all[i]'s entry, parsed
  std::map<std::string, std::vector<size_t>> m_by_name;
  std::map<std::string, std::vector<size_t>> m_providers;
  std::map<std::string, size_t> m_selected;  // name -> m_all index
  std::deque<size_t> m_queue;
};

}  // namespace

Result<std::vector<Package>> resolve(const std::vector<Package>& index, const FetchRequest& request,
                                     const std::vector<PackageSource>& sources) {
  return Resolver(index, request, sources).run();
}

}  // namespace gb::packages::apt
