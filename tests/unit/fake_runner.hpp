#pragma once
// A CommandRunner (common/process.hpp) for unit tests: it records every call
// and answers from a script, so the logic around gpg, gpgv, createrepo_c,
// rpmkeys, make and strip is tested without starting them. A script reads
// and writes the files named in argv, as the real program would.

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/process.hpp"
#include "fixtures.hpp"

namespace gbtest {

struct Call {
  std::vector<std::string> argv;
  gb::ProcessOptions options;

  bool has(const std::string& arg) const { return std::find(argv.begin(), argv.end(), arg) != argv.end(); }
  // The argument after `flag`, or "" when there is none.
  std::string after(const std::string& flag) const {
    auto it = std::find(argv.begin(), argv.end(), flag);
    return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
  }
};

inline gb::ProcessResult exited(int status, std::string out = "", std::string err = "") {
  gb::ProcessResult r;
  r.status = status;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

class FakeRunner final : public gb::CommandRunner {
public:
  using Script = std::function<gb::Result<gb::ProcessResult>(const Call&)>;
  FakeRunner() : m_script([](const Call&) -> gb::Result<gb::ProcessResult> { return exited(0); }) {}
  explicit FakeRunner(Script script) : m_script(std::move(script)) {}

  gb::Result<gb::ProcessResult> run(const std::vector<std::string>& argv, const gb::ProcessOptions& options) override {
    Call c;
    c.argv = argv;
    c.options = options;
    calls.push_back(c);
    return m_script(c);
  }

  // The calls whose argv[0] is `program`, in order.
  std::vector<Call> of(const std::string& program) const {
    std::vector<Call> out;
    for (const auto& c : calls)
      if (!c.argv.empty() && c.argv[0] == program) out.push_back(c);
    return out;
  }

  std::vector<Call> calls;

private:
  Script m_script;
};

// gpg as SigningKey (signing/openpgp.hpp) drives it, for one Ed25519 key made
// at k_fake_key_created: import, list, export and sign ("SIGNED(<input>)").
inline const std::string k_fake_fingerprint = "0123456789ABCDEF0123456789ABCDEF01234567";
inline const std::string k_fake_public = "-----BEGIN PGP PUBLIC KEY BLOCK-----\nfake\n-----END PGP PUBLIC KEY BLOCK-----\n";
constexpr long k_fake_key_created = 1700000000;

inline gb::Result<gb::ProcessResult> fake_gpg(const Call& c) {
  if (c.has("--import")) return exited(0, "", "gpg: key 0123456789ABCDEF: secret key imported\n");
  if (c.has("--list-secret-keys"))
    return exited(0, "sec:u:255:22:0123456789ABCDEF:" + std::to_string(k_fake_key_created) + ":::u:::scESC:::+:::ed25519:::0:\n"
                     "fpr:::::::::" + k_fake_fingerprint + ":\n"
                     "uid:u::::1700000000::HASH::test <t@test>::::::::::0:\n");
  if (c.has("--export")) return exited(0, k_fake_public);
  if (c.has("--detach-sign") || c.has("--clearsign")) {
    spit(c.after("--output"), "SIGNED(" + slurp(c.argv.back()) + ")");
    return exited(0);
  }
  return exited(2, "", "gpg: fake gpg: unexpected call\n");
}

}  // namespace gbtest
