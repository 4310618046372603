// Helpers shared by the tests that start the command-line tools.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace linfer::testing {

// Runs a shell command and returns its stdout and stderr; *exit_code gets the exit status
// (-1 if it did not exit normally).
inline std::string run_command(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int st = p ? pclose(p) : -1;
  *exit_code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

}  // namespace linfer::testing
