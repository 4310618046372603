// SPDX-License-Identifier: Apache-2.0
// Outputs must not depend on the number of threads or on the run. Every golden model (all kinds
// and layouts) in f32, f16 and int8, and larger random models whose dim, attention width and
// feed-forward width all differ, on every execution path, at lengths that give each thread
// several row blocks: the outputs with 1, 2, 3 and 4 threads (1 and 3 under qemu) and of a
// repeated run must be bit-identical. (Issue 12: threads of the int8 row pipeline overwrote each
// other's quantized rows; every parity test passed because none of them split a model that way.)
// Also run under ThreadSanitizer in CI (scripts/test.sh).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "golden_cases.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/linfer.hpp"
#include "quantize.h"
#include "test_models.h"
#include "test_paths.h"

namespace {

using linfer::Model;
using linfer::Session;
using linfer::SessionOptions;

// Token ids (or embeddings, for models without a vocabulary) for a run of T rows.
struct Input {
  std::vector<int32_t> ids;
  std::vector<float> embeddings;
};

Input make_input(const linfer_model_info& info, uint32_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  Input in;
  if (info.vocab_size) {
    for (uint32_t t = 0; t < T; ++t) in.ids.push_back(int32_t(rng() % info.vocab_size));
  } else {
    std::normal_distribution<float> nd;
    in.embeddings.resize(size_t(T) * info.dim);
    for (float& v : in.embeddings) v = nd(rng);
  }
  return in;
}

std::vector<float> run(Session& s, const Input& in, uint32_t T) {
  const linfer::Status st = in.ids.empty() ? s.RunEmbeddings(in.embeddings.data(), T) : s.Run(in.ids);
  REQUIRE_MESSAGE(st.ok(), st.message());
  const linfer::OutputView o = s.output();
  return std::vector<float>(o.data, o.data + o.rows * o.cols);
}

// Counts bit-level differences (NaN never equals itself, so compare bytes).
size_t differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return a.size() + b.size();
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// Runs `model` on every path (and, for the row pipeline, with small blocks of 6 rows so that
// short inputs make several blocks per thread) at each length, with 1 to 4 threads, twice per
// session; every output must equal the first single-thread one bit for bit. A path whose plan
// (Session::describe: kernels, row pipeline and block, threads) equals an earlier one's runs the
// same code and is not run again: a model without the row pipeline runs all three as operators.
// Under an emulator (the cross builds' qemu runs, where this test is the longest) 1 and 3 threads:
// 3 splits the rows unevenly across several threads, which is what a kernel that depends on the
// split gets wrong; the native and ThreadSanitizer runs check 1, 2, 3 and 4.
#if defined(LINFER_TEST_EMULATED)
const std::vector<uint32_t> kThreadCounts = {1, 3};
#else
const std::vector<uint32_t> kThreadCounts = {1, 2, 3, 4};
#endif

void check_deterministic(const Model& model, const std::vector<uint32_t>& thread_counts) {
  const linfer_model_info info = model.info();
  const uint32_t n = info.max_seq_len;
  const std::vector<uint32_t> lengths = {n, n / 2 + 1};
  struct Variant {
    std::string path;
    uint32_t block_rows;
  };
  std::vector<Variant> variants = {{"pipeline", 0}, {"pipeline", 6}, {"operators", 0}};
  if (LINFER_WITH_XNNPACK) variants.push_back({"xnnpack", 0});
  std::set<std::string> plans;
  for (const Variant& v : variants) {
    CAPTURE(v.path);
    CAPTURE(v.block_rows);
    {
      SessionOptions opt = linfer::testing::with_path(SessionOptions(), v.path);
      opt.pipeline_block_rows = v.block_rows;
      Session s;
      REQUIRE(Session::Create(model, opt, &s).ok());
      if (!plans.insert(s.describe()).second) continue;
    }
    std::vector<std::vector<float>> reference;
    for (uint32_t threads : thread_counts) {
      CAPTURE(threads);
      SessionOptions opt = linfer::testing::with_path(SessionOptions(), v.path);
      opt.num_threads = threads;
      opt.pipeline_block_rows = v.block_rows;
      Session s;
      const linfer::Status st = Session::Create(model, opt, &s);
      REQUIRE_MESSAGE(st.ok(), st.message());
      for (size_t i = 0; i < lengths.size(); ++i) {
        CAPTURE(lengths[i]);
        const Input in = make_input(info, lengths[i], uint32_t(7 + i));
        for (int repeat = 0; repeat < 2; ++repeat) {
          std::vector<float> out = run(s, in, lengths[i]);
          if (reference.size() <= i) reference.push_back(out);
          CHECK_MESSAGE(differences(out, reference[i]) == 0, differences(out, reference[i])
                                                                 << " of " << out.size() << " values differ");
        }
      }
    }
  }
}

// make_model(c, seed) in `dtype`, loaded from memory (which the model copies).
Model in_memory_model(const linfer::EncoderConfig& c, uint32_t seed, linfer::DType dtype) {
  auto owned = linfer::testing::make_model(c, seed);
  linfer::convert::QuantizedStore store;
  if (dtype != linfer::DType::F32) REQUIRE(linfer::convert::quantize_description(&owned.desc, dtype, &store).ok());
  const std::vector<uint8_t> bytes = linfer::testing::model_bytes(owned.desc);
  Model model;
  REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());
  return model;
}

// check_deterministic on make_model(c, seed) in `dtype`, loaded from memory.
void check_deterministic_in_memory(const linfer::EncoderConfig& c, uint32_t seed, linfer::DType dtype,
                                   const std::vector<uint32_t>& thread_counts) {
  check_deterministic(in_memory_model(c, seed, dtype), thread_counts);
}

// A model of `kind` whose dim (40), attention width (48) and feed-forward width (136) all differ,
// for runs of up to max_seq_len rows.
linfer::EncoderConfig uneven_config(linfer::AttentionKind kind, uint32_t max_seq_len) {
  linfer::EncoderConfig c = linfer::testing::small_config();
  set_attention_kind(c, kind);
  c.vocab_size = 97;
  c.dim = 40;
  c.num_heads = 2;
  c.head_dim = 24;
  c.kv_heads = 2;
  c.ff_dim = 136;
  c.max_seq_len = max_seq_len;
  if (kind == linfer::AttentionKind::Linformer) linformer_fields(c).proj_len = 20;
  return c;
}

}  // namespace

TEST_CASE("every golden model gives bit-identical outputs across runs and thread counts") {
  size_t models = 0;
  for (const linfer::testing::GoldenCase& c : linfer::testing::golden_cases_for_this_build()) {
    for (const std::string dtype : {"f32", "f16", "int8"}) {
      CAPTURE(c.name);
      CAPTURE(dtype);
      const std::string lfm = linfer::testing::converted_golden(c, "--dtype " + dtype).lfm;
      Model model;
      const linfer::Status s = Model::Load(lfm, &model);
      REQUIRE_MESSAGE(s.ok(), s.message());
      check_deterministic(model, kThreadCounts);
      ++models;
    }
  }
  CHECK(linfer::testing::all_golden_cases().size() == 68);  // 10 Linformer option cases, 25 kinds, 33 layouts
  CHECK(models == 3 * linfer::testing::golden_cases_for_this_build().size());
}

TEST_CASE("larger models with dim, attention width and feed-forward width all different") {
  using namespace linfer;
  struct Kind {
    AttentionKind kind;
    CausalMode causal;
    ProjectionSharing sharing;
  };
  for (const Kind& k : {Kind{AttentionKind::Linformer, CausalMode::Bidirectional, ProjectionSharing::Headwise},
                        Kind{AttentionKind::Linformer, CausalMode::Bidirectional, ProjectionSharing::None},
                        Kind{AttentionKind::FullSoftmax, CausalMode::Bidirectional, ProjectionSharing::Headwise},
                        Kind{AttentionKind::LinearElu, CausalMode::Bidirectional, ProjectionSharing::Headwise},
                        Kind{AttentionKind::LinearElu, CausalMode::Causal, ProjectionSharing::Headwise},
                        Kind{AttentionKind::GiveTake, CausalMode::Bidirectional, ProjectionSharing::Headwise}}) {
    if (testing::skip_unless_built(testing::kind_name(k.kind), "in-memory model")) continue;
    EncoderConfig c = uneven_config(k.kind, 260);
    c.causal = k.causal;
    if (k.kind == AttentionKind::Linformer) linformer_fields(c).projection_sharing = k.sharing;
    c.num_global_tokens = k.kind == AttentionKind::GiveTake ? 5 : 0;
    c.head = HeadKind::LmLogits;
    for (DType dtype : {DType::F32, DType::F16, DType::I8}) {
      CAPTURE(to_string(k.kind));
      CAPTURE(to_string(dtype));
      check_deterministic_in_memory(c, 21, dtype, kThreadCounts);
    }
  }
}

// Dense layers and attention split into more chunks than threads once there are enough rows
// (parallel.h balanced_ranges: several chunks of at least 4 x 24 rows per thread), which the
// models above, of at most 260 rows, do not reach. An odd length of 401 rows (17 quanta: 4
// chunks at 2 and 3 threads, of different sizes; short enough for ThreadSanitizer and qemu) and
// one more thread than the machine's cores (a thread that waits for a core while the others take
// its chunks).
TEST_CASE("long odd inputs split into more chunks than threads, with more threads than cores") {
  using namespace linfer;
#if defined(LINFER_TEST_EMULATED)
  const std::vector<uint32_t> thread_counts = {1, 3};
#else
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<uint32_t> thread_counts = {1, 2, 3, std::max(4u, cores + 1)};
#endif
  for (AttentionKind kind : {AttentionKind::Linformer, AttentionKind::FullSoftmax}) {
    if (testing::skip_unless_built(testing::kind_name(kind), "in-memory model")) continue;
    EncoderConfig c = uneven_config(kind, 401);  // and 201, check_deterministic's second length
    c.head = HeadKind::LmLogits;
    for (DType dtype : {DType::F32, DType::I8}) {
      CAPTURE(to_string(kind));
      CAPTURE(to_string(dtype));
      check_deterministic_in_memory(c, 23, dtype, thread_counts);
    }
  }
}

// Layers over 1 MiB whose int8 kernel needs more rows per call than a thread's share of a short
// run (AMX's 128): such a run goes operator by operator, each dense layer's channels split
// between the threads, in the row pipeline's memory; its outputs are those of the operator path,
// bit for bit. (Elsewhere the same runs go in shares, and must match too.)
TEST_CASE("row pipeline: short runs below the int8 kernel's rows, as the operators") {
  using namespace linfer;
  for (AttentionKind kind : {AttentionKind::Linformer, AttentionKind::FullSoftmax}) {
    if (testing::skip_unless_built(testing::kind_name(kind), "in-memory model")) continue;
    EncoderConfig c = uneven_config(kind, 320);
    c.dim = 256, c.num_heads = c.kv_heads = 4, c.head_dim = 64, c.ff_dim = 2048;  // 1.2 MB of int8 per layer
    CAPTURE(testing::kind_name(kind));
    const Model model = in_memory_model(c, 31, DType::I8);
    SessionOptions rows_opt, operators_opt;
    rows_opt.num_threads = operators_opt.num_threads = 2;
    operators_opt.row_pipeline = LINFER_PIPELINE_OFF;
    Session rows, operators;
    REQUIRE(Session::Create(model, rows_opt, &rows).ok());
    REQUIRE(Session::Create(model, operators_opt, &operators).ok());
    const bool amx = rows.describe().find("dense_int8_amx") != std::string::npos;
    CHECK_MESSAGE((rows.describe().find("operator by operator below 256 rows") != std::string::npos) == amx,
                  rows.describe());
    for (uint32_t T : {1u, 50u, 255u, 256u, 320u}) {
      CAPTURE(T);
      const Input in = make_input(model.info(), T, T);
      CHECK(run(rows, in, T) == run(operators, in, T));
    }
  }
}

// The row pipeline runs a short input as one block per thread (up to 264 rows per thread; the
// session's max_seq_len over its threads, if less) and a longer one in blocks sized for the cache
// (here 96 rows; 144 where the int8 layers run on AMX): on both sides of that line (264 rows on 1 thread, 528 on 2), in
// f32 and int8, the outputs are those of the operator path, bit for bit.
TEST_CASE("row pipeline: short runs in one block per thread, longer ones in blocks, as the operators") {
  using namespace linfer;
  for (AttentionKind kind : {AttentionKind::Linformer, AttentionKind::FullSoftmax}) {
    if (testing::skip_unless_built(testing::kind_name(kind), "in-memory model")) continue;
    const EncoderConfig c = uneven_config(kind, 560);
    for (DType dtype : {DType::F32, DType::I8}) {
      CAPTURE(testing::kind_name(kind));
      CAPTURE(std::string(to_string(dtype)));
      const Model model = in_memory_model(c, 29, dtype);
      for (uint32_t threads : {1u, 2u}) {
        CAPTURE(threads);
        SessionOptions rows_opt, operators_opt;
        rows_opt.num_threads = operators_opt.num_threads = threads;
        operators_opt.row_pipeline = LINFER_PIPELINE_OFF;
        Session rows, operators;
        REQUIRE(Session::Create(model, rows_opt, &rows).ok());
        REQUIRE(Session::Create(model, operators_opt, &operators).ok());
        // 96 rows for the cache; AMX's int8 kernel asks for blocks of at least 144 (DenseKernel::min_rows).
        const bool amx = rows.describe().find("dense_int8_amx") != std::string::npos;
        const std::string blocks = std::string("row pipeline: on, ") + (amx ? "144" : "96") +
                                   " rows, or one block of up to 264 rows per thread";
        CHECK_MESSAGE(rows.describe().find(blocks) != std::string::npos, rows.describe());
        const uint32_t line = 264 * threads;
        for (uint32_t T : {1u, 50u, line, line + 1, 560u}) {
          CAPTURE(T);
          const Input in = make_input(model.info(), T, T);
          CHECK(run(rows, in, T) == run(operators, in, T));
        }
      }
    }
  }
}
