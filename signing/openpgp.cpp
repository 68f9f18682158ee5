#include "signing/openpgp.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/files.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"

namespace gb::signing::openpgp {

namespace fs = std::filesystem;

namespace {

// A private GNUPGHOME, removed (with its agent stopped) when the object dies.
class GpgHome {
public:
  static Result<GpgHome> make(CommandRunner* runner) {
    std::string tmpl = (fs::temp_directory_path() / "gpubundle-gpg-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return op_error("cannot make a temporary GnuPG home in " + fs::temp_directory_path().string());
    return GpgHome(tmpl, runner ? *runner : system_runner());
  }
  GpgHome(GpgHome&& o) noexcept : m_dir(std::move(o.m_dir)), m_runner(o.m_runner) { o.m_dir.clear(); }
  GpgHome& operator=(GpgHome&&) = delete;
  ~GpgHome() {
    if (m_dir.empty()) return;
    // gpg starts an agent for secret-key work; it would outlive the folder.
    if (fs::exists(m_dir / "private-keys-v1.d")) (void)m_runner->run({"gpgconf", "--homedir", m_dir.string(), "--kill", "gpg-agent"}, {});
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  const fs::path& dir() const { return m_dir; }

  Result<ProcessResult> run(const std::string& tool, std::vector<std::string> args) const {
    // gpgv takes neither --batch nor --no-tty: it never asks.
    if (tool == "gpgv") args.insert(args.begin(), {tool, "--homedir", m_dir.string()});
    else args.insert(args.begin(), {tool, "--homedir", m_dir.string(), "--batch", "--no-tty"});
    ProcessOptions c_locale;
    c_locale.env = {{"LC_ALL", "C"}};
    return m_runner->run(args, c_locale);
  }

private:
  GpgHome(fs::path dir, CommandRunner& runner) : m_dir(std::move(dir)), m_runner(&runner) {}
  fs::path m_dir;
  CommandRunner* m_runner;
};

std::string first_error_line(const std::string& err) {
  std::istringstream in(err);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find("Can't check signature") != std::string::npos || line.find("BAD signature") != std::string::npos ||
        line.find("no valid OpenPGP data") != std::string::npos || line.find("not a detached signature") != std::string::npos)
      return std::string(trim(line));
    if (!trim(line).empty()) last = std::string(trim(line));
  }
  return last;
}

// gpgv wants binary keyrings: an armoured file is dearmoured into the home.
Result<fs::path> usable_keyring(const GpgHome& home, const fs::path& keyring) {
  auto text = read_file(keyring, 16u << 20);
  if (!text) return input_error(keyring.string() + ": cannot read the keyring: " + text.error().message);
  if (text->empty()) return input_error(keyring.string() + ": empty keyring");
  if (text->find("-----BEGIN PGP PUBLIC KEY BLOCK-----") == std::string::npos) return fs::absolute(keyring);
  fs::path out = home.dir() / "keyring.gpg";
  auto r = home.run("gpg", {"--dearmor", "--output", out.string(), fs::absolute(keyring).string()});
  if (!r) return r.error();
  if (r->status != 0) return input_error(keyring.string() + ": not an OpenPGP keyring: " + first_error_line(r->err));
  return out;
}

// Reads gpgv's status lines: a good, valid signature made with a hash apt
// still accepts (no MD5, SHA-1 or RIPEMD-160).
Result<void> check_status(const ProcessResult& r, const fs::path& keyring, const std::string& what) {
  bool good = false, bad = false;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto f = split(line, ' ');
    if (f.size() < 2 || f[0] != "[GNUPG:]") continue;
    if (f[1] == "BADSIG" || f[1] == "ERRSIG" || f[1] == "EXPKEYSIG" || f[1] == "REVKEYSIG") bad = true;
    if (f[1] == "VALIDSIG" && f.size() > 9) {
      int hash = std::atoi(f[9].c_str());
      if (hash == 1 || hash == 2 || hash == 3)
        return op_error(what + ": signed with a weak digest (OpenPGP hash algorithm " + f[9] + "); refused");
      good = true;
    }
  }
  if (r.status != 0 || bad || !good) {
    std::string why = first_error_line(r.err);
    return op_error(what + ": signature check failed against " + keyring.string() + (why.empty() ? "" : ": " + why));
  }
  return {};
}

}  // namespace

Result<std::string> verify_clearsigned(const fs::path& keyring, std::string_view document, const std::string& what,
                                       CommandRunner* runner) {
  // apt refuses anything before the signed message; so do we (gpgv would skip it).
  size_t start = document.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || document.substr(start).rfind("-----BEGIN PGP SIGNED MESSAGE-----", 0) != 0)
    return op_error(what + ": not a clearsigned document");
  auto end = document.rfind("-----END PGP SIGNATURE-----");
  if (end == std::string_view::npos ||
      document.find_first_not_of(" \t\r\n", end + 27) != std::string_view::npos ||
      document.find("-----BEGIN PGP SIGNED MESSAGE-----", start + 1) != std::string_view::npos)
    return op_error(what + ": text outside the one signed message; refused");
  auto home = GpgHome::make(runner);
  if (!home) return home.error();
  auto ring = usable_keyring(*home, keyring);
  if (!ring) return ring.error();
  fs::path in = home->dir() / "document", out = home->dir() / "signed";
  if (auto w = write_atomic(in, document); !w) return w.error();
  auto r = home->run("gpgv", {"--status-fd", "1", "--keyring", ring->string(), "--output", out.string(), in.string()});
  if (!r) return r.error();
  if (auto ok = check_status(*r, keyring, what); !ok) return ok.error();
  auto text = read_file(out);
  if (!text) return op_error(what + ": gpgv wrote no signed text");
  return std::move(text.value());
}

Result<void> verify_detached(const fs::path& keyring, std::string_view data, std::string_view signature,
                             const std::string& what, CommandRunner* runner) {
  auto home = GpgHome::make(runner);
  if (!home) return home.error();
  auto ring = usable_keyring(*home, keyring);
  if (!ring) return ring.error();
  fs::path d = home->dir() / "data", s = home->dir() / "data.sig";
  if (auto w = write_atomic(d, data); !w) return w.error();
  if (auto w = write_atomic(s, signature); !w) return w.error();
  auto r = home->run("gpgv", {"--status-fd", "1", "--keyring", ring->string(), s.string(), d.string()});
  if (!r) return r.error();
  return check_status(*r, keyring, what);
}

struct SigningKey::Impl {
  GpgHome home;
  std::string fingerprint;
  std::string public_armored;
  std::int64_t created = 0;  // the key's creation time, seconds

  // An OpenPGP signature carries its creation time. With SOURCE_DATE_EPOCH
  // that is the epoch (never before the key was made: gpgv refuses such a
  // signature), so the same text and key give the same bytes.
  Result<std::vector<std::string>> time_args() const {
    auto epoch = source_date_epoch();
    if (!epoch) return epoch.error();
    if (!*epoch) return std::vector<std::string>{};
    return std::vector<std::string>{"--faked-system-time", std::to_string(std::max(**epoch, created)) + "!"};
  }

  // gpg `mode` ("--clearsign", "--detach-sign" ...) over `data`: what it writes to `out_name`.
  Result<std::string> sign(std::string_view data, const std::vector<std::string>& mode, const std::string& out_name) const {
    fs::path in = home.dir() / "to-sign", out = home.dir() / out_name;
    if (auto w = write_atomic(in, data); !w) return w.error();
    auto args = time_args();
    if (!args) return args.error();
    args->insert(args->end(), {"--yes", "--local-user", fingerprint, "--digest-algo", "SHA512"});
    args->insert(args->end(), mode.begin(), mode.end());
    args->insert(args->end(), {"--output", out.string(), in.string()});
    auto r = home.run("gpg", *args);
    if (!r) return r.error();
    if (r->status != 0) return op_error("gpg " + mode[0] + " failed: " + first_error_line(r->err));
    return read_file(out);
  }
};

SigningKey::SigningKey() = default;
SigningKey::SigningKey(SigningKey&& o) noexcept : m_impl(std::exchange(o.m_impl, nullptr)) {}
SigningKey& SigningKey::operator=(SigningKey&& o) noexcept {
  if (this != &o) {
    delete m_impl;
    m_impl = std::exchange(o.m_impl, nullptr);
  }
  return *this;
}
SigningKey::~SigningKey() { delete m_impl; }
const std::string& SigningKey::fingerprint() const { return m_impl->fingerprint; }
const std::string& SigningKey::public_armored() const { return m_impl->public_armored; }

Result<SigningKey> SigningKey::load(const fs::path& secret_key_file, CommandRunner* runner) {
  if (!fs::is_regular_file(secret_key_file)) return input_error(secret_key_file.string() + ": no such key file");
  auto made = GpgHome::make(runner);
  if (!made) return made.error();
  GpgHome home = std::move(*made);
  auto r = home.run("gpg", {"--import", fs::absolute(secret_key_file).string()});
  if (!r) return r.error();
  if (r->status != 0)
    return input_error(secret_key_file.string() + ": not an OpenPGP secret key: " + first_error_line(r->err));
  auto list = home.run("gpg", {"--with-colons", "--list-secret-keys"});
  if (!list) return list.error();
  std::string fpr;
  std::int64_t created = 0;
  int secret_keys = 0;
  std::istringstream in(list->out);
  std::string line;
  while (std::getline(in, line)) {
    auto f = split(line, ':');
    if (!f.empty() && f[0] == "sec") {
      ++secret_keys;
      if (f.size() > 5) created = std::strtoll(f[5].c_str(), nullptr, 10);
    }
    if (f.size() > 9 && f[0] == "fpr" && fpr.empty()) fpr = f[9];
  }
  if (secret_keys != 1 || fpr.empty())
    return input_error(secret_key_file.string() + ": must hold exactly one OpenPGP secret key, holds " +
                       std::to_string(secret_keys));
  auto pub = home.run("gpg", {"--armor", "--export", fpr});
  if (!pub) return pub.error();
  if (pub->status != 0 || pub->out.empty()) return op_error(secret_key_file.string() + ": cannot export its public key");
  SigningKey k;
  k.m_impl = new Impl{std::move(home), fpr, pub->out, created};
  return k;
}

Result<SigningKey> SigningKey::generate(const fs::path& secret_key_file, const std::string& user_id, CommandRunner* runner) {
  if (fs::exists(secret_key_file)) return input_error(secret_key_file.string() + ": exists; refusing to replace a key");
  auto home = GpgHome::make(runner);
  if (!home) return home.error();
  auto made = home->run("gpg", {"--passphrase", "", "--quick-generate-key", user_id, "ed25519", "sign", "never"});
  if (!made) return made.error();
  if (made->status != 0) return op_error("gpg --quick-generate-key failed: " + first_error_line(made->err));
  auto secret = home->run("gpg", {"--armor", "--export-secret-keys"});
  if (!secret) return secret.error();
  if (secret->status != 0 || secret->out.empty()) return op_error("gpg --export-secret-keys failed: " + first_error_line(secret->err));
  std::error_code ec;
  fs::create_directories(secret_key_file.parent_path().empty() ? fs::path(".") : secret_key_file.parent_path(), ec);
  if (auto w = write_atomic(secret_key_file, secret->out, 0600); !w) return w.error();
  return load(secret_key_file, runner);
}

Result<std::string> SigningKey::clearsign(std::string_view text) const {
  return m_impl->sign(text, {"--clearsign"}, "signed.asc");
}

Result<std::string> SigningKey::detach_sign(std::string_view data, bool armor) const {
  return m_impl->sign(data, armor ? std::vector<std::string>{"--detach-sign", "--armor"} : std::vector<std::string>{"--detach-sign"},
                      "signature");
}

}  // namespace gb::signing::openpgp
