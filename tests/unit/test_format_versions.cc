// SPDX-License-Identifier: Apache-2.0
// Files written by an earlier release keep loading and give the outputs they gave then: the
// format-version files of tests/format_versions/ (version_cases.h lists them; make_files.sh says
// how they were written) through the C API only, so that no change of the description, the
// writer or the test models can change what this test reads.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "linfer/linfer.h"
#include "test_util.h"
#include "version_cases.h"

namespace {

std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("files of format versions 1 to 5 load and give the outputs they gave when written") {
  const std::string dir = std::string(LINFER_SOURCE_DIR) + "/tests/format_versions/";
  std::set<uint32_t> versions;
  for (const linfer::testing::VersionCase& vc : linfer::testing::kVersionCases) {
    const std::string name = linfer::testing::version_case_name(vc);
    CAPTURE(name);
    versions.insert(vc.version);
    const std::vector<char> expected_bytes = read_all(dir + name + ".out");
    REQUIRE(expected_bytes.size() % sizeof(float) == 0);
    REQUIRE(!expected_bytes.empty());
    std::vector<float> expected(expected_bytes.size() / sizeof(float));
    std::copy(expected_bytes.begin(), expected_bytes.end(), reinterpret_cast<char*>(expected.data()));
    if (linfer::testing::skip_unless_built(vc.kind, name)) continue;

    linfer_model* model = nullptr;
    REQUIRE_MESSAGE(linfer_model_load((dir + name + ".lfm").c_str(), &model) == LINFER_OK, linfer_last_error());
    linfer_model_info info{};
    info.struct_size = sizeof info;
    REQUIRE(linfer_model_get_info(model, &info) == LINFER_OK);
    CHECK(info.format_version == vc.version);
    CHECK(std::string(info.attention_kind) == vc.kind);
    CHECK(std::string(info.weight_dtype) == vc.dtype);
    // k: the keys a sequence projection makes (the Linformer's), 0 for the kinds that have none.
    CHECK((info.proj_len > 0) == (vc.kind == "linformer"));
    CHECK(info.proj_len <= info.max_seq_len);
    // The CPU's best kernels, and the portable ones (as another CPU would run it).
    for (linfer_isa isa : {linfer_isa(0), LINFER_ISA_GENERIC}) {
      CAPTURE(int(isa));
      linfer_session_options options = linfer_session_options_default();
      options.num_threads = 1;
      if (isa) options.max_isa = isa;
      linfer_session* session = nullptr;
      REQUIRE_MESSAGE(linfer_session_create(model, &options, &session) == LINFER_OK, linfer_last_error());
      std::vector<float> got;
      for (size_t length : linfer::testing::version_case_lengths(info.max_seq_len)) {
        const std::vector<int32_t> ids = linfer::testing::version_case_ids(length, info.vocab_size);
        const float* data = nullptr;
        size_t rows = 0, cols = 0;
        REQUIRE(linfer_session_run(session, ids.data(), ids.size()) == LINFER_OK);
        REQUIRE(linfer_session_output(session, &data, &rows, &cols) == LINFER_OK);
        got.insert(got.end(), data, data + rows * cols);
      }
      linfer_session_free(session);

      REQUIRE(got.size() == expected.size());
      double worst = 0, scale = 0, dot = 0, gg = 0, ee = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(double(got[i]) - expected[i]));
        scale = std::max(scale, std::fabs(double(expected[i])));
        dot += double(got[i]) * expected[i];
        gg += double(got[i]) * got[i];
        ee += double(expected[i]) * expected[i];
      }
      if (vc.dtype == "int8") {
        // The same int8 arithmetic on other kernels: an activation rounded to the other side of a
        // step moves the outputs a little (int8 is judged by cosine: docs/accuracy.md).
        const double cosine = dot / std::sqrt(gg * ee);
        CHECK_MESSAGE(cosine >= 0.9999, "cosine " << cosine);
      } else {
        // f32 arithmetic (f16 weights are widened exactly): the project's f32 tolerance.
        CHECK_MESSAGE(worst <= 1e-4 * scale, "scaled error " << worst / scale);
      }
    }
    linfer_model_free(model);
  }
  CHECK(versions == std::set<uint32_t>{1, 2, 3, 4, 5});
}
