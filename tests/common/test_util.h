// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests that start the command-line tools or read their files.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

#include "linfer/types/status.h"

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

// The value of a Result the test cannot go on without (its message shown when it failed).
template <class T>
T required(err::Result<T> result) {
  REQUIRE_MESSAGE(result.ok(), result.status().message());
  return std::move(result.value());
}

// Whether this build has the attention kind (-DLINFER_ATTENTION_KINDS, tests/CMakeLists.txt), by
// its name in the table of kinds (schema/attention_kinds.txt). Tests skip the cases and models of
// the others by name.
inline bool kind_built(const std::string& kind) {
  const std::string built = std::string(",") + LINFER_TEST_ATTENTION_KINDS + ",";
  return built.find("," + kind + ",") != std::string::npos;
}
// True, with a doctest MESSAGE naming what is skipped, when the build lacks the kind.
inline bool skip_unless_built(const std::string& kind, const std::string& what) {
  if (kind_built(kind)) return false;
  MESSAGE("skipped, attention kind not in this build: " << what << " (" << kind << ")");
  return true;
}

// The refusal of a token-by-token run on a model that cannot take them: it names the kinds of this
// build whose causal models step, linear_elu's and performer's.
inline std::string step_refusal() {
  std::string kinds;
  for (const char* kind : {"linear_elu", "performer"})
    if (kind_built(kind)) kinds += std::string(kinds.empty() ? "" : " or ") + kind;
  if (kinds.empty()) return "token-by-token runs are not defined for the attention kinds of this build";
  return "token-by-token runs need a causal model of " + kinds + " attention";
}

}  // namespace linfer::testing
