#pragma once
// Basic authentication for serve: an htpasswd(5) file.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace gb::serve {

// htpasswd(5) users with bcrypt hashes ("$2y$", "$2b$", "$2a$"), as
// docker-registry's htpasswd auth reads them; other hash kinds are refused
// at load, as is a cost above 16 (each new client pays 2^cost rounds).
// A checked user:password pair is remembered (as its SHA-256), so
// bcrypt is paid once per client, not per request.
class Users {
public:
  // `what` names the file in errors.
  static Result<Users> parse(std::string_view text, const std::string& what);
  Users(Users&&) noexcept;
  Users& operator=(Users&&) noexcept;
  ~Users();
  // The user of a valid "Authorization: Basic ..." header, or nullopt.
  std::optional<std::string> check(std::string_view authorization) const;
  std::size_t size() const;

  struct Impl;

private:
  explicit Users(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::serve
