// SPDX-License-Identifier: Apache-2.0
// Golden parity: each checkpoint written by the PyTorch reference (tools/python/reference/make_golden.py) is
// converted with linfer-convert, run with the runtime at T in {1, 7, n/2+1, n}, and compared with
// PyTorch's float64 output: max |linfer - torch| <= 1e-4 * max |torch|.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"
#include "golden_cases.h"
#include "test_paths.h"
#include "test_util.h"
#include "tool_util.h"

namespace {

// Per path: ctest runs the three path variants of this binary at the same time.
const std::string kTmp =
    std::string(LINFER_TEST_TMP) + "/golden_" + linfer::testing::test_path() + linfer::testing::test_isa();

using linfer::testing::built_kinds_only;
using linfer::testing::convert_golden;
using linfer::testing::converted_golden;
using linfer::testing::golden_cases;
using linfer::testing::golden_layout_cases;
using linfer::testing::GoldenCase;
using linfer::testing::required;
using linfer::testing::run_command;

// Relative error of `got` against `want`, scaled by the output's largest magnitude.
double scaled_error(const float* got, const std::vector<float>& want) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return diff / scale;
}

// The lengths T for which `dir` holds out_<T>.npy, ascending.
std::vector<int> lengths_of(const std::string& dir) {
  std::vector<int> out;
  int code = 0;
  std::stringstream ss(run_command("ls " + dir + " | sed -n 's/^out_\\([0-9]*\\)\\.npy$/\\1/p' | sort -n", &code));
  int t;
  while (ss >> t) out.push_back(t);
  return out;
}

}  // namespace

// tests/golden: the Linformer options; tests/golden_kinds: full softmax, linear (elu+1), GiveTake,
// Performer, sliding window (Longformer), block sparse (BigBird), LSH (Reformer).
TEST_CASE("golden parity with PyTorch for every case, length and thread count") {
  std::system(("mkdir -p " + kTmp).c_str());
  // A forced lower target (LINFER_TEST_ISA) must really be what runs.
  const std::string forced = linfer::testing::force_test_isa();
  bool described = false;
  int cases_run = 0;
  size_t cases_built = 0;
  // Every case folder is listed (cases.txt is generated from them: a lost line would skip a case).
  for (const std::string folder : {"golden", "golden_kinds"}) {
    size_t folders = 0;
    for (const auto& entry : std::filesystem::directory_iterator(linfer::testing::golden_root(folder)))
      folders += entry.is_directory();
    CHECK(folders > 0);
    CHECK(golden_cases(folder).size() == folders);
  }
  for (const std::string folder : {"golden", "golden_kinds"})
    for (const GoldenCase& c : built_kinds_only(golden_cases(folder))) {
      ++cases_built;
      CAPTURE(c.name);
      if (!c.config.empty()) {  // a bare state_dict carries no configuration: refused without --config
        GoldenCase bare = c;
        bare.config.clear();
        const std::string lfm = kTmp + "/" + c.name + ".lfm";
        int code = 0;
        const std::string out = convert_golden(bare, lfm, "", &code);
        CHECK(code == 1);
        CHECK(out.find("--config") != std::string::npos);
        CHECK(std::ifstream(lfm).good() == false);
      }
      linfer::Model model;
      linfer::Status s = linfer::Model::Load(converted_golden(c, "").lfm, &model);
      REQUIRE_MESSAGE(s.ok(), s.message());
      const auto lengths = lengths_of(c.dir);
      REQUIRE(lengths.size() == 4);
      for (uint32_t threads : {1u, 2u}) {
        linfer::SessionOptions opt = linfer::testing::path_options();
        opt.num_threads = threads;
        linfer::Session session;
        s = linfer::Session::Create(model, opt, &session);
        REQUIRE_MESSAGE(s.ok(), s.message());
        if (!described) {
          MESSAGE(session.describe());
          described = true;
        }
        if (!forced.empty()) {
          CHECK(session.describe().find("highway " + forced) != std::string::npos);
          CHECK(session.describe().find(linfer::testing::test_isa() == "avx2" ? "_avx2" : "_generic") !=
                std::string::npos);
          CHECK(session.describe().find("avx512") == std::string::npos);
        }
        for (int T : lengths) {
          CAPTURE(T);
          CAPTURE(threads);
          const std::vector<int32_t> ids =
              required(linfer::tools::read_token_ids(c.dir + "/ids_" + std::to_string(T) + ".txt"));
          REQUIRE(int(ids.size()) == T);
          const linfer::tools::NpyArray expected =
              required(linfer::tools::read_npy_f32(c.dir + "/out_" + std::to_string(T) + ".npy"));
          const std::vector<float>& want = expected.data;
          const std::vector<size_t>& shape = expected.shape;
          s = session.Run(ids);
          REQUIRE_MESSAGE(s.ok(), s.message());
          const linfer::OutputView o = session.output();
          REQUIRE(shape.size() == 2);
          REQUIRE(o.rows == shape[0]);
          REQUIRE(o.cols == shape[1]);
          const double err = scaled_error(o.data, want);
          CHECK_MESSAGE(err <= 1e-4, "scaled error " << err);
        }
      }
      ++cases_run;
    }
  CHECK(cases_run == int(cases_built));  // every case of a kind this build has
}

// Checkpoints written by the project's re-creations of lucidrains, fairseq, tatp22, performer, reformer and Hugging
// Face Longformer and BigBird modules (tools/python/reference/upstream, tools/python/reference/make_layout_golden.py):
// same key names, same forward.
TEST_CASE("golden parity for the lucidrains, fairseq, tatp22, performer, reformer, longformer and bigbird layouts") {
  int cases_run = 0;
  CHECK(golden_layout_cases().size() == 33);
  const std::vector<GoldenCase> cases = built_kinds_only(golden_layout_cases());
  for (const GoldenCase& c : cases) {
    CAPTURE(c.name);
    const linfer::testing::ConvertedCase converted = converted_golden(c, "");
    const std::string& lfm = converted.lfm;
    const std::string& out = converted.output;
    CHECK(out.find("layout: " + c.layout) != std::string::npos);  // detected from the key names
    if (c.name.rfind("bigbird_cls", 0) == 0)  // BigBirdClassificationHead: hidden_act after dense, not tanh
      CHECK_MESSAGE(out.find(c.name == "bigbird_cls" ? "classifier activation gelu_tanh"
                                                     : "classifier activation relu") != std::string::npos,
                    out);
    linfer::Model model;
    linfer::Status s = linfer::Model::Load(lfm, &model);
    REQUIRE_MESSAGE(s.ok(), s.message());
    linfer::Session session;
    REQUIRE(linfer::Session::Create(model, linfer::testing::path_options(), &session).ok());
    int lengths = 0;
    for (int T : lengths_of(c.dir)) {
      CAPTURE(T);
      const std::vector<float> want =
          required(linfer::tools::read_npy_f32(c.dir + "/out_" + std::to_string(T) + ".npy")).data;
      if (c.embeddings) {
        const std::vector<float> emb =
            required(linfer::tools::read_npy_f32(c.dir + "/emb_" + std::to_string(T) + ".npy")).data;
        s = session.RunEmbeddings(emb.data(), size_t(T));
      } else {
        const std::vector<int32_t> ids =
            required(linfer::tools::read_token_ids(c.dir + "/ids_" + std::to_string(T) + ".txt"));
        s = session.Run(ids);
      }
      REQUIRE_MESSAGE(s.ok(), s.message());
      const linfer::OutputView o = session.output();
      REQUIRE(o.rows * o.cols == want.size());
      const double err = scaled_error(o.data, want);
      CHECK_MESSAGE(err <= 1e-4, "scaled error " << err);
      ++lengths;
    }
    CHECK(lengths == 4);
    ++cases_run;
  }
  CHECK(cases_run == int(cases.size()));
}

TEST_CASE("linfer-run --dump writes the same output as the API") {
  const GoldenCase c = golden_cases("golden").front();
  const std::string& dir = c.dir;
  const std::string lfm = converted_golden(c, "").lfm;
  int code = 0;
  const int T = lengths_of(dir).back();
  const std::string npy = kTmp + "/dump.npy";
  std::string out = run_command(std::string(LINFER_RUN_PATH) + " " + lfm + " --ids " + dir + "/ids_" +
                                    std::to_string(T) + ".txt --dump " + npy + " --threads 2",
                                &code);
  REQUIRE_MESSAGE(code == 0, out);
  const linfer::tools::NpyArray got = required(linfer::tools::read_npy_f32(npy));
  const linfer::tools::NpyArray want =
      required(linfer::tools::read_npy_f32(dir + "/out_" + std::to_string(T) + ".npy"));
  CHECK(got.shape == want.shape);
  CHECK(scaled_error(got.data.data(), want.data) <= 1e-4);
  // Without --dump it prints a summary.
  out = run_command(std::string(LINFER_RUN_PATH) + " " + lfm + " --ids " + dir + "/ids_7.txt", &code);
  CHECK(code == 0);
  CHECK(out.find("output: hidden states [7, 32]") != std::string::npos);
}

TEST_CASE("causal linear and performer attention token by token equal the whole-sequence run") {
  for (const char* name : {"k05_linear_causal_lm", "k12_performer_causal_lm", "k14_performer_relu_causal_rev",
                           "k15_performer_rotary_causal_lm"}) {
    CAPTURE(name);
    if (linfer::testing::skip_unless_built(
            std::string(name).find("linear") != std::string::npos ? "linear_elu" : "performer", name))
      continue;
    const std::string dir = std::string(LINFER_SOURCE_DIR) + "/tests/golden_kinds/" + name;
    const std::string lfm = kTmp + "/step.lfm";
    int code = 0;
    const char* file = std::ifstream(dir + "/checkpoint.pt").good() ? "/checkpoint.pt" : "/checkpoint.safetensors";
    const std::string out = run_command(std::string(LINFER_CONVERT_PATH) + " " + dir + file + " -o " + lfm, &code);
    REQUIRE_MESSAGE(code == 0, out);
    linfer::Model model;
    REQUIRE(linfer::Model::Load(lfm, &model).ok());
    const int T = lengths_of(dir).back();
    const std::vector<int32_t> ids =
        required(linfer::tools::read_token_ids(dir + "/ids_" + std::to_string(T) + ".txt"));
    const linfer::tools::NpyArray expected =
        required(linfer::tools::read_npy_f32(dir + "/out_" + std::to_string(T) + ".npy"));
    const std::vector<float>& want = expected.data;
    const std::vector<size_t>& shape = expected.shape;
    linfer::Session session;
    REQUIRE(linfer::Session::Create(model, linfer::testing::path_options(), &session).ok());
    for (int pass = 0; pass < 2; ++pass) {  // the second pass checks that reset starts over
      session.ResetState();
      for (int i = 0; i < T; ++i) {
        CAPTURE(i);
        REQUIRE(session.Step(ids[size_t(i)]).ok());
        const linfer::OutputView o = session.output();
        REQUIRE(o.rows == 1);
        REQUIRE(o.cols == shape[1]);
        std::vector<float> row(want.begin() + long(i) * long(o.cols), want.begin() + long(i + 1) * long(o.cols));
        CHECK(scaled_error(o.data, row) <= 1e-4);
      }
      const linfer::Status past_end = session.Step(ids[0]);
      CHECK(past_end.code() == LINFER_ERROR_INVALID_ARGUMENT);
      CHECK(past_end.message().find("maximum length") != std::string::npos);
    }
  }
  // Models that are not causal linear attention refuse to step.
  linfer::Model other;
  REQUIRE(linfer::Model::Load(converted_golden(golden_cases("golden").front(), "").lfm, &other).ok());
  linfer::Session s2;
  REQUIRE(linfer::Session::Create(other, linfer::SessionOptions(), &s2).ok());
  CHECK(s2.Step(1).message() == linfer::testing::step_refusal());
  // A causal performer-pytorch model keeps upstream's whole-input key stabiliser: no stepping.
  if (linfer::testing::skip_unless_built("performer", "performer_lm_rotary_causal") ||
      linfer::testing::skip_unless_built("lsh", "k24_lsh_causal_kv1_rev"))
    return;
  const std::string up = std::string(LINFER_SOURCE_DIR) + "/tests/golden_layouts/performer_lm_rotary_causal";
  int code = 0;
  const std::string out = run_command(std::string(LINFER_CONVERT_PATH) + " " + up + "/checkpoint.pt --config " + up +
                                          "/config.json -o " + kTmp + "/sequence.lfm",
                                      &code);
  REQUIRE_MESSAGE(code == 0, out);
  linfer::Model sequence;
  REQUIRE(linfer::Model::Load(kTmp + "/sequence.lfm", &sequence).ok());
  linfer::Session s3;
  REQUIRE(linfer::Session::Create(sequence, linfer::SessionOptions(), &s3).ok());
  const linfer::Status refused = s3.Step(1);
  CHECK(refused.code() == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(refused.message().find("key stabiliser spans the whole input") != std::string::npos);
  // Nor does a causal LSH model (Reformer): its rows depend on the whole input's hashing.
  const std::string lsh = std::string(LINFER_SOURCE_DIR) + "/tests/golden_kinds/k24_lsh_causal_kv1_rev";
  const std::string lsh_out =
      run_command(std::string(LINFER_CONVERT_PATH) + " " + lsh + "/checkpoint.pt -o " + kTmp + "/lsh.lfm", &code);
  REQUIRE_MESSAGE(code == 0, lsh_out);
  linfer::Model lsh_model;
  REQUIRE(linfer::Model::Load(kTmp + "/lsh.lfm", &lsh_model).ok());
  linfer::Session s4;
  REQUIRE(linfer::Session::Create(lsh_model, linfer::SessionOptions(), &s4).ok());
  const linfer::Status lsh_refused = s4.Step(1);
  CHECK(lsh_refused.code() == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(lsh_refused.message().find("not defined for lsh attention") != std::string::npos);
}
