// The golden checkpoints of tests/golden (Linformer options), tests/golden_kinds (full, linear,
// GiveTake) and tests/golden_layouts (lucidrains, fairseq, tatp22, performer, longformer, bigbird), and how each is
// converted.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace linfer::testing {

struct GoldenCase {
  std::string name;        // the case's folder name
  std::string dir;         // absolute folder
  std::string checkpoint;  // file name inside dir
  std::string config;      // --config file inside dir, or "" when the checkpoint carries its own
  std::string layout;      // expected detected layout ("" when not checked)
  bool embeddings = false; // the model takes embeddings (emb_<T>.npy), not token ids
};

inline std::string golden_root(const std::string& folder) {
  return std::string(LINFER_SOURCE_DIR) + "/tests/" + folder;
}

// tests/golden and tests/golden_kinds: "name checkpoint" per line of cases.txt.
inline std::vector<GoldenCase> golden_cases(const std::string& folder) {
  std::vector<GoldenCase> out;
  const std::string root = golden_root(folder);
  std::ifstream f(root + "/cases.txt");
  std::string name, file;
  while (f >> name >> file) {
    GoldenCase c{name, root + "/" + name, file, "", "", false};
    // A bare state_dict carries no configuration (converted with --config).
    if (name.find("bare") != std::string::npos) c.config = "config.json";
    out.push_back(c);
  }
  return out;
}

// tests/golden_layouts/cases.tsv: case, layout, checkpoint, config ("-": none), input (ids|emb).
inline std::vector<GoldenCase> golden_layout_cases() {
  std::vector<GoldenCase> out;
  const std::string root = golden_root("golden_layouts");
  std::ifstream tsv(root + "/cases.tsv");
  std::string line;
  std::getline(tsv, line);  // header
  while (std::getline(tsv, line)) {
    std::stringstream ss(line);
    GoldenCase c;
    std::string input;
    std::getline(ss, c.name, '\t');
    std::getline(ss, c.layout, '\t');
    std::getline(ss, c.checkpoint, '\t');
    std::getline(ss, c.config, '\t');
    std::getline(ss, input, '\t');
    if (c.config == "-") c.config.clear();
    c.dir = root + "/" + c.name;
    c.embeddings = input == "emb";
    out.push_back(c);
  }
  return out;
}

// Every golden case of the three folders.
inline std::vector<GoldenCase> all_golden_cases() {
  std::vector<GoldenCase> out = golden_cases("golden");
  for (const GoldenCase& c : golden_cases("golden_kinds")) out.push_back(c);
  for (const GoldenCase& c : golden_layout_cases()) out.push_back(c);
  return out;
}

// Under an emulator (cross builds run their tests in qemu-user, 10-50x slower) the tests that
// walk every golden model in every dtype (determinism, no allocation) take every third one: what
// they check does not depend on the architecture beyond the kernels, which test_kernels covers
// in full there.
inline std::vector<GoldenCase> golden_cases_for_this_build() {
  std::vector<GoldenCase> all = all_golden_cases();
#if defined(LINFER_TEST_EMULATED)
  std::vector<GoldenCase> some;
  for (size_t i = 0; i < all.size(); i += 3) some.push_back(all[i]);
  return some;
#else
  return all;
#endif
}

// Converts a case with linfer-convert (extra: more arguments, e.g. "--dtype int8"). Returns the
// tool's output; *exit_code gets its status.
inline std::string convert_golden(const GoldenCase& c, const std::string& lfm, const std::string& extra,
                                  int* exit_code) {
  std::remove(lfm.c_str());
  return run_command(std::string(LINFER_CONVERT_PATH) + " " + c.dir + "/" + c.checkpoint + " -o " + lfm +
                         (c.config.empty() ? "" : " --config " + c.dir + "/" + c.config) +
                         (extra.empty() ? "" : " " + extra),
                     exit_code);
}

}  // namespace linfer::testing
