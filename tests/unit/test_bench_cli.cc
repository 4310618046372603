// SPDX-License-Identifier: Apache-2.0
// linfer-bench --ids FILE --dump OUT.npy: the timed runs use the given ids (the first --seq-len of
// them) and the dump is the output of the last timed run, bit for bit what linfer-run computes for
// the same ids (the runtime is deterministic across thread counts); bad inputs are refused.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tool_util.h"

namespace {

using linfer::testing::run_command;

const std::string kGolden = std::string(LINFER_SOURCE_DIR) + "/tests/golden/c01_pre_headwise_after";
const std::string kTmp = std::string(LINFER_TEST_TMP) + "/bench_cli";

using Npy = linfer::tools::NpyArray;

Npy load(const std::string& path) { return linfer::testing::required(linfer::tools::read_npy_f32(path)); }

std::string bench(const std::string& args, int* code) {
  return run_command(std::string(LINFER_BENCH_PATH) + " " + args, code);
}

// The golden model c01 (vocab 64, n = 32, hidden-state output of width 32), converted once per dtype.
std::string model(const std::string& dtype) {
  const std::string lfm = kTmp + "/c01_" + dtype + ".lfm";
  if (access(lfm.c_str(), F_OK) != 0) {
    std::system(("mkdir -p " + kTmp).c_str());
    int code = 0;
    const std::string out = run_command(
        std::string(LINFER_CONVERT_PATH) + " " + kGolden + "/checkpoint.safetensors -o " + lfm + " --dtype " + dtype,
        &code);
    REQUIRE_MESSAGE(code == 0, out);
  }
  return lfm;
}

std::vector<std::string> read_ids(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> ids;
  std::string t;
  while (f >> t) ids.push_back(t);
  return ids;
}

void write_ids(const std::string& path, const std::vector<std::string>& ids) {
  std::ofstream f(path);
  for (const std::string& t : ids) f << t << ' ';
  f << '\n';
}

}  // namespace

TEST_CASE("linfer-bench --dump is the output of the timed runs on the --ids, as linfer-run computes it") {
  for (const std::string dtype : {"f32", "int8"}) {
    CAPTURE(dtype);
    const std::string lfm = model(dtype);
    const std::string ids = kGolden + "/ids_32.txt";
    int code = 0;
    std::string out = bench(
        lfm + " --ids " + ids + " --threads 2 --runs 3 --warmup 1 --dump " + kTmp + "/bench_" + dtype + ".npy", &code);
    REQUIRE_MESSAGE(code == 0, out);
    // The suite parses these lines.
    CHECK(out.find("latency_ms: median ") != std::string::npos);
    CHECK(out.find("seq_len: 32, threads: 2, runs: 3") != std::string::npos);
    CHECK(out.find("dump: " + kTmp + "/bench_" + dtype + ".npy (float32 [32, 32]") != std::string::npos);
    out = run_command(
        std::string(LINFER_RUN_PATH) + " " + lfm + " --ids " + ids + " --dump " + kTmp + "/run_" + dtype + ".npy",
        &code);
    REQUIRE_MESSAGE(code == 0, out);
    const Npy b = load(kTmp + "/bench_" + dtype + ".npy");
    const Npy r = load(kTmp + "/run_" + dtype + ".npy");
    CHECK(b.shape == std::vector<size_t>{32, 32});
    CHECK(b.shape == r.shape);
    CHECK(b.data == r.data);

    // Other ids give another output: the dump follows the ids.
    std::vector<std::string> rev = read_ids(ids);
    REQUIRE(rev.size() == 32);
    std::vector<std::string> swapped(rev.rbegin(), rev.rend());
    write_ids(kTmp + "/ids_rev.txt", swapped);
    out = bench(lfm + " --ids " + kTmp + "/ids_rev.txt --runs 1 --dump " + kTmp + "/rev.npy", &code);
    REQUIRE_MESSAGE(code == 0, out);
    CHECK(load(kTmp + "/rev.npy").data != b.data);
  }
}

TEST_CASE("linfer-bench --ids with --seq-len uses the first --seq-len ids") {
  const std::string lfm = model("f32");
  const std::vector<std::string> all = read_ids(kGolden + "/ids_32.txt");
  write_ids(kTmp + "/ids_first7.txt", std::vector<std::string>(all.begin(), all.begin() + 7));
  int code = 0;
  std::string out = bench(
      lfm + " --ids " + kGolden + "/ids_32.txt --seq-len 7 --runs 2 --threads 2 --dump " + kTmp + "/first7_bench.npy",
      &code);
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(out.find("seq_len: 7,") != std::string::npos);
  out = run_command(std::string(LINFER_RUN_PATH) + " " + lfm + " --ids " + kTmp + "/ids_first7.txt --dump " + kTmp +
                        "/first7_run.npy",
                    &code);
  REQUIRE_MESSAGE(code == 0, out);
  const Npy b = load(kTmp + "/first7_bench.npy");
  CHECK(b.shape == std::vector<size_t>{7, 32});
  CHECK(b.data == load(kTmp + "/first7_run.npy").data);
}

TEST_CASE("linfer-bench --dump without --ids dumps the random-id run; the format is unchanged without either") {
  const std::string lfm = model("f32");
  int code = 0;
  std::string out = bench(lfm + " --seq-len 9 --runs 1 --dump " + kTmp + "/random.npy", &code);
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(load(kTmp + "/random.npy").shape == std::vector<size_t>{9, 32});
  out = bench(lfm + " --seq-len 9 --runs 1", &code);
  REQUIRE_MESSAGE(code == 0, out);
  CHECK(out.find("dump:") == std::string::npos);
  CHECK(out.find("ids:") == std::string::npos);
  for (const char* line :
       {"latency_ms: median ", "gflops: ", "arena_bytes: ", "packed_weight_bytes: ", "peak_rss_bytes: "})
    CHECK(out.find(line) != std::string::npos);
}

TEST_CASE("linfer-bench refuses bad --ids and --dump") {
  const std::string lfm = model("f32");
  std::system(("mkdir -p " + kTmp).c_str());
  {
    std::ofstream(kTmp + "/ids_bad_vocab.txt") << "1 2 64 3\n";
    std::ofstream(kTmp + "/ids_negative.txt") << "1 -2 3\n";
    std::ofstream(kTmp + "/ids_text.txt") << "1 2 x3\n";
    std::ofstream(kTmp + "/ids_empty.txt") << "\n";
    std::vector<std::string> many(33, "5");
    write_ids(kTmp + "/ids_33.txt", many);
  }
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const std::string never = kTmp + "/never.npy";
  const std::vector<Case> cases = {
      {"--ids " + kGolden + "/ids_7.txt --seq-len 8", 1, "has 7 ids, fewer than --seq-len 8"},
      {"--ids " + kTmp + "/ids_bad_vocab.txt", 1, "id 64 at position 2 is outside the vocabulary [0, 64)"},
      {"--ids " + kTmp + "/ids_negative.txt", 1, "id -2 at position 1 is outside the vocabulary"},
      {"--ids " + kTmp + "/ids_text.txt", 1, "is not an integer id"},
      {"--ids " + kTmp + "/ids_empty.txt", 1, "has no token ids"},
      {"--ids " + kTmp + "/ids_33.txt", 1, "has 33 ids, more than the model's n = 32"},
      {"--ids /nonexistent/ids.txt", 1, "cannot open"},
      {"--ids", 2, "--ids needs a value"},
      {"--dump", 2, "--dump needs a value"},
      {"--runs 1 --dump /nonexistent/dir/out.npy", 1, "/nonexistent/dir/out.npy"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    int code = 0;
    unlink(never.c_str());
    const bool own_dump = c.args.find("--dump") != std::string::npos;
    const std::string out = bench(lfm + " " + c.args + (c.code == 2 || own_dump ? "" : " --dump " + never), &code);
    CHECK(code == c.code);
    CHECK_MESSAGE(out.find(c.message) != std::string::npos, out);
    CHECK(access(never.c_str(), F_OK) != 0);
  }
  // The ids beyond --seq-len are not looked at (they are not part of the run).
  int code = 0;
  const std::string out = bench(lfm + " --ids " + kTmp + "/ids_bad_vocab.txt --seq-len 2 --runs 1", &code);
  CHECK_MESSAGE(code == 0, out);
}
