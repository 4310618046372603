// run() must not allocate: malloc and friends are replaced by counting wrappers around glibc's,
// and the count must not move across runs (after creation, which may allocate freely).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include "linfer/linfer.hpp"
#include "test_paths.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);
extern "C" void __libc_free(void*);

static std::atomic<long> g_allocations{0};

extern "C" void* malloc(size_t n) { ++g_allocations; return __libc_malloc(n); }
extern "C" void* calloc(size_t a, size_t b) { ++g_allocations; return __libc_calloc(a, b); }
extern "C" void* realloc(void* p, size_t n) { ++g_allocations; return __libc_realloc(p, n); }
extern "C" void free(void* p) { __libc_free(p); }
extern "C" int posix_memalign(void** out, size_t align, size_t n) {
  ++g_allocations;
  *out = __libc_memalign(align, n);
  return *out ? 0 : 12;
}
extern "C" void* aligned_alloc(size_t align, size_t n) { ++g_allocations; return __libc_memalign(align, n); }

TEST_CASE("run() performs no heap allocation, for every golden model and 1 or 2 threads") {
  const char* cases[] = {"c01_pre_headwise_after", "c02_post_none_before_sinus_lm",
                         "c03_rev_kv_offset_projbias", "c04_layerwise_before_nopos_cls_first",
                         "c06_post_kv_before_cls_mean_nobias"};
  for (const char* name : cases) {
    CAPTURE(name);
    const std::string lfm = std::string(LINFER_TEST_TMP) + "/no_alloc/" + name + ".lfm";
    linfer::Model model;
    linfer::Status s = linfer::Model::Load(lfm, &model);
    if (!s.ok()) {
      // The golden test converts these; convert here if it has not run yet.
      const std::string cmd = std::string(LINFER_CONVERT_PATH) + " " + LINFER_SOURCE_DIR +
                              "/tests/golden/" + name + "/checkpoint." +
                              (std::string(name).find("c01") == 0 || std::string(name).find("c03") == 0
                                   ? "safetensors" : "pt") +
                              " -o " + lfm + " > /dev/null";
      std::system(("mkdir -p " + std::string(LINFER_TEST_TMP) + "/no_alloc").c_str());
      REQUIRE(std::system(cmd.c_str()) == 0);
      s = linfer::Model::Load(lfm, &model);
    }
    REQUIRE_MESSAGE(s.ok(), s.message());
    for (uint32_t threads : {1u, 2u}) {
      linfer::SessionOptions opt = linfer::testing::path_options();
      opt.num_threads = threads;
      linfer::Session session;
      REQUIRE(linfer::Session::Create(model, opt, &session).ok());
      const uint32_t n = model.info().max_seq_len;
      std::vector<int32_t> ids(n, 1);
      linfer::Status first = session.Run(ids);  // first run outside the count too
      REQUIRE(first.ok());
      const long before = g_allocations.load();
      for (uint32_t T : {1u, 7u, n / 2 + 1, n}) {
        const linfer::Status st = session.Run(ids.data(), T);
        if (!st.ok()) FAIL(st.message());
      }
      const long after = g_allocations.load();
      CHECK(after == before);
    }
  }
}
