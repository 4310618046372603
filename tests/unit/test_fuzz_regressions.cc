// SPDX-License-Identifier: Apache-2.0
// Inputs found (or made) while fuzzing, run through the public entry points in every build (the
// fuzz targets only run in -DLINFER_FUZZ=ON builds): tests/fuzz/regressions/<target>/ must never
// crash, and the seed corpora must load. Plus the cases behind the fixes, built in code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "layouts.h"
#include "layouts/layout.h"
#include "linfer/linfer.h"
#include "linfer_generated.h"
#include "quantize.h"
#include "test_models.h"

using namespace linfer;
namespace fs = std::filesystem;

namespace {

const fs::path kFuzzDir = fs::path(LINFER_SOURCE_DIR) / "tests" / "fuzz";

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// What fuzz_lfm does with a model that loads: a session of at most 64 tokens and one run. Returns
// whether it ran (false: skipped as too large for a quick run, or the session was refused).
bool run_model(linfer_model* model) {
  linfer_model_info info{};
  info.struct_size = sizeof info;
  if (linfer_model_get_info(model, &info) != LINFER_OK) return false;
  linfer_session_options o = linfer_session_options_default();
  o.max_seq_len = std::min<uint32_t>(info.max_seq_len, 64);
  size_t arena = 0;
  if (linfer_session_arena_size(model, &o, &arena) != LINFER_OK) return false;
  if (arena > (size_t(64) << 20) || info.parameter_count > (uint64_t(4) << 20)) return false;
  linfer_session* s = nullptr;
  if (linfer_session_create(model, &o, &s) != LINFER_OK) {
    CHECK(std::strlen(linfer_last_error()) > 0);  // refused with a message
    return false;
  }
  const size_t T = o.max_seq_len;
  linfer_status st;
  if (info.vocab_size) {
    std::vector<int32_t> ids(T);
    for (size_t t = 0; t < T; ++t) ids[t] = int32_t(t % info.vocab_size);
    st = linfer_session_run(s, ids.data(), T);
  } else {
    std::vector<float> x(T * info.dim, 0.25f);
    st = linfer_session_run_embeddings(s, x.data(), T);
  }
  CHECK_MESSAGE(st == LINFER_OK, linfer_last_error());
  linfer_session_free(s);
  return st == LINFER_OK;
}

fb::ModelFile* root(std::vector<uint8_t>& b) { return fb::GetMutableModelFile(b.data()); }
fb::Tensor* q_weight(std::vector<uint8_t>& b) {
  return root(b)->mutable_layers()->GetMutableObject(0)->mutable_attention()->mutable_q()->mutable_weight();
}
fb::Tensor* fc1_weight(std::vector<uint8_t>& b) {
  return root(b)->mutable_layers()->GetMutableObject(0)->mutable_feed_forward()->mutable_fc1()->mutable_weight();
}

// Loads bytes that must be refused; returns the message.
std::string refused(const std::vector<uint8_t>& b) {
  linfer_model* m = nullptr;
  const linfer_status s = linfer_model_load_from_memory(b.data(), b.size(), &m);
  CHECK(s == LINFER_ERROR_INVALID_MODEL);
  CHECK(m == nullptr);
  if (m) linfer_model_free(m);
  return linfer_last_error();
}

std::vector<uint8_t> quantized_model(DType dtype, bool tied_lm_head) {
  EncoderConfig c = testing::small_config();
  if (tied_lm_head) c.head = HeadKind::LmLogits;
  auto o = testing::make_model(c);
  if (tied_lm_head) o.desc.head.out.weight.data = o.desc.token_embedding.data;  // [vocab, dim] both
  convert::QuantizedStore store;
  REQUIRE(convert::quantize_description(&o.desc, dtype, &store).ok());
  return testing::model_bytes(o.desc);
}

}  // namespace

TEST_CASE("fuzz regressions: .lfm inputs never crash the loader or a run") {
  const auto files = files_in(kFuzzDir / "regressions" / "fuzz_lfm");
  for (const fs::path& p : files) {
    CAPTURE(p.filename().string());
    const auto b = read_bytes(p);
    linfer_model* m = nullptr;
    if (linfer_model_load_from_memory(b.data(), b.size(), &m) == LINFER_OK) {
      run_model(m);
      linfer_model_free(m);
    } else {
      CHECK(std::strlen(linfer_last_error()) > 0);
    }
  }
}

TEST_CASE("fuzz seed corpus: every .lfm seed loads and runs") {
  const auto files = files_in(kFuzzDir / "corpus" / "fuzz_lfm");
  CHECK(files.size() >= 10);
  for (const fs::path& p : files) {
    CAPTURE(p.filename().string());
    const auto b = read_bytes(p);
    linfer_model* m = nullptr;
    REQUIRE_MESSAGE(linfer_model_load_from_memory(b.data(), b.size(), &m) == LINFER_OK, linfer_last_error());
    CHECK_MESSAGE(run_model(m), "a seed must run, not only load: " << linfer_last_error());
    linfer_model_free(m);
  }
}

TEST_CASE("fuzz regressions: checkpoint inputs never crash the readers") {
  for (const char* target : {"fuzz_safetensors", "fuzz_torch", "fuzz_convert"}) {
    for (const fs::path& p : files_in(kFuzzDir / "regressions" / target)) {
      CAPTURE(p.string());
      auto b = read_bytes(p);
      std::string config;
      const bool convert_input = std::string(target) == "fuzz_convert";
      if (convert_input && b.size() >= 2) {  // [u16 config length][config][checkpoint]
        const size_t skip = std::min(b.size(), 2 + (size_t(b[0]) | (size_t(b[1]) << 8)));
        config.assign(b.begin() + 2, b.begin() + std::ptrdiff_t(skip));
        b.erase(b.begin(), b.begin() + std::ptrdiff_t(skip));
      }
      auto read = convert::read_checkpoint_from_memory(b.data(), b.size());
      if (!read.ok()) {
        CHECK(!read.status().message().empty());
        continue;
      }
      const convert::Checkpoint& ck = *read.value();
      for (const auto& [name, t] : ck.tensors) {
        auto out = convert::tensor_to_f32(ck, t);
        if (!out.ok()) CHECK(!out.status().message().empty());
      }
      if (!convert_input) continue;
      // The layout mappers return a failure, they do not throw (a 4e9-layer config did).
      for (const linfer::convert::Layout* layout_entry : linfer::convert::registered_layouts()) {
        const char* layout = layout_entry->name;  // every layout, the Hugging Face ones included
        CHECK_NOTHROW((void)convert::map_checkpoint(layout, ck, config));
      }
    }
  }
}

TEST_CASE("loader: tensors that overlap without being the same tensor are refused") {
  SUBCASE("f32: fc1.weight placed on q.weight's bytes") {
    auto b = testing::model_bytes(testing::make_model(testing::small_config()).desc);
    fc1_weight(b)->mutate_offset(q_weight(b)->offset());
    const std::string msg = refused(b);
    CHECK_MESSAGE(msg.find("layers.0.feed_forward.fc1.weight") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("overlaps layers.0.attention.q.weight") != std::string::npos, msg);
  }
  SUBCASE("f16: the widened copy of the smaller tensor was handed to the larger one") {
    // Before the fix this loaded, and packing fc1 read past q's widened f32 copy (a heap overflow
    // inside XNNPACK, which is not instrumented, so ASan did not report it).
    auto b = quantized_model(DType::F16, false);
    fc1_weight(b)->mutate_offset(q_weight(b)->offset());
    CHECK(refused(b).find("overlaps") != std::string::npos);
  }
  SUBCASE("a tensor starting inside another one") {
    auto b = testing::model_bytes(testing::make_model(testing::small_config()).desc);
    q_weight(b)->mutate_offset(fc1_weight(b)->offset() + 64);
    CHECK(refused(b).find("overlaps") != std::string::npos);
  }
}

TEST_CASE("loader: exact aliases (tied weights) load; int8 aliases need the same scales") {
  auto b = quantized_model(DType::I8, true);
  fb::ModelFile* m = root(b);
  REQUIRE(m->token_embedding()->offset() == m->head()->out()->weight()->offset());
  linfer_model* model = nullptr;
  REQUIRE_MESSAGE(linfer_model_load_from_memory(b.data(), b.size(), &model) == LINFER_OK, linfer_last_error());
  run_model(model);
  linfer_model_free(model);

  auto* scales = root(b)->mutable_head()->mutable_out()->mutable_weight()->mutable_scales();
  scales->Mutate(0, scales->Get(0) * 2.0f);
  const std::string msg = refused(b);
  CHECK_MESSAGE(msg.find("scales") != std::string::npos, msg);
}
