#include "serve/users.hpp"

#include <crypt.h>
#include <openssl/crypto.h>

#include <cstring>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>

#include "common/strings.hpp"
#include "signing/digest.hpp"
#include "signing/signature.hpp"

namespace gb::serve {

namespace {

// "$2y$" (or 2a, 2b), two cost digits, "$", then 53 characters of bcrypt's base64: salt and hash.
bool is_bcrypt(std::string_view h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || (h[2] != 'y' && h[2] != 'b' && h[2] != 'a') || h[3] != '$' || h[6] != '$')
    return false;
  if (!is_digits(h.substr(4, 2))) return false;
  return std::all_of(h.begin() + 7, h.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/'; });
}

constexpr int k_max_cost = 16;

}  // namespace

struct Users::Impl {
  std::map<std::string, std::string, std::less<>> hashes;  // user -> bcrypt hash
  mutable std::mutex mu;
  mutable std::set<std::string> good;  // sha256 of "user\0password" checked
  static constexpr std::size_t k_max_remembered = 4096;
};

Users::Users(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Users::Users(Users&&) noexcept = default;
Users& Users::operator=(Users&&) noexcept = default;
Users::~Users() = default;
std::size_t Users::size() const { return m_impl->hashes.size(); }

Result<Users> Users::parse(std::string_view text, const std::string& what) {
  auto impl = std::make_unique<Impl>();
  std::size_t n = 0;
  for (const auto& raw : split(text, '\n')) {
    ++n;
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    auto colon = line.find(':');
    std::string where = what + " line " + std::to_string(n);
    if (colon == std::string_view::npos || colon == 0) return input_error(where + ": not USER:HASH");
    std::string user(line.substr(0, colon));
    std::string_view hash = line.substr(colon + 1);
    if (!is_bcrypt(hash)) return input_error(where + ": user " + quote(user) + " has no bcrypt hash (make it with htpasswd -B)");
    int cost = std::stoi(std::string(hash.substr(4, 2)));
    // Paid on each new client's first request: 2^cost rounds.
    if (cost < 4 || cost > k_max_cost)
      return input_error(where + ": user " + quote(user) + ": bcrypt cost " + std::to_string(cost) + " is outside 4-" + std::to_string(k_max_cost));
    if (!impl->hashes.emplace(user, hash).second) return input_error(where + ": user " + quote(user) + " is listed twice");
  }
  if (impl->hashes.empty()) return input_error(what + ": no users");
  return Users(std::move(impl));
}

std::optional<std::string> Users::check(std::string_view authorization) const {
  auto space = authorization.find(' ');
  if (space == std::string_view::npos || to_lower(authorization.substr(0, space)) != "basic") return std::nullopt;
  auto decoded = signing::base64_decode(trim(authorization.substr(space + 1)));
  if (!decoded) return std::nullopt;
  const std::string& pair = decoded.value();
  auto colon = pair.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string user = pair.substr(0, colon);
  auto it = m_impl->hashes.find(user);
  if (it == m_impl->hashes.end()) return std::nullopt;
  std::string key = signing::sha256_hex(user + '\0' + pair.substr(colon + 1) + '\0' + it->second);
  {
    std::lock_guard lock(m_impl->mu);
    if (m_impl->good.count(key)) return user;
  }
  auto data = std::make_unique<crypt_data>();
  const char* got = crypt_r(pair.c_str() + colon + 1, it->second.c_str(), data.get());
  if (!got || std::strlen(got) != it->second.size() || CRYPTO_memcmp(got, it->second.data(), it->second.size()) != 0)
    return std::nullopt;
  std::lock_guard lock(m_impl->mu);
  if (m_impl->good.size() >= Impl::k_max_remembered) m_impl->good.clear();
  m_impl->good.insert(key);
  return user;
}

}  // namespace gb::serve
