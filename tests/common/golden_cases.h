// SPDX-License-Identifier: Apache-2.0
// The golden checkpoints of tests/golden (the first kind's options), tests/golden_kinds (every
// kind's cases) and tests/golden_layouts (one folder per converter layout), and how each is
// converted.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_util.h"

namespace linfer::testing {

struct GoldenCase {
  std::string name;                // the case's folder name
  std::string dir;                 // absolute folder
  std::string checkpoint;          // file name inside dir
  std::string config;              // --config file inside dir, or "" when the checkpoint carries its own
  std::string layout;              // expected detected layout ("" when not checked)
  bool embeddings = false;         // the model takes embeddings (emb_<T>.npy), not token ids
  std::string kind = "linformer";  // attention kind, by its LINFER_ATTENTION_KINDS name
};

// A file's whole text ("" when it cannot be read).
inline std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// The kind of a case's checkpoint: its config.json's "attention_kind" where it names one, else
// the layout's (the converter detects it), else Linformer.
inline std::string golden_case_kind(const std::string& dir, const std::string& layout) {
  if (layout == "performer") return "performer";
  if (layout == "longformer") return "sliding_window";
  if (layout == "bigbird") return "block_sparse";
  if (layout == "reformer") return "lsh";
  const std::string s = file_text(dir + "/config.json"), key = "\"attention_kind\"";
  size_t at = s.find(key);
  if (at == std::string::npos) return "linformer";
  at = s.find('"', s.find(':', at) + 1);
  return s.substr(at + 1, s.find('"', at + 1) - at - 1);
}

// LINFER_GOLDEN_ROOT, when set, names a folder holding golden, golden_kinds and golden_layouts to
// test instead of the committed ones (scripts/regen-goldens.sh: freshly regenerated references).
inline std::string golden_root(const std::string& folder) {
  const char* root = std::getenv("LINFER_GOLDEN_ROOT");
  return (root && *root ? std::string(root) : std::string(LINFER_SOURCE_DIR) + "/tests") + "/" + folder;
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
    c.kind = golden_case_kind(c.dir, "");
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
    c.kind = golden_case_kind(c.dir, c.layout);
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

// The cases whose kind this build has; the others are skipped by name (a doctest MESSAGE in the
// running test case).
inline std::vector<GoldenCase> built_kinds_only(const std::vector<GoldenCase>& cases) {
  std::vector<GoldenCase> out;
  for (const GoldenCase& c : cases)
    if (!skip_unless_built(c.kind, c.name)) out.push_back(c);
  return out;
}

// The cases of the kinds built. Under an emulator (cross builds run their tests in qemu-user,
// 10-50x slower) the tests that walk every golden model in every dtype (determinism, no
// allocation) take every third one: what they check does not depend on the architecture beyond
// the kernels, which test_kernels covers in full there.
inline std::vector<GoldenCase> golden_cases_for_this_build() {
  std::vector<GoldenCase> all = built_kinds_only(all_golden_cases());
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

// A case converted once per converter build, shared by the tests that run the model: the file and
// what the converter printed. Under qemu-user each conversion is an emulated process of about
// 0.2 s, and the golden, determinism and no-allocation tests of a cross build converted the same
// models about 500 times. The folder is named after the converter binary's size and modification
// time (a rebuilt converter converts again); a file is written under a name of its own and then
// renamed, so tests running side by side never read half of one.
struct ConvertedCase {
  std::string lfm;
  std::string output;  // the converter's output when it converted the file
};

inline ConvertedCase converted_golden(const GoldenCase& c, const std::string& extra) {
  const std::string command = LINFER_CONVERT_PATH;  // an emulator and its arguments may come first
  const std::string binary = command.substr(command.find_last_of(' ') + 1);
  struct stat st {};
  REQUIRE_MESSAGE(stat(binary.c_str(), &st) == 0, "cannot stat the converter " << binary);
  const std::string dir = std::string(LINFER_TEST_TMP) + "/converted/" + std::to_string(st.st_size) + "-" +
                          std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  std::string key = c.name + "_" + extra + "_" + std::to_string(std::hash<std::string>()(c.dir));
  for (char& ch : key)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  ConvertedCase out{dir + "/" + key + ".lfm", ""};
  if (std::ifstream(out.lfm).good()) {
    out.output = file_text(out.lfm + ".txt");
    return out;
  }
  REQUIRE(std::system(("mkdir -p " + dir).c_str()) == 0);
  const std::string mine = dir + "/" + key + "." + std::to_string(getpid());
  int code = 0;
  out.output = convert_golden(c, mine + ".lfm", extra, &code);
  REQUIRE_MESSAGE(code == 0, out.output);
  std::ofstream(mine + ".txt") << out.output;
  REQUIRE(std::rename((mine + ".txt").c_str(), (out.lfm + ".txt").c_str()) == 0);
  REQUIRE(std::rename((mine + ".lfm").c_str(), out.lfm.c_str()) == 0);
  return out;
}

}  // namespace linfer::testing
