#include "common/process.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gb {

namespace {

constexpr size_t k_max_out = 64u << 20;
constexpr size_t k_max_err = 1u << 20;

struct Fd {
  int fd = -1;
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

}  // namespace

Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) return op_error("run_process: no program");
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return op_error(std::string("pipe: ") + std::strerror(errno));
  Fd in_r{in[0]}, in_w{in[1]};
  if (::pipe2(out, O_CLOEXEC) != 0) return op_error(std::string("pipe: ") + std::strerror(errno));
  Fd out_r{out[0]}, out_w{out[1]};
  if (::pipe2(err, O_CLOEXEC) != 0) return op_error(std::string("pipe: ") + std::strerror(errno));
  Fd err_r{err[0]}, err_w{err[1]};

  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && options.env.count(kv.substr(0, eq))) continue;
    env_strings.push_back(std::move(kv));
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  std::string cwd = options.cwd.string();

  int exec_err[2];
  if (::pipe2(exec_err, O_CLOEXEC) != 0) return op_error(std::string("pipe: ") + std::strerror(errno));
  Fd exec_r{exec_err[0]}, exec_w{exec_err[1]};
  Fd log;
  if (!options.log.empty()) {
    log.fd = ::open(options.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log.fd < 0) return op_error(options.log.string() + ": " + std::strerror(errno));
  }

  pid_t pid = ::fork();
  if (pid < 0) return op_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(in_r.fd, 0);
    ::dup2(log.fd >= 0 ? log.fd : out_w.fd, 1);
    ::dup2(log.fd >= 0 ? log.fd : err_w.fd, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(126);
    ::execvpe(args[0], args.data(), envp.data());
    int e = errno;
    if (::write(exec_w.fd, &e, sizeof e) < 0) {}
    _exit(127);
  }
  in_r.close();
  out_w.close();
  err_w.close();
  exec_w.close();

  ProcessResult r;
  in_w.close();
  // Drain both outputs together, so a chatty child never blocks.
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    pollfd fds[2];
    int n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      char buf[65536];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      bool is_out = fds[i].fd == out_r.fd;
      if (got <= 0) {
        (is_out ? out_r : err_r).close();
        continue;
      }
      std::string& sink = is_out ? r.out : r.err;
      size_t cap = is_out ? k_max_out : k_max_err;
      if (sink.size() < cap) sink.append(buf, std::min(static_cast<size_t>(got), cap - sink.size()));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return op_error(std::string("waitpid: ") + std::strerror(errno));
  int e = 0;
  if (::read(exec_r.fd, &e, sizeof e) == sizeof e)
    return op_error(argv[0] + ": cannot run it: " + std::strerror(e) +
                    (e != ENOENT ? "" : options.not_found_hint.empty() ? " (is it installed?)" : " (" + options.not_found_hint + ")"));
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

CommandRunner& system_runner() {
  struct System final : CommandRunner {
    Result<ProcessResult> run(const std::vector<std::string>& argv, const ProcessOptions& options) override {
      return run_process(argv, options);
    }
  };
  static System runner;
  return runner;
}

}  // namespace gb
