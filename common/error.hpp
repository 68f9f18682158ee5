#pragma once
// One error type for the whole tool. Leaf functions return Result<T>; callers
// either handle the failure or turn it into an Error with value_or_throw().
// builder/main.cpp is the single place that catches Error and maps its kind to
// an exit code.

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace gb {

enum class ErrorKind {
  Input,   // bad usage, bad file, bad field: exit 2
  Failed,  // the operation itself failed (network, disk, verification): exit 1
};

int exit_code(ErrorKind kind);

struct Failure {
  ErrorKind kind = ErrorKind::Failed;
  std::string message;
};

inline Failure input_error(std::string message) { return {ErrorKind::Input, std::move(message)}; }
inline Failure op_error(std::string message) { return {ErrorKind::Failed, std::move(message)}; }

class Error : public std::runtime_error {
public:
  explicit Error(Failure f) : std::runtime_error(f.message), m_kind(f.kind) {}
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  ErrorKind kind() const { return m_kind; }

private:
  ErrorKind m_kind;
};

template <typename T>
class [[nodiscard]] Result {
public:
  Result(T value) : m_v(std::move(value)) {}
  Result(Failure failure) : m_v(std::move(failure)) {}

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(m_v); }
  const T& value() const& { return std::get<0>(m_v); }
  T&& value() && { return std::get<0>(std::move(m_v)); }
  const Failure& error() const { return std::get<1>(m_v); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

  T value_or_throw() && {
    if (!ok()) throw Error(std::get<1>(m_v));
    return std::get<0>(std::move(m_v));
  }

private:
  std::variant<T, Failure> m_v;
};

template <>
class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Failure failure) : m_failure(std::move(failure)), m_ok(false) {}
  bool ok() const { return m_ok; }
  explicit operator bool() const { return m_ok; }
  const Failure& error() const { return m_failure; }
  void value_or_throw() const {
    if (!m_ok) throw Error(m_failure);
  }

private:
  Failure m_failure;
  bool m_ok = true;
};

}  // namespace gb
