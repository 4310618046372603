// One shared Model, several threads each with its own Session, all running at once: every output
// must equal the single-threaded one bit for bit. Run under ThreadSanitizer in CI (scripts/test.sh).
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "linfer/linfer.hpp"
#include "test_models.h"

using namespace linfer;

TEST_CASE("sessions on one shared model run concurrently with identical results") {
  for (AttentionKind kind : {AttentionKind::Linformer, AttentionKind::FullSoftmax,
                            AttentionKind::LinearElu, AttentionKind::GiveTake}) {
    EncoderConfig c = testing::small_config();
    c.attention_kind = kind;
    if (kind != AttentionKind::Linformer) c.proj_len = 0;
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
