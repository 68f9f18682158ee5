// serve's htpasswd file and the Authorization header checked against it
// (serve/users.hpp). Input: the file, then a line "--", then the header.
// Hashes above cost 5 are not checked here: bcrypt's rounds would only make
// the run slow, not reach more code.
#include "fuzz/fuzz_input.hpp"
#include "serve/users.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = gbfuzz::text(data, size);
  auto sep = in.find("\n--\n");
  std::string_view file = in.substr(0, sep);
  std::string_view header = sep == std::string_view::npos ? std::string_view() : in.substr(sep + 4);
  auto users = gb::serve::Users::parse(file, "htpasswd");
  if (!users) return 0;
  if (file.find("$2y$0") == std::string_view::npos && file.find("$2b$0") == std::string_view::npos &&
      file.find("$2a$0") == std::string_view::npos)
    return 0;
  (void)users->check(header);
  return 0;
}
