// SPDX-License-Identifier: Apache-2.0
// run() must not allocate: malloc and friends are replaced by counting wrappers around glibc's,
// and the count must not move across runs (after creation, which may allocate freely).
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <cstdlib>
#include <vector>

#include "golden_cases.h"
#include "linfer/linfer.hpp"
#include "test_paths.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);
extern "C" void __libc_free(void*);

static std::atomic<long> g_allocations{0};

extern "C" void* malloc(size_t n) {
  ++g_allocations;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  ++g_allocations;
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  ++g_allocations;
  return __libc_realloc(p, n);
}
extern "C" void free(void* p) { __libc_free(p); }
extern "C" int posix_memalign(void** out, size_t align, size_t n) {
  ++g_allocations;
  *out = __libc_memalign(align, n);
  return *out ? 0 : 12;
}
extern "C" void* aligned_alloc(size_t align, size_t n) {
  ++g_allocations;
  return __libc_memalign(align, n);
}

// Every golden model (all attention kinds and layouts) in f32, f16 and int8, with 1 and 2 threads,
// on the path ctest chose (LINFER_TEST_PATH), at lengths 1, 7, n/2+1 and n; token-by-token steps
// for the causal model.
TEST_CASE("run() performs no heap allocation, for every golden model, dtype and thread count") {
  size_t models = 0;
  for (const linfer::testing::GoldenCase& c : linfer::testing::golden_cases_for_this_build())
    for (const std::string dtype : {"f32", "f16", "int8"}) {
      CAPTURE(c.name);
      CAPTURE(dtype);
      const std::string lfm = linfer::testing::converted_golden(c, "--dtype " + dtype).lfm;
      linfer::Model model;
      const linfer::Status s = linfer::Model::Load(lfm, &model);
      REQUIRE_MESSAGE(s.ok(), s.message());
      const linfer_model_info info = model.info();
      const uint32_t n = info.max_seq_len;
      std::vector<int32_t> ids(n, 1);
      std::vector<float> embeddings(size_t(n) * info.dim, 0.5f);
      for (uint32_t threads : {1u, 2u}) {
        linfer::SessionOptions opt = linfer::testing::path_options();
        opt.num_threads = threads;
        linfer::Session session;
        REQUIRE(linfer::Session::Create(model, opt, &session).ok());
        auto run = [&](uint32_t T) {
          return info.vocab_size ? session.Run(ids.data(), T) : session.RunEmbeddings(embeddings.data(), T);
        };
        REQUIRE(run(n).ok());  // the first run outside the count too
        const long before = g_allocations.load();
        for (uint32_t T : {1u, 7u, n / 2 + 1, n}) {
          const linfer::Status st = run(T);
          if (!st.ok()) FAIL(st.message());
        }
        // Causal models step too, but not performer-pytorch's (its whole-input key stabiliser) nor
        // LSH models (a row's buckets and chunk depend on the whole input): they refuse
        // token-by-token runs (test_golden checks the refusals).
        if (c.name.find("causal") != std::string::npos && c.layout != "performer" &&
            c.name.find("_lsh_") == std::string::npos) {
          session.ResetState();
          for (int i = 0; i < 5; ++i) REQUIRE(session.Step(1).ok());
        }
        const long after = g_allocations.load();  // read before CHECK, which allocates itself
        CHECK(after == before);
      }
      ++models;
    }
  CHECK(linfer::testing::all_golden_cases().size() == 68);
  CHECK(models == 3 * linfer::testing::golden_cases_for_this_build().size());
}

// An int8 model with input scales (activation smoothing: the rows multiplied into the arena's
// smoothed rows before they are quantized) runs without allocating either.
TEST_CASE("int8 with input scales: run() performs no heap allocation") {
  linfer::Model model;
  const std::string path =
      std::string(LINFER_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_lfm/tokenizer_wordpiece_int8_smoothed.lfm";
  REQUIRE(linfer::Model::Load(path, &model).ok());
  const uint32_t n = model.info().max_seq_len;
  std::vector<int32_t> ids(n, 7);
  for (uint32_t threads : {1u, 2u}) {
    linfer::SessionOptions opt = linfer::testing::path_options();
    opt.num_threads = threads;
    linfer::Session session;
    REQUIRE(linfer::Session::Create(model, opt, &session).ok());
    REQUIRE(session.Run(ids.data(), n).ok());
    const long before = g_allocations.load();
    for (uint32_t T : {1u, 3u, n}) REQUIRE(session.Run(ids.data(), T).ok());
    const long after = g_allocations.load();
    CHECK(after == before);
  }
}

// linfer_tokenize allocates nothing either: the ids go to the caller's buffer, scratch is on the
// stack (the fuzz corpus's models with a tokenizer: WordPiece, byte-level BPE, SentencePiece,
// Hugging Face's Unigram).
TEST_CASE("linfer_tokenize performs no heap allocation") {
  const std::string text =
      "Unaffable, Caf\xC3\xA9 [MASK] hello world <|endoftext|> \xE4\xB8\xAD\xE4\xB8\xAD "
      "\xF0\x9F\x98\x80 \x80\xFF naive   it's 12345 e\xCC\x81  <mask> \xE2\x96\x81 " +
      std::string(300, 'a');
  for (const char* name : {"tokenizer_wordpiece_f32.lfm", "tokenizer_byte_bpe_f32.lfm",
                           "tokenizer_sentencepiece_f32.lfm", "tokenizer_unigram_f32.lfm"}) {
    linfer::Model model;
    const std::string path = std::string(LINFER_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_lfm/" + name;
    REQUIRE(linfer::Model::Load(path, &model).ok());
    std::vector<int32_t> ids(1024);
    size_t count = 0;
    const long before = g_allocations.load();
    for (int i = 0; i < 10; ++i)
      REQUIRE(linfer_tokenize(model.get(), text.data(), text.size(), ids.data(), ids.size(), &count) == LINFER_OK);
    CHECK(g_allocations.load() == before);
    CHECK(count > 10);
  }
}
