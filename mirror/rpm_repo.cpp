#include "mirror/rpm_repo.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <stdlib.h>

#include "common/files.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"

namespace gb::packages::rpm_md {

namespace {

constexpr std::uint64_t k_repomd_max = 4ull << 20;
constexpr std::uint64_t k_signature_max = 64ull << 10;
// Bounds far above any distribution repo's primary.xml, still refusing a runaway one.
constexpr std::uint64_t k_primary_max = 1ull << 30;       // packed
constexpr std::uint64_t k_primary_open_max = 2ull << 30;  // decompressed
constexpr std::uint64_t k_primary_max_ratio = 64;  // primary.xml packs 10-25x; more is a bomb
constexpr size_t k_max_depth = 16;
constexpr size_t k_max_attrs = 32;
constexpr size_t k_max_name = 128;

// ---------------------------------------------------------------------------
// A strict pull reader for the XML that createrepo_c writes. It reports
// element starts and ends; the character data directly inside the element
// that just ended is text(). Namespaces are not resolved: "rpm:entry" is a
// name like any other, as createrepo_c spells it.

struct Attr {
  std::string_view name;
  std::string value;
};

class XmlReader {
public:
  enum class Event { Start, End, Eof };

  XmlReader(std::string_view doc, const std::string& what) : m_doc(doc), m_what(what) {
    if (starts_with(m_doc.substr(m_pos), "\xEF\xBB\xBF")) m_pos = 3;
    if (starts_with(m_doc.substr(m_pos), "<?xml")) {
      auto end = m_doc.find("?>", m_pos);
      if (end == std::string_view::npos) fail("the XML declaration does not end");
      else m_pos = end + 2;
    }
  }

  // False at the end of the document or on an error (error() says which).
  bool next(Event& ev) {
    if (!m_error.empty()) return false;
    if (m_pending_end) {
      m_pending_end = false;
      m_text.clear();
      ev = Event::End;
      m_name = m_stack.back();
      m_stack.pop_back();
      m_tag_end = m_pos;
      return true;
    }
    while (m_pos < m_doc.size()) {
      if (m_doc[m_pos] != '<') {
        if (!character_data()) return false;
        continue;
      }
      m_tag_begin = m_pos;
      std::string_view rest = m_doc.substr(m_pos);
      if (starts_with(rest, "<!--")) {
        auto end = m_doc.find("-->", m_pos + 4);
        if (end == std::string_view::npos) return fail("a comment does not end");
        m_pos = end + 3;
        continue;
      }
      if (starts_with(rest, "<!") || starts_with(rest, "<?"))
        return fail("unexpected " + quote(rest.substr(0, std::min<size_t>(rest.size(), 9))) +
                    " (no DOCTYPE, CDATA or processing instructions here)");
      if (starts_with(rest, "</")) {
        m_pos += 2;
        std::string_view name = read_name();
        if (name.empty()) return false;
        skip_space();
        if (m_pos >= m_doc.size() || m_doc[m_pos] != '>') return fail("a closing tag </" + std::string(name) + " does not end with '>'");
        ++m_pos;
        if (m_stack.empty() || m_stack.back() != name)
          return fail("</" + std::string(name) + "> closes " + (m_stack.empty() ? "nothing" : "<" + std::string(m_stack.back()) + ">"));
        m_stack.pop_back();
        m_name = name;
        m_tag_end = m_pos;
        ev = Event::End;
        return true;
      }
      return start_tag(ev);
    }
    if (!m_stack.empty()) return fail("the document ends inside <" + std::string(m_stack.back()) + ">");
    if (!m_seen_root) return fail("no root element");
    ev = Event::Eof;
    return true;
  }

  std::string_view name() const { return m_name; }
  const std::string& text() const { return m_text; }
  const std::vector<Attr>& attrs() const { return m_attrs; }
  const std::string* attr(std::string_view name) const {
    for (const auto& a : m_attrs)
      if (a.name == name) return &a.value;
    return nullptr;
  }
  size_t depth() const { return m_stack.size(); }
  size_t tag_begin() const { return m_tag_begin; }
  size_t tag_end() const { return m_tag_end; }
  const std::string& error() const { return m_error; }

  bool fail(const std::string& message) {
    if (m_error.empty()) {
      size_t line = 1;
      for (size_t i = 0; i < std::min(m_pos, m_doc.size()); ++i) line += m_doc[i] == '\n';
      m_error = m_what + ": line " + std::to_string(line) + ": " + message;
    }
    return false;
  }

private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
  static bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

  void skip_space() {
    while (m_pos < m_doc.size() && is_space(m_doc[m_pos])) ++m_pos;
  }

  std::string_view read_name() {
    size_t start = m_pos;
    if (m_pos >= m_doc.size() || !is_name_start(m_doc[m_pos])) {
      fail("expected a name");
      return {};
    }
    while (m_pos < m_doc.size() && is_name_char(m_doc[m_pos]) && m_pos - start <= k_max_name) ++m_pos;
    if (m_pos - start > k_max_name) {
      fail("a name longer than " + std::to_string(k_max_name) + " characters");
      return {};
    }
    return m_doc.substr(start, m_pos - start);
  }

  // Appends [from, to) to out with entities decoded; false on a bad one.
  bool decode(size_t from, size_t to, std::string& out) {
    // Every search stays inside [from, to): a search to the end of the
    // document per text node made a large primary.xml quadratic.
    const std::string_view span = m_doc.substr(0, to);
    for (size_t i = from; i < to;) {
      size_t amp = span.find('&', i);
      if (amp == std::string_view::npos) amp = to;
      for (size_t j = i; j < amp; ++j) {
        auto c = static_cast<unsigned char>(m_doc[j]);
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          m_pos = j;
          return fail("a control character (" + std::to_string(c) + ") in the text");
        }
      }
      out.append(m_doc.substr(i, amp - i));
      if (amp == to) break;
      size_t semi = span.substr(0, std::min(to, amp + 12)).find(';', amp);
      if (semi == std::string_view::npos || semi - amp > 10) {
        m_pos = amp;
        return fail("an '&' that starts no entity");
      }
      std::string_view ent = m_doc.substr(amp + 1, semi - amp - 1);
      if (ent == "amp") out += '&';
      else if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (ent.size() >= 2 && ent[0] == '#') {
        bool hex = ent[1] == 'x';
        std::string_view digits = ent.substr(hex ? 2 : 1);
        unsigned long cp = 0;
        bool ok = !digits.empty() && digits.size() <= 8;
        for (char c : digits) {
          int d = (c >= '0' && c <= '9')          ? c - '0'
                  : (hex && c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (hex && c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                  : -1;
          if (d < 0) ok = false;
          else cp = cp * (hex ? 16 : 10) + static_cast<unsigned long>(d);
        }
        // XML's Char production: no NUL, no other C0 controls, no surrogates.
        ok = ok && (cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
                    (cp >= 0x10000 && cp <= 0x10FFFF));
        if (!ok) {
          m_pos = amp;
          return fail("a character reference " + quote(m_doc.substr(amp, semi - amp + 1)) + " that is not an XML character");
        }
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xF0 | (cp >> 18));
          out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
      } else {
        m_pos = amp;
        return fail("an unknown entity " + quote(m_doc.substr(amp, semi - amp + 1)));
      }
      i = semi + 1;
    }
    return true;
  }

  bool character_data() {
    size_t end = m_doc.find('<', m_pos);
    if (end == std::string_view::npos) end = m_doc.size();
    if (m_stack.empty()) {
      for (size_t i = m_pos; i < end; ++i)
        if (!is_space(m_doc[i])) {
          m_pos = i;
          return fail("text outside the root element");
        }
    } else if (!decode(m_pos, end, m_text)) {
      return false;
    }
    m_pos = end;
    return true;
  }

  bool start_tag(Event& ev) {
    ++m_pos;
    std::string_view name = read_name();
    if (name.empty()) return false;
    if (m_stack.empty() && m_seen_root) return fail("a second root element <" + std::string(name) + ">");
    m_attrs.clear();
    for (;;) {
      size_t before = m_pos;
      skip_space();
      if (m_pos >= m_doc.size()) return fail("<" + std::string(name) + " does not end");
      char c = m_doc[m_pos];
      if (c == '>' || c == '/') {
        if (c == '/') {
          if (m_pos + 1 >= m_doc.size() || m_doc[m_pos + 1] != '>') return fail("'/' inside <" + std::string(name) + ">");
          ++m_pos;
          m_pending_end = true;
        }
        ++m_pos;
        break;
      }
      if (before == m_pos) return fail("no space before an attribute of <" + std::string(name) + ">");
      if (m_attrs.size() == k_max_attrs)
        return fail("<" + std::string(name) + "> has more than " + std::to_string(k_max_attrs) + " attributes");
      Attr a;
      a.name = read_name();
      if (a.name.empty()) return false;
      for (const auto& other : m_attrs)
        if (other.name == a.name) return fail("<" + std::string(name) + "> has two " + std::string(a.name) + " attributes");
      skip_space();
      if (m_pos >= m_doc.size() || m_doc[m_pos] != '=') return fail("attribute " + std::string(a.name) + " has no '='");
      ++m_pos;
      skip_space();
      if (m_pos >= m_doc.size() || (m_doc[m_pos] != '"' && m_doc[m_pos] != '\''))
        return fail("attribute " + std::string(a.name) + " is not quoted");
      char q = m_doc[m_pos++];
      size_t end = m_doc.find(q, m_pos);
      if (end == std::string_view::npos) return fail("attribute " + std::string(a.name) + " does not end");
      if (m_doc.substr(m_pos, end - m_pos).find('<') != std::string_view::npos) return fail("'<' in attribute " + std::string(a.name));
      if (!decode(m_pos, end, a.value)) return false;
      m_pos = end + 1;
      m_attrs.push_back(std::move(a));
    }
    if (m_stack.size() == k_max_depth) return fail("elements nested deeper than " + std::to_string(k_max_depth));
    m_stack.push_back(name);
    m_seen_root = true;
    m_name = name;
    m_text.clear();
    m_tag_end = m_pos;
    ev = Event::Start;
    return true;
  }

  std::string_view m_doc;
  const std::string& m_what;
  size_t m_pos = 0;
  std::vector<std::string_view> m_stack;
  std::vector<Attr> m_attrs;
  std::string_view m_name;
  std::string m_text;
  std::string m_error;
  size_t m_tag_begin = 0;
  size_t m_tag_end = 0;
  bool m_pending_end = false;
  bool m_seen_root = false;
};

// ---------------------------------------------------------------------------
// Packages and their dependencies.

enum Flags : unsigned { k_any = 0, k_less = 1, k_greater = 2, k_equal = 4 };

struct Dep {
  std::string name;
  unsigned flags = k_any;
  std::string evr;  // "[epoch:]ver[-rel]"; empty when unversioned
  std::string text() const {
    if (flags == k_any) return name;
    std::string op = flags == k_equal ? "=" : flags == k_less ? "<" : flags == (k_less | k_equal) ? "<=" : flags == k_greater ? ">" : ">=";
    return name + " " + op + " " + evr;
  }
};

struct RpmPackage {
  Package pkg;                       // entry left empty: that copy is the caller's choice
  std::string_view entry;            // the <package> element in the document read
  const Package* indexed = nullptr;  // resolve(): the index's record this was read from
  std::vector<Dep> provides;
  std::vector<Dep> needs;  // Requires
  std::vector<std::string> files;
};

bool is_evr_part(std::string_view s) { return is_word(s, "._+~^"); }

bool safe_location(std::string_view href) {
  if (href.empty() || href[0] == '/' || href.find("..") != std::string_view::npos || href.find("://") != std::string_view::npos)
    return false;
  for (char c : href)
    if (static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#' || c == '\\' || c == 0x7f) return false;
  return true;
}

// epoch/ver/rel attributes of the reader's current element as "[e:]v[-r]".
// `where` names it in errors (made only then: entries are many).
Result<std::string> read_evr(const XmlReader& x, const std::function<std::string()>& where, bool required) {
  const std::string* e = x.attr("epoch");
  const std::string* v = x.attr("ver");
  const std::string* r = x.attr("rel");
  if (!v) {
    if (required || e || r) return op_error(where() + ": no ver attribute");
    return std::string();
  }
  if (!is_evr_part(*v) || (r && !is_evr_part(*r)))
    return op_error(where() + ": version " + quote(*v) + (r ? "-" + quote(*r) : std::string()) + " is not an rpm version");
  if (required && !r) return op_error(where() + ": no rel attribute");
  if (e && !e->empty() && !is_digits(*e)) return op_error(where() + ": epoch " + quote(*e) + " is not a number");
  if (e && e->size() > 10) return op_error(where() + ": epoch " + quote(*e) + " is too large");
  std::string evr;
  if (e && !e->empty() && e->find_first_not_of('0') != std::string::npos) evr = std::to_string(std::stoull(*e)) + ":";
  evr += *v;
  if (r) evr += "-" + *r;
  return evr;
}

Result<Dep> read_dep(const XmlReader& x, const std::function<std::string()>& where) {
  Dep d;
  const std::string* name = x.attr("name");
  if (!name || name->empty() || name->size() > 4096) return op_error(where() + ": an rpm:entry without a name");
  for (char c : *name)
    if (static_cast<unsigned char>(c) < 0x20) return op_error(where() + ": entry name " + quote(*name) + " has a control character");
  d.name = *name;
  const std::string* flags = x.attr("flags");
  if (flags) {
    static const std::map<std::string, unsigned> k_flags = {
        {"EQ", k_equal}, {"LT", k_less}, {"LE", k_less | k_equal}, {"GT", k_greater}, {"GE", k_greater | k_equal}};
    auto it = k_flags.find(*flags);
    if (it == k_flags.end()) return op_error(where() + ": entry " + quote(*name) + " has unknown flags " + quote(*flags));
    d.flags = it->second;
  }
  auto evr = read_evr(x, [&] { return where() + ": entry " + quote(*name); }, false);
  if (!evr) return evr.error();
  d.evr = std::move(*evr);
  if (d.flags == k_any && !d.evr.empty()) return op_error(where() + ": entry " + quote(*name) + " has a version but no flags");
  if (d.flags != k_any && d.evr.empty()) return op_error(where() + ": entry " + quote(*name) + " has flags but no version");
  return d;
}

// Reads every <package> of `xml`: a whole primary.xml (root "metadata") or
// one <package> element alone (root "package", as Package::entry keeps it).
// with_deps: provides, requires and files too.
Result<void> read_packages(std::string_view xml, std::string_view root, const PackageSource& source, const std::string& repo_url,
                           const std::string& what, bool with_deps, const std::function<Result<void>(RpmPackage&&)>& sink) {
  XmlReader x(xml, what);
  XmlReader::Event ev;
  RpmPackage p;
  size_t package_depth = 0;  // depth of the current <package>, 0 outside one
  size_t package_begin = 0;
  size_t count = 0;
  std::string section;       // rpm:provides | rpm:requires | "" inside <format>
  std::set<std::string_view> seen;
  auto where = [&] {
    return what + ": package " + std::to_string(count + 1) + (p.pkg.name.empty() ? std::string() : " (" + p.pkg.name + ")");
  };
  while (x.next(ev)) {
    if (ev == XmlReader::Event::Eof) break;
    std::string_view name = x.name();
    if (ev == XmlReader::Event::Start) {
      if (x.depth() == 1 && name != root)
        return op_error(what + ": the root element is <" + std::string(name) + ">, not <" + std::string(root) + ">");
      if (name == "package" && package_depth == 0) {
        if (x.depth() > 2) return op_error(what + ": a <package> below the top level");
        const std::string* type = x.attr("type");
        if (!type || *type != "rpm") return op_error(what + ": package " + std::to_string(count + 1) + " is not type=\"rpm\"");
        package_depth = x.depth();
        package_begin = x.tag_begin();
        p = RpmPackage();
        seen.clear();
        section.clear();
        continue;
      }
      if (package_depth == 0) {
        if (x.depth() > 1) return op_error(what + ": unexpected <" + std::string(name) + "> outside a <package>");
        continue;
      }
      size_t level = x.depth() - package_depth;  // 1: package's children
      if (level == 1) {
        if (name == "version") {
          auto evr = read_evr(x, where, true);
          if (!evr) return evr.error();
          p.pkg.version = std::move(*evr);
        } else if (name == "checksum") {
          const std::string* type = x.attr("type");
          if (!type || *type != "sha256")
            return op_error(where() + ": checksum type " + quote(type ? *type : "") + " is not supported (sha256 only)");
        } else if (name == "size") {
          const std::string* size = x.attr("package");
          if (!size || !is_digits(*size) || size->size() > 15) return op_error(where() + ": size package= is not a number");
          p.pkg.size = std::stoull(*size);
        } else if (name == "location") {
          if (x.attr("xml:base")) return op_error(where() + ": location xml:base (a package elsewhere) is not supported");
          const std::string* href = x.attr("href");
          if (!href || !safe_location(*href) || !ends_with(*href, ".rpm"))
            return op_error(where() + ": location href " + quote(href ? *href : "") + " is not an .rpm path below the repository");
          p.pkg.location = *href;
        }
        if (!seen.insert(name).second)
          return op_error(where() + ": two <" + std::string(name) + "> elements");
      } else if (level == 2) {
        section = name;
      } else if (level == 3 && name == "rpm:entry" && with_deps) {
        auto* list = section == "rpm:provides" ? &p.provides : section == "rpm:requires" ? &p.needs : nullptr;
        if (list) {
          auto d = read_dep(x, where);
          if (!d) return d.error();
          list->push_back(std::move(*d));
        }
      }
      continue;
    }
    // End of an element.
    if (package_depth == 0) continue;
    if (x.depth() + 1 == package_depth) {  // </package>
      package_depth = 0;
      for (const char* field : {"name", "arch", "version", "checksum", "size", "location"})
        if (!seen.count(field)) return op_error(where() + ": no <" + std::string(field) + ">");
      p.entry = xml.substr(package_begin, x.tag_end() - package_begin);
      p.pkg.repo_url = repo_url;
      p.pkg.origin = source.name;
      ++count;
      auto r = sink(std::move(p));
      if (!r) return r;
      p = RpmPackage();
      continue;
    }
    size_t level = x.depth() + 1 - package_depth;
    const std::string& text = x.text();
    if (level == 1) {
      if (name == "name") {
        if (!is_word(text, "+._-")) return op_error(where() + ": name " + quote(text) + " is not an rpm package name");
        p.pkg.name = text;
      } else if (name == "arch") {
        if (!is_word(text, "_")) return op_error(where() + ": arch " + quote(text) + " is not an rpm architecture");
        p.pkg.arch = text;
      } else if (name == "checksum") {
        std::string hex = to_lower(trim(text));
        if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
          return op_error(where() + ": checksum " + quote(text) + " is not a sha256");
        p.pkg.sha256 = std::move(hex);
      }
    } else if (level == 2) {
      if (name == "rpm:sourcerpm") {
        if (!text.empty() && !is_word(text, "+._-~^")) return op_error(where() + ": sourcerpm " + quote(text) + " is not a file name");
        p.pkg.source = text;
      } else if (name == "file" && with_deps) {
        if (text.empty() || text[0] != '/') return op_error(where() + ": file " + quote(text) + " is not an absolute path");
        p.files.push_back(text);
      }
    }
  }
  if (!x.error().empty()) return op_error(x.error());
  return {};
}

// The package's own [epoch:]version-release split up.
struct Evr {
  std::string_view epoch, version, release;
};

Evr split_evr(std::string_view s) {
  Evr e;
  auto colon = s.find(':');
  if (colon != std::string_view::npos && is_digits(s.substr(0, colon))) {
    e.epoch = s.substr(0, colon);
    s.remove_prefix(colon + 1);
  }
  auto dash = s.rfind('-');
  if (dash != std::string_view::npos) {
    e.release = s.substr(dash + 1);
    s = s.substr(0, dash);
  }
  e.version = s;
  return e;
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// rpm's rpmvercmp (rpmio/rpmvercmp.c), segment by segment.
int rpmvercmp(std::string_view a, std::string_view b) {
  if (a == b) return 0;
  size_t i = 0, j = 0;
  auto sep = [](char c) { return !is_alpha(c) && !is_digit(c) && c != '~' && c != '^'; };
  while (i < a.size() || j < b.size()) {
    while (i < a.size() && sep(a[i])) ++i;
    while (j < b.size() && sep(b[j])) ++j;
    char ca = i < a.size() ? a[i] : '\0';
    char cb = j < b.size() ? b[j] : '\0';
    // ~ sorts before everything, even the end.
    if (ca == '~' || cb == '~') {
      if (ca != '~') return 1;
      if (cb != '~') return -1;
      ++i, ++j;
      continue;
    }
    // ^ sorts after the end but before any other segment.
    if (ca == '^' || cb == '^') {
      if (ca == '\0') return -1;
      if (cb == '\0') return 1;
      if (ca != '^') return 1;
      if (cb != '^') return -1;
      ++i, ++j;
      continue;
    }
    if (ca == '\0' || cb == '\0') break;
    bool num = is_digit(ca);
    auto in_segment = [num](char c) { return num ? is_digit(c) : is_alpha(c); };
    size_t ei = i, ej = j;
    while (ei < a.size() && in_segment(a[ei])) ++ei;
    while (ej < b.size() && in_segment(b[ej])) ++ej;
    std::string_view sa = a.substr(i, ei - i), sb = b.substr(j, ej - j);
    // A numeric segment is newer than an alphabetic one.
    if (sb.empty()) return num ? 1 : -1;
    if (num) {
      while (sa.size() > 1 && sa[0] == '0') sa.remove_prefix(1);
      while (sb.size() > 1 && sb[0] == '0') sb.remove_prefix(1);
      if (sa.size() != sb.size()) return sa.size() > sb.size() ? 1 : -1;
    }
    int c = sa.compare(sb);
    if (c != 0) return c < 0 ? -1 : 1;
    i = ei, j = ej;
  }
  if (i >= a.size() && j >= b.size()) return 0;
  return i >= a.size() ? -1 : 1;
}

// rpmdsCompare: does a provide of range `p` meet the requirement `r`?
bool ranges_overlap(const Dep& p, const Dep& r) {
  if (p.flags == k_any || r.flags == k_any || p.evr.empty() || r.evr.empty()) return true;
  int sense = compare_versions(p.evr, r.evr);
  if (sense < 0) return (p.flags & k_greater) || (r.flags & k_less);
  if (sense > 0) return (p.flags & k_less) || (r.flags & k_greater);
  return ((p.flags & k_equal) && (r.flags & k_equal)) || ((p.flags & k_less) && (r.flags & k_less)) ||
         ((p.flags & k_greater) && (r.flags & k_greater));
}

// ---------------------------------------------------------------------------
// Rich (boolean) dependencies: "(a or b)", "(a if b else c)".

struct Rich {
  enum Op { Leaf, And, Or, If, Unless, With, Without } op = Leaf;
  Dep leaf;
  std::vector<Rich> args;  // If/Unless: then, condition[, else]
};

class RichParser {
public:
  explicit RichParser(std::string_view s) : m_s(s) {}
  Result<Rich> parse() {
    auto r = expr(0);
    if (!r) return r;
    skip();
    if (m_pos != m_s.size()) return bad("text after the closing ')'");
    return r;
  }

private:
  Failure bad(const std::string& why) { return op_error("rich dependency " + quote(m_s) + ": " + why); }
  void skip() {
    while (m_pos < m_s.size() && m_s[m_pos] == ' ') ++m_pos;
  }
  std::string_view word() {
    skip();
    size_t start = m_pos;
    int nest = 0;  // names like perl(Foo) carry their own parentheses
    while (m_pos < m_s.size() && m_s[m_pos] != ' ') {
      if (m_s[m_pos] == '(') ++nest;
      else if (m_s[m_pos] == ')' && nest-- == 0) break;
      ++m_pos;
    }
    return m_s.substr(start, m_pos - start);
  }
  Result<Rich> operand(int depth) {
    skip();
    if (m_pos < m_s.size() && m_s[m_pos] == '(') return expr(depth + 1);
    Rich r;
    r.leaf.name = std::string(word());
    if (r.leaf.name.empty()) return bad("an empty operand");
    size_t save = m_pos;
    std::string_view op = word();
    static const std::map<std::string_view, unsigned> k_ops = {{"=", k_equal},           {"==", k_equal},  {"<", k_less},
                                                               {"<=", k_less | k_equal}, {">", k_greater}, {">=", k_greater | k_equal}};
    auto it = k_ops.find(op);
    if (it == k_ops.end()) {
      m_pos = save;
      return r;
    }
    r.leaf.flags = it->second;
    r.leaf.evr = std::string(word());
    if (r.leaf.evr.empty()) return bad("no version after " + std::string(op));
    return r;
  }
  Result<Rich> expr(int depth) {
    if (depth > 16) return bad("nested too deeply");
    skip();
    if (m_pos >= m_s.size() || m_s[m_pos] != '(') return bad("expected '('");
    ++m_pos;
    auto first = operand(depth);
    if (!first) return first;
    Rich r;
    r.args.push_back(std::move(*first));
    static const std::map<std::string_view, Rich::Op> k_ops = {{"and", Rich::And}, {"or", Rich::Or}, {"if", Rich::If},
                                                               {"unless", Rich::Unless}, {"with", Rich::With}, {"without", Rich::Without}};
    for (;;) {
      skip();
      if (m_pos < m_s.size() && m_s[m_pos] == ')') {
        ++m_pos;
        break;
      }
      std::string_view w = word();
      if (w.empty()) return bad("no closing ')'");
      Rich::Op op;
      if (w == "else" && (r.op == Rich::If || r.op == Rich::Unless) && r.args.size() == 2) {
        op = r.op;
      } else {
        auto it = k_ops.find(w);
        if (it == k_ops.end()) return bad("unknown operator " + quote(w));
        op = it->second;
        if (r.args.size() > 1 && (op != r.op || op == Rich::If || op == Rich::Unless)) return bad("operators mixed without parentheses");
      }
      r.op = op;
      auto next = operand(depth);
      if (!next) return next;
      r.args.push_back(std::move(*next));
    }
    if (r.args.size() == 1) return std::move(r.args[0]);
    return r;
  }
  std::string_view m_s;
  size_t m_pos = 0;
};

// ---------------------------------------------------------------------------
// The closure.

std::string describe_sources(const std::vector<PackageSource>& sources) {
  std::vector<std::string> parts;
  for (const auto& s : sources) {
    std::vector<std::string> urls;
    for (const auto& suite : s.suites) urls.push_back(s.url + "/" + suite);
    if (urls.empty()) urls.push_back(s.url);
    parts.push_back("'" + s.name + "' (" + join(urls, ", ") + ")");
  }
  return std::string(sources.size() == 1 ? "rpm-md source " : "rpm-md sources ") + join(parts, ", ");
}

std::string nevra(const Package& p) { return p.name + "-" + p.version + "." + p.arch; }

class Resolver {
public:
  Resolver(std::vector<RpmPackage> pkgs, const FetchRequest& request, const std::vector<PackageSource>& sources)
      : m_pkgs(std::move(pkgs)), m_request(request), m_sources(sources) {
    // Keys and Dep pointers point into m_pkgs, which stays as it is from here on.
    for (auto& p : m_pkgs) p.provides.push_back(Dep{p.pkg.name, k_equal, p.pkg.version});  // rpm's own, to be sure
    for (size_t i = 0; i < m_pkgs.size(); ++i) {
      for (const auto& d : m_pkgs[i].provides) m_provides[d.name].push_back({i, &d});
      for (const auto& f : m_pkgs[i].files) m_files[f].push_back(i);
    }
  }

  // Adds the best package for one requested name.
  Result<void> ask(const std::string& name) {
    std::optional<size_t> best;
    int best_form = 0;
    for (size_t i = 0; i < m_pkgs.size(); ++i) {
      int form = matches_name(m_pkgs[i].pkg, name);
      if (form == 0 || form < best_form) continue;
      if (!best || form > best_form || better(i, *best)) best = i, best_form = form;
    }
    if (!best)
      return input_error(m_request.why + ": no package " + quote(name) + " for " + m_request.arch + " in " + describe_sources(m_sources));
    add(*best);
    return {};
  }

  // Follows the Requires of everything chosen. `if` and `unless` wait until
  // the rest is known, as their conditions name packages that may come later
  // (rpm lists "(a if b)" before the plain names that bring b in).
  Result<void> walk() {
    std::vector<std::pair<Rich, size_t>> pending;
    size_t next = 0;
    for (;;) {
      for (; next < m_order.size(); ++next) {
        size_t i = m_order[next];
        for (const auto& req : m_pkgs[i].needs) {
          if (starts_with(req.name, "rpmlib(")) continue;
          Rich rich;
          if (starts_with(req.name, "(")) {
            auto parsed = RichParser(req.name).parse();
            if (!parsed) return Failure{parsed.error().kind, m_request.why + ": " + nevra(m_pkgs[i].pkg) + ": " + parsed.error().message};
            rich = std::move(*parsed);
          } else {
            rich.leaf = req;
          }
          if (rich.op == Rich::If || rich.op == Rich::Unless) {
            pending.emplace_back(std::move(rich), i);
            continue;
          }
          if (auto r = require(rich, i); !r) return r;
        }
      }
      // Conditions that what is chosen now makes true.
      for (auto it = pending.begin(); it != pending.end();) {
        const Rich& r = it->first;
        if (!satisfied(r.args[1])) {
          ++it;
          continue;
        }
        const Rich* branch = r.op == Rich::If ? &r.args[0] : r.args.size() > 2 ? &r.args[2] : nullptr;
        if (branch)
          if (auto res = require(*branch, it->second); !res) return res;
        it = pending.erase(it);
      }
      if (next < m_order.size()) continue;
      if (pending.empty()) break;
      // Nothing more came in: the remaining conditions stay false.
      for (const auto& [r, from] : pending) {
        const Rich* branch = r.op == Rich::Unless ? &r.args[0] : r.args.size() > 2 ? &r.args[2] : nullptr;
        if (branch)
          if (auto res = require(*branch, from); !res) return res;
      }
      pending.clear();
      if (next == m_order.size()) break;
    }
    return {};
  }

  std::vector<Package> result() const {
    std::vector<Package> out;
    for (size_t i : m_order) out.push_back(*m_pkgs[i].indexed);
    std::sort(out.begin(), out.end(), [](const Package& a, const Package& b) {
      if (a.name != b.name) return a.name < b.name;
      return compare_versions(a.version, b.version) < 0;
    });
    return out;
  }

private:
  struct Provide {
    size_t pkg;
    const Dep* dep;
  };

  // How `want` names p: 2 by its name (NAME, NAME.ARCH), 1 with a version,
  // 0 not at all. A package named "foo-1" wins over foo version 1, as in dnf.
  static int matches_name(const Package& p, std::string_view want) {
    if (!starts_with(want, p.name)) return 0;
    std::string_view rest = want.substr(p.name.size());
    if (rest.empty() || rest == "." + p.arch) return 2;
    if (rest[0] != '-') return 0;
    rest.remove_prefix(1);
    if (ends_with(rest, "." + p.arch) && matches_evr(p.version, rest.substr(0, rest.size() - p.arch.size() - 1))) return 1;
    return matches_evr(p.version, rest) ? 1 : 0;
  }
  // version is "[e:]v-r"; asked may leave out the epoch, or the release
  // (dnf's NAME-VERSION: the driver container asks gcc-<version>).
  static bool matches_evr(std::string_view version, std::string_view asked) {
    if (asked == version) return true;
    Evr a = split_evr(asked), v = split_evr(version);
    std::string_view ae = a.epoch.empty() ? "0" : a.epoch, ve = v.epoch.empty() ? "0" : v.epoch;
    return a.version == v.version && (a.release.empty() || a.release == v.release) && (a.epoch.empty() || ae == ve);
  }

  // dnf's pick among packages: the highest version, then the machine's arch over noarch, then the first listed.
  bool better(size_t a, size_t b) const {
    const Package& pa = m_pkgs[a].pkg;
    const Package& pb = m_pkgs[b].pkg;
    int c = compare_versions(pa.version, pb.version);
    if (c != 0) return c > 0;
    return pa.arch == m_request.arch && pb.arch != m_request.arch;
  }

  void add(size_t i) {
    if (m_chosen.insert(i).second) m_order.push_back(i);
  }

  bool wanted(size_t provider, size_t from) const {
    return m_request.closure == Closure::Full || m_pkgs[provider].pkg.source == m_pkgs[from].pkg.source;
  }

  std::vector<size_t> providers(const Dep& d) const {
    std::vector<size_t> out;
    if (auto it = m_provides.find(d.name); it != m_provides.end())
      for (const auto& p : it->second)
        if (ranges_overlap(*p.dep, d)) out.push_back(p.pkg);
    if (d.name[0] == '/')
      if (auto it = m_files.find(d.name); it != m_files.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  bool satisfied(const Rich& r) const {
    switch (r.op) {
      case Rich::Leaf:
        for (size_t p : providers(r.leaf))
          if (m_chosen.count(p)) return true;
        return false;
      case Rich::And:
        return std::all_of(r.args.begin(), r.args.end(), [&](const Rich& a) { return satisfied(a); });
      case Rich::Or:
        return std::any_of(r.args.begin(), r.args.end(), [&](const Rich& a) { return satisfied(a); });
      case Rich::If:
        return satisfied(r.args[1]) ? satisfied(r.args[0]) : r.args.size() < 3 || satisfied(r.args[2]);
      case Rich::Unless:
        return !satisfied(r.args[1]) ? satisfied(r.args[0]) : r.args.size() < 3 || satisfied(r.args[2]);
      default:
        return false;
    }
  }

  // Could `r` be met from the index (and the closure's rule) at all?
  bool satisfiable(const Rich& r, size_t from) const {
    switch (r.op) {
      case Rich::Leaf:
        for (size_t p : providers(r.leaf))
          if (wanted(p, from)) return true;
        return false;
      case Rich::And:
        return std::all_of(r.args.begin(), r.args.end(), [&](const Rich& a) { return satisfiable(a, from); });
      case Rich::Or:
        return std::any_of(r.args.begin(), r.args.end(), [&](const Rich& a) { return satisfiable(a, from); });
      default:
        return true;
    }
  }

  Result<void> require(const Rich& r, size_t from) {
    switch (r.op) {
      case Rich::Leaf: {
        std::optional<size_t> best;
        for (size_t p : providers(r.leaf)) {
          if (m_chosen.count(p)) return {};
          if (!wanted(p, from)) continue;
          // A provider named like the requirement first, then the best version; other names alphabetically.
          if (!best) best = p;
          else {
            const Package& a = m_pkgs[p].pkg;
            const Package& b = m_pkgs[*best].pkg;
            bool an = a.name == r.leaf.name, bn = b.name == r.leaf.name;
            if (an != bn ? an : a.name != b.name ? a.name < b.name : better(p, *best)) best = p;
          }
        }
        if (best) add(*best);
        else if (m_request.closure == Closure::Full)
          return input_error(m_request.why + ": " + nevra(m_pkgs[from].pkg) + " requires " + quote(r.leaf.text()) +
                             ", which no package for " + m_request.arch + " provides in " + describe_sources(m_sources) +
                             (r.leaf.name[0] == '/' ? " (primary.xml lists only files in bin/ and /etc; filelists.xml is not read)" : ""));
        return {};
      }
      case Rich::And:
        for (const auto& a : r.args)
          if (auto res = require(a, from); !res) return res;
        return {};
      case Rich::Or:
        if (satisfied(r)) return {};
        for (const auto& a : r.args)
          if (satisfiable(a, from)) return require(a, from);
        return require(r.args[0], from);  // the error names the first alternative
      case Rich::If:
      case Rich::Unless: {
        bool cond = satisfied(r.args[1]) == (r.op == Rich::If);
        if (cond) return require(r.args[0], from);
        if (r.args.size() > 2) return require(r.args[2], from);
        return {};
      }
      default:
        return op_error(m_request.why + ": " + nevra(m_pkgs[from].pkg) + " has a rich dependency with '" +
                        (r.op == Rich::With ? "with" : "without") + "', which is not supported");
    }
  }

  std::vector<RpmPackage> m_pkgs;
  const FetchRequest& m_request;
  const std::vector<PackageSource>& m_sources;
  std::unordered_map<std::string_view, std::vector<Provide>> m_provides;
  std::unordered_map<std::string_view, std::vector<size_t>> m_files;
  std::set<size_t> m_chosen;
  std::vector<size_t> m_order;
};

struct RepomdPrimary {
  std::string href, sha256, open_sha256;
  std::uint64_t size = 0, open_size = 0;
  bool has_size = false, has_open_size = false;
};

Result<RepomdPrimary> parse_repomd(std::string_view xml, const std::string& what) {
  XmlReader x(xml, what);
  XmlReader::Event ev;
  RepomdPrimary p;
  bool in_primary = false, found = false;
  std::string checksum_type;
  while (x.next(ev) && ev != XmlReader::Event::Eof) {
    if (x.depth() == 1 && ev == XmlReader::Event::Start && x.name() != "repomd")
      return op_error(what + ": the root element is <" + std::string(x.name()) + ">, not <repomd>");
    if (ev == XmlReader::Event::Start) {
      if (x.depth() == 2 && x.name() == "data") {
        const std::string* type = x.attr("type");
        in_primary = type && *type == "primary";
        if (in_primary && found) return op_error(what + ": two <data type=\"primary\">");
        found = found || in_primary;
      } else if (in_primary && x.depth() == 3) {
        if (x.name() == "checksum" || x.name() == "open-checksum") {
          const std::string* type = x.attr("type");
          checksum_type = type ? *type : "";
          if (checksum_type != "sha256" && x.name() == "checksum")
            return op_error(what + ": primary checksum type " + quote(checksum_type) + " is not supported (sha256 only)");
        } else if (x.name() == "location") {
          if (x.attr("xml:base")) return op_error(what + ": primary location xml:base (metadata elsewhere) is not supported");
          const std::string* href = x.attr("href");
          if (!href || !safe_location(*href))
            return op_error(what + ": primary location href " + quote(href ? *href : "") + " is not a path below the repository");
          p.href = *href;
        }
      }
      continue;
    }
    if (!in_primary) continue;
    if (x.depth() == 1 && x.name() == "data") {
      in_primary = false;
      continue;
    }
    if (x.depth() != 2) continue;
    std::string text(trim(x.text()));
    auto number = [&](std::uint64_t& out, bool& has) -> Result<void> {
      if (!is_digits(text) || text.size() > 15)
        return op_error(what + ": primary " + std::string(x.name()) + " " + quote(text) + " is not a number");
      out = std::stoull(text);
      has = true;
      return {};
    };
    auto hex = [&](std::string& out) -> Result<void> {
      std::string h = to_lower(text);
      if (h.size() != 64 || h.find_first_not_of("0123456789abcdef") != std::string::npos)
        return op_error(what + ": primary " + std::string(x.name()) + " " + quote(text) + " is not a sha256");
      out = std::move(h);
      return {};
    };
    Result<void> r;
    if (x.name() == "checksum") r = hex(p.sha256);
    else if (x.name() == "open-checksum" && checksum_type == "sha256") r = hex(p.open_sha256);
    else if (x.name() == "size") r = number(p.size, p.has_size);
    else if (x.name() == "open-size") r = number(p.open_size, p.has_open_size);
    if (!r) return r.error();
  }
  if (!x.error().empty()) return op_error(x.error());
  if (!found) return op_error(what + ": no <data type=\"primary\">");
  if (p.href.empty()) return op_error(what + ": the primary data has no location");
  if (p.sha256.empty()) return op_error(what + ": the primary data has no sha256 checksum");
  return p;
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
  Evr x = split_evr(a), y = split_evr(b);
  auto epoch = [](std::string_view e) {
    while (e.size() > 1 && e[0] == '0') e.remove_prefix(1);
    return e.empty() ? std::string_view("0") : e;
  };
  std::string_view ex = epoch(x.epoch), ey = epoch(y.epoch);
  if (ex.size() != ey.size()) return ex.size() < ey.size() ? -1 : 1;
  if (int c = ex.compare(ey); c != 0) return c < 0 ? -1 : 1;
  if (int c = rpmvercmp(x.version, y.version); c != 0) return c;
  if (x.release.empty() || y.release.empty()) return 0;
  return rpmvercmp(x.release, y.release);
}

Result<std::vector<Package>> parse_primary(std::string_view xml, const PackageSource& source, const std::string& repo_url,
                                           const std::string& what) {
  std::vector<Package> out;
  auto r = read_packages(xml, "metadata", source, repo_url, what, true, [&](RpmPackage&& p) -> Result<void> {
    p.pkg.entry = std::string(p.entry);
    out.push_back(std::move(p.pkg));
    return {};
  });
  if (!r) return r.error();
  return out;
}

Result<std::vector<Package>> load_index(http::Transport& t, const PackageSource& source, const std::string& arch) {
  std::vector<std::string> repos;
  for (const auto& suite : source.suites) repos.push_back(source.url + "/" + suite);
  if (repos.empty()) repos.push_back(source.url);
  std::vector<Package> out;
  for (const auto& repo : repos) {
    std::string repomd_url = repo + "/repodata/repomd.xml";
    auto repomd = get_document(t, source, repomd_url, k_repomd_max);
    if (!repomd) return repomd.error();
    auto sig = get_optional_document(t, source, repomd_url + ".asc", k_signature_max);
    if (!sig) return sig.error();
    if (!*sig && !source.package_signatures)
      return op_error(repomd_url + ": not signed (" + repomd_url + ".asc: not found); package source '" + source.name +
                      "' must be a signed repository, or say `signatures: packages` to check each rpm's signature instead");
    if (*sig)
      if (auto ok = openpgp::verify_detached(source.keyring, *repomd, **sig, repomd_url); !ok) return ok.error();
    auto primary = parse_repomd(*repomd, repomd_url);
    if (!primary) return primary.error();

    std::string primary_url = repo + "/" + primary->href;
    if (primary->size > k_primary_max || primary->open_size > k_primary_open_max)
      return op_error(primary_url + ": larger than " + std::to_string(k_primary_max >> 20) + " MiB packed or " +
                      std::to_string(k_primary_open_max >> 20) + " MiB open, by the signed " + repomd_url + "; refused");
    auto packed = get_document(t, source, primary_url, primary->has_size ? primary->size : k_primary_max);
    if (!packed) return packed.error();
    if (primary->has_size && packed->size() != primary->size)
      return op_error(primary_url + ": " + std::to_string(packed->size()) + " bytes, but the signed " + repomd_url + " says " +
                      std::to_string(primary->size));
    if (auto got = sha256_hex(*packed); got != primary->sha256)
      return op_error(primary_url + ": sha256 " + got + " differs from the signed " + repomd_url + "'s " + primary->sha256);
    std::uint64_t open_max = primary->has_open_size ? primary->open_size : k_primary_open_max;
    if (!*sig) {
      // An unsigned repomd.xml (signatures: packages): its sizes are the
      // sender's word, so the decompressed size is bounded by both what it
      // declares and a plausible ratio to the bytes that came.
      if (!primary->has_open_size)
        return op_error(primary_url + ": the unsigned " + repomd_url + " declares no open-size for it; refused (createrepo_c always writes one)");
      open_max = std::min<std::uint64_t>(open_max, std::max<std::uint64_t>(packed->size(), 1) * k_primary_max_ratio);
    }
    auto xml = decompress(*packed, primary_url, open_max);
    if (!xml) return xml.error();
    if (primary->has_open_size && xml->size() != primary->open_size)
      return op_error(primary_url + ": " + std::to_string(xml->size()) + " bytes decompressed, but the signed " + repomd_url + " says " +
                      std::to_string(primary->open_size));
    if (!primary->open_sha256.empty() && sha256_hex(*xml) != primary->open_sha256)
      return op_error(primary_url + ": the decompressed sha256 differs from the signed " + repomd_url + "'s open-checksum");
    auto r = read_packages(*xml, "metadata", source, repo, primary_url, false, [&](RpmPackage&& p) -> Result<void> {
      if (p.pkg.arch != arch && p.pkg.arch != "noarch") return {};
      p.pkg.entry = std::string(p.entry);
      out.push_back(std::move(p.pkg));
      return {};
    });
    if (!r) return r.error();
  }
  return out;
}

Result<std::vector<Package>> resolve(const std::vector<Package>& index, const FetchRequest& request,
                                     const std::vector<PackageSource>& sources) {
  std::vector<RpmPackage> pkgs;
  pkgs.reserve(index.size());
  PackageSource none;
  for (const auto& p : index) {
    if (p.arch != request.arch && p.arch != "noarch") continue;
    size_t before = pkgs.size();
    auto r = read_packages(p.entry, "package", none, p.repo_url, p.repo_url + ": " + nevra(p), true, [&](RpmPackage&& rp) -> Result<void> {
      rp.indexed = &p;  // the record returned, as the index has it (origin, repo)
      pkgs.push_back(std::move(rp));
      return {};
    });
    if (!r) return r.error();
    if (pkgs.size() != before + 1) return op_error(p.repo_url + ": " + nevra(p) + ": the index entry is not one <package>");
  }
  Resolver closure(std::move(pkgs), request, sources);
  for (const auto& name : request.names)
    if (auto r = closure.ask(name); !r) return r.error();
  if (auto r = closure.walk(); !r) return r.error();
  return closure.result();
}

Result<void> write_site_repo(const std::vector<Fetched>& files, const openpgp::SigningKey& key, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* old : {"Packages", "repodata"}) {
    fs::remove_all(dir / old, ec);
    if (ec) return op_error((dir / old).string() + ": cannot remove the earlier repository: " + ec.message());
  }
  fs::create_directories(dir / "Packages", ec);
  if (ec) return op_error((dir / "Packages").string() + ": " + ec.message());
  std::set<std::string> names;
  for (const auto& f : files) {
    std::string name = f.package.file_name();
    if (!names.insert(name).second) return op_error(name + ": two packages with one file name for " + dir.string());
    fs::copy_file(f.file, dir / "Packages" / name, ec);
    if (ec) return op_error(f.file.string() + ": cannot copy into " + (dir / "Packages").string() + ": " + ec.message());
  }
  // gz metadata, which every dnf and yum reads; no sqlite (dnf never reads
  // it); fixed names, so the layout is the one above.
  std::vector<std::string> argv = {"createrepo_c", "--quiet", "--no-database", "--simple-md-filenames",
                                   "--general-compress-type=gz", "--checksum=sha256"};
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  if (*epoch) argv.insert(argv.end(), {"--revision=" + std::to_string(**epoch), "--set-timestamp-to-revision"});
  argv.push_back(dir.string());
  auto run = run_process(argv);
  if (!run) return run.error();
  if (run->status != 0)
    return op_error(dir.string() + ": createrepo_c failed (exit " + std::to_string(run->status) +
                    "): " + bounded_line(std::string(trim(run->err))));
  fs::path repomd = dir / "repodata" / "repomd.xml";
  auto text = read_file(repomd, k_repomd_max);
  if (!text) return text.error();
  auto sig = key.detach_sign(*text, true);
  if (!sig) return sig.error();
  if (auto w = write_atomic(repomd.string() + ".asc", *sig); !w) return w;
  return write_atomic(dir / "RPM-GPG-KEY-gpubundle", key.public_armored());
}

Result<void> verify_package_signature(const std::filesystem::path& keyring, const Fetched& file) {
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
  ProcessOptions c_locale{{{"LC_ALL", "C"}}, {}};
  auto run = [&](std::vector<std::string> argv) -> Result<ProcessResult> {
    auto r = run_process(argv, c_locale);
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
  auto checked = run_process({"rpmkeys", "--dbpath", db.string(), "--checksig", "-v", what}, c_locale);
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
