#pragma once
// Running a helper program (gpgv, gpg, createrepo_c) to completion, its
// output captured. No shell is involved: argv goes to execvp as it is.
// stdin is empty: inputs go in files, so a child that exits early can never
// leave us writing into a closed pipe.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

struct ProcessResult {
  int status = 0;       // exit status, or 128 + signal
  std::string out;      // stdout, up to 64 MiB
  std::string err;      // stderr, up to 1 MiB
};

struct ProcessOptions {
  std::map<std::string, std::string> env;      // added to (or replacing in) the environment
  std::filesystem::path cwd;                   // empty: the current folder
  // Non-empty: stdout and stderr are appended to this file (a build's log)
  // instead of captured; out and err stay empty.
  std::filesystem::path log;
  std::string not_found_hint;                  // said when the program is not on PATH
};

// A program that cannot be started is an op_error naming it; a non-zero
// exit is not an error here: the caller reads status and err.
//
// Code that runs a program takes a CommandRunner (through its options, null
// meaning system_runner()), so unit tests can hand it a fake that records argv
// and scripts the output: the logic around gpg, gpgv, createrepo_c, rpmkeys,
// make and strip is then tested without them.
class CommandRunner {
public:
  virtual ~CommandRunner() = default;
  virtual Result<ProcessResult> run(const std::vector<std::string>& argv, const ProcessOptions& options) = 0;
};

// The real runner: run_process. Stateless, so one shared object is safe.
CommandRunner& system_runner();

// The one way gpubundle starts a program (gpg, gpgv, createrepo_c, rpmkeys,
// make, strip, depmod ...): fork and execvp.
Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

}  // namespace gb
