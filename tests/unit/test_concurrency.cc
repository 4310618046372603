// SPDX-License-Identifier: Apache-2.0
// One shared Model, several threads each with its own Session, all running at once: every output
// must equal the single-threaded one bit for bit, and the weights stay the model's. Run under
// ThreadSanitizer in CI (scripts/test.sh).
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "linfer/linfer.hpp"
#include "linfer/format/kinds/sliding_window.h"
#include "quantize.h"
#include "test_models.h"
#include "test_util.h"

using namespace linfer;

TEST_CASE("sessions on one shared model run concurrently with identical results") {
  for (AttentionKind kind :
       {AttentionKind::Linformer, AttentionKind::FullSoftmax, AttentionKind::LinearElu, AttentionKind::GiveTake}) {
    if (testing::skip_unless_built(testing::kind_name(kind), "in-memory model")) continue;
    EncoderConfig c = testing::small_config();
    set_attention_kind(c, kind);
    if (kind == AttentionKind::GiveTake) c.num_global_tokens = 3;
    auto owned = testing::make_model(c, 11);
    const std::vector<uint8_t> bytes = testing::model_bytes(owned.desc);
    Model model;
    REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());

    constexpr int kThreads = 4, kRuns = 8;
    auto input = [&](int thread, int run) {
      std::vector<int32_t> ids(1 + (thread * 7 + run * 5) % c.max_seq_len);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 13 + thread + run) % c.vocab_size);
      return ids;
    };
    // Reference outputs, one thread.
    std::vector<std::vector<float>> expected(kThreads * kRuns);
    {
      Session s;
      REQUIRE(Session::Create(model, SessionOptions(), &s).ok());
      for (int t = 0; t < kThreads; ++t)
        for (int r = 0; r < kRuns; ++r) {
          REQUIRE(s.Run(input(t, r)).ok());
          const OutputView o = s.output();
          expected[t * kRuns + r].assign(o.data, o.data + o.rows * o.cols);
        }
    }
    std::vector<std::vector<float>> got(kThreads * kRuns);
    std::vector<int> failures(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        Session s;
        if (!Session::Create(model, SessionOptions(), &s).ok()) {
          ++failures[t];
          return;
        }
        for (int r = 0; r < kRuns; ++r) {
          if (!s.Run(input(t, r)).ok()) ++failures[t];
          const OutputView o = s.output();
          got[t * kRuns + r].assign(o.data, o.data + o.rows * o.cols);
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) CHECK(failures[t] == 0);
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == expected[i]);
  }
}

// Weights live once: the model holds them, in their file dtype; sessions add their arenas only.
// Four sessions (two threads each) run at the same time on four threads; the weight bytes the
// API reports do not move, no session holds weights, and every output equals the lone session's.
TEST_CASE("four sessions on four threads share the model's weights: resident weight bytes do not grow") {
  for (DType dtype : {DType::F32, DType::F16, DType::I8}) {
    CAPTURE(to_string(dtype));
    EncoderConfig c = testing::small_config();
    c.dim = 48;
    c.ff_dim = 112;
    c.max_seq_len = 64;
    c.head = HeadKind::LmLogits;
    auto owned = testing::make_model(c, 5);
    convert::QuantizedStore store;
    if (dtype != DType::F32) REQUIRE(convert::quantize_description(&owned.desc, dtype, &store).ok());
    const std::vector<uint8_t> bytes = testing::model_bytes(owned.desc);
    Model model;
    REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());
    const uint64_t weights = model.info().resident_weight_bytes;
    CHECK(weights > 0);
    std::vector<int32_t> ids(c.max_seq_len);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 11 + 3) % c.vocab_size);
    std::vector<float> expected;
    {
      Session lone;
      REQUIRE(Session::Create(model, SessionOptions(), &lone).ok());
      REQUIRE(lone.Run(ids).ok());
      expected.assign(lone.output().data, lone.output().data + lone.output().rows * lone.output().cols);
    }
    constexpr int kSessions = 4;
    std::vector<Session> sessions(kSessions);
    SessionOptions opt;
    opt.num_threads = 2;
    for (Session& s : sessions) {
      REQUIRE(Session::Create(model, opt, &s).ok());
      CHECK(s.packed_weight_bytes() == 0);
      CHECK(model.info().resident_weight_bytes == weights);
    }
    std::vector<std::vector<float>> got(kSessions);
    std::vector<int> failures(kSessions, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kSessions; ++t)
      threads.emplace_back([&, t] {
        for (int r = 0; r < 3; ++r) failures[t] += !sessions[t].Run(ids).ok();
        const OutputView o = sessions[t].output();
        got[t].assign(o.data, o.data + o.rows * o.cols);
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kSessions; ++t) {
      CHECK(failures[t] == 0);
      CHECK(got[t] == expected);
    }
    CHECK(model.info().resident_weight_bytes == weights);
  }
}

#if LINFER_WITH_XNNPACK
TEST_CASE("the XNNPACK option packs a copy per session, and says so") {
  auto owned = testing::make_model(testing::small_config(), 5);
  const std::vector<uint8_t> bytes = testing::model_bytes(owned.desc);
  Model model;
  REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());
  SessionOptions opt;
  opt.dense_path = LINFER_DENSE_XNNPACK;
  Session a, b;
  REQUIRE(Session::Create(model, opt, &a).ok());
  REQUIRE(Session::Create(model, opt, &b).ok());
  // Every dense matrix of the model, in f32 (XNNPACK adds its bias and padding): at least that.
  const EncoderConfig& c = testing::small_config();
  const size_t HD = c.num_heads * c.head_dim, KV = c.kv_heads * c.head_dim;
  const size_t floats = c.num_layers * (2 * HD * c.dim + 2 * KV * c.dim + 2 * c.dim * c.ff_dim);
  CHECK(a.packed_weight_bytes() >= floats * sizeof(float));
  CHECK(b.packed_weight_bytes() == a.packed_weight_bytes());
  CHECK(a.describe().find("xnnpack") != std::string::npos);
}

TEST_CASE("the XNNPACK option counts the packed copies of a sliding window's global projections") {
  if (testing::skip_unless_built("sliding_window", "a sliding-window model")) return;
  EncoderConfig c = testing::small_config();
  set_attention_kind(c, AttentionKind::SlidingWindow);
  sliding_window_fields(c).window_radius = 3;
  sliding_window_fields(c).global_positions = 2;
  auto owned = testing::make_model(c, 5);
  auto packed_bytes = [&] {
    const std::vector<uint8_t> bytes = testing::model_bytes(owned.desc);
    Model model;
    REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());
    SessionOptions opt;
    opt.dense_path = LINFER_DENSE_XNNPACK;
    Session s;
    REQUIRE(Session::Create(model, opt, &s).ok());
    return s.packed_weight_bytes();
  };
  const size_t without = packed_bytes();
  for (LayerWeights& l : owned.desc.layers) {  // the global rows' own projections (the local ones' values)
    using T = SlidingWindowTensors;
    const std::pair<uint8_t, const LinearWeights*> globals[] = {
        {T::kQGlobalWeight, &l.q}, {T::kKGlobalWeight, &l.k}, {T::kVGlobalWeight, &l.v}};
    for (const auto& [at, local] : globals) {
      l.kind_tensors[at] = local->weight;
      l.kind_tensors[at + 1] = local->bias;
    }
  }
  const size_t HD = c.num_heads * c.head_dim, KV = c.kv_heads * c.head_dim;
  CHECK(packed_bytes() >= without + c.num_layers * (HD + 2 * KV) * c.dim * sizeof(float));
}
#else
TEST_CASE("without XNNPACK in the build, its option is refused with the build option that brings it") {
  auto owned = testing::make_model(testing::small_config(), 5);
  const std::vector<uint8_t> bytes = testing::model_bytes(owned.desc);
  Model model;
  REQUIRE(Model::LoadFromMemory(bytes.data(), bytes.size(), &model).ok());
  SessionOptions opt;
  opt.dense_path = LINFER_DENSE_XNNPACK;
  Session a;
  const Status s = Session::Create(model, opt, &a);
  CHECK(s.code() == LINFER_ERROR_UNSUPPORTED);
  CHECK(s.message().find("-DLINFER_WITH_XNNPACK=ON") != std::string::npos);
}
#endif
