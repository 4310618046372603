// SPDX-License-Identifier: Apache-2.0
// One error vocabulary: Status and Result (linfer/types/status.h, shared by the kernels, the format,
// the runtime and the converter), and every kind of failure reaching the C API with its own code and the message of the
// place that failed: out of memory stays LINFER_ERROR_OUT_OF_MEMORY, also when a session's dense layers or its arena
// cannot be allocated.
#include <doctest/doctest.h>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "golden_cases.h"
#include "linfer/linfer.hpp"
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/types/status.h"
#include "test_models.h"
#include "test_util.h"

using namespace linfer;
using linfer::testing::make_model;
using linfer::testing::model_bytes;
using linfer::testing::small_config;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

Model load_model(const std::vector<uint8_t>& bytes) {
  Model m;
  Status s = Model::LoadFromMemory(bytes.data(), bytes.size(), &m);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return m;
}

// The process's address space in bytes (VmSize).
uint64_t address_space_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  return 0;
}

// One malloc arena for the whole process. A thread whose malloc finds the main arena busy gets an
// arena of its own, 64 MiB of address space reserved up front and grown in place; a child below
// the limit, out of room in the main arena, falls back on such an arena and succeeds. Threads of
// earlier test cases (sessions with workers) made one when the machine was busy, and the
// out-of-memory checks below then saw LINFER_OK.
#if defined(__GLIBC__)
[[maybe_unused]] const int kOneMallocArena = mallopt(M_ARENA_MAX, 1);
#endif

// What a forked child reports: "skip" (the address-space limit does not hold here, as under
// qemu-user, which ignores RLIMIT_AS), or the status code and linfer_last_error().
struct ChildReport {
  bool skipped = false;
  int code = -1;
  std::string message;
};

// Runs body in a child whose address space may grow by `headroom` bytes only. body returns a
// linfer_status and leaves linfer_last_error() set.
template <class Fn>
ChildReport with_address_space_limit(uint64_t headroom, Fn&& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    const uint64_t now = address_space_bytes();
    rlimit lim{rlim_t(now + headroom), rlim_t(now + headroom)};
    void* probe = nullptr;
    if (now == 0 || setrlimit(RLIMIT_AS, &lim) != 0 || (probe = std::malloc(size_t(headroom) + (64u << 20)))) {
      std::free(probe);
      out = "skip";
    } else {
      const linfer_status s = body();
      out = std::to_string(int(s)) + "\n" + linfer_last_error();
    }
    const ssize_t n = write(fds[1], out.data(), out.size());
    _exit(n == ssize_t(out.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(fds[0]);
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  REQUIRE_MESSAGE((WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0), "the child failed: ", got);
  ChildReport r;
  if (got == "skip") {
    r.skipped = true;
    return r;
  }
  const size_t nl = got.find('\n');
  REQUIRE(nl != std::string::npos);
  r.code = std::atoi(got.substr(0, nl).c_str());
  r.message = got.substr(nl + 1);
  return r;
}

}  // namespace

TEST_CASE("Status and Result: a code and the message of the place that failed") {
  const err::Status ok;
  CHECK(ok.ok());
  CHECK(ok.code() == LINFER_OK);
  CHECK(ok.message().empty());
  CHECK(err::invalid_argument("a").code() == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(err::invalid_model("b").code() == LINFER_ERROR_INVALID_MODEL);
  CHECK(err::unsupported("c").code() == LINFER_ERROR_UNSUPPORTED);
  CHECK(err::internal_error("d").message() == "d");
  const err::Status oom = err::out_of_memory("the session's arena", 1234);
  CHECK(oom.code() == LINFER_ERROR_OUT_OF_MEMORY);
  CHECK(oom.message() == "out of memory allocating 1234 bytes for the session's arena");

  // allocating(): a std::bad_alloc becomes out of memory, naming what and how many bytes.
  const err::Status thrown = err::allocating("the dense layers of 3 layers", 96, [] { throw std::bad_alloc(); });
  CHECK(thrown.code() == LINFER_ERROR_OUT_OF_MEMORY);
  CHECK(thrown.message() == "out of memory allocating 96 bytes for the dense layers of 3 layers");
  std::vector<int> v;
  CHECK(err::allocating("v", 40, [&] { v.resize(10); }).ok());
  CHECK(err::allocating("v", 0, [] { return err::unsupported("refused"); }).message() == "refused");

  err::Result<size_t> value = size_t(7);
  REQUIRE(value.ok());
  CHECK(value.value() == 7);
  err::Result<size_t> failed = err::invalid_argument("no");
  CHECK(!failed.ok());
  CHECK(failed.status().code() == LINFER_ERROR_INVALID_ARGUMENT);
  // A Result made from a success has no value: that is a bug, reported as one.
  err::Result<size_t> empty = err::Status();
  CHECK(empty.status().code() == LINFER_ERROR_INTERNAL);

  // The one formatter: "{}" for each argument; a failure's context goes before its message.
  const err::Status formatted =
      err::invalid_model("{} has shape {}, needs {} rows", "w", std::vector<uint32_t>{2, 3}, 4);
  CHECK(formatted.code() == LINFER_ERROR_INVALID_MODEL);
  CHECK(formatted.message() == "w has shape [2,3], needs 4 rows");
  CHECK(err::invalid_model("no {} here").message() == "no {} here");  // (no arguments: the text as it is)
  CHECK(err::failure(LINFER_ERROR_INVALID_ARGUMENT, "version {}", 9).message() == "version 9");
  // Signed numbers, and the extremes of each kind; kept() prints the same here (it matters on bare
  // metal, LINFER_TERSE_ERRORS, where only kept numbers are printed: tests/cortex_m).
  CHECK(err::message("{} {} {} {}", -1, 0, int8_t(-128), uint8_t(255)) == "-1 0 -128 255");
  CHECK(err::message("{} {}", INT64_MIN, UINT64_MAX) == "-9223372036854775808 18446744073709551615");
  CHECK(err::message("{}, {}", err::kept(-42), err::kept(size_t(7))) == "-42, 7");
  CHECK(err::invalid_argument("option {} is {}", "x", err::kept(-5)).message() == "option x is -5");
  CHECK(err::unsupported("{} bytes", err::kept(3)).code() == LINFER_ERROR_UNSUPPORTED);
  CHECK(err::internal_error("pool of {}", err::kept(2)).message() == "pool of 2");
  CHECK(err::Status(err::invalid_model("bad")).within("file: ").message() == "file: bad");
  CHECK(err::Status().within("file: ").message().empty());
}

// The format library's failures come with their codes, not as text for the runtime to classify.
TEST_CASE("the format's failures carry their codes") {
  auto o = make_model(small_config());
  std::vector<uint8_t> bytes;
  CHECK(write_lfm(o.desc, "test", {}, &bytes, true, kFormatVersion + 1).code() == LINFER_ERROR_INVALID_ARGUMENT);
  REQUIRE(write_lfm(o.desc, "test", {}, &bytes).ok());
  EncoderDescription parsed;
  LfmInfo info;
  const err::Status cut = parse_lfm(bytes.data(), 4, &parsed, &info);
  CHECK(cut.code() == LINFER_ERROR_INVALID_MODEL);
  CHECK(cut.message() == "file is too small to be a linfer model (4 bytes)");
  o.desc.config.dim = 0;
  const err::Status invalid = validate_description(o.desc);
  CHECK(invalid.code() == LINFER_ERROR_INVALID_MODEL);
  CHECK(invalid.message() == "invalid configuration: dim = 0 is out of range [1, 65536]");
}

TEST_CASE("every kind of failure reaches the C API with its code and its message") {
  // LINFER_ERROR_IO: the file.
  linfer_model* raw = nullptr;
  const std::string missing = std::string(LINFER_TEST_TMP) + "/no-such-model.lfm";
  CHECK(linfer_model_load(missing.c_str(), &raw) == LINFER_ERROR_IO);
  CHECK(std::string(linfer_last_error()).rfind("cannot open '" + missing + "'", 0) == 0);
  // LINFER_ERROR_INVALID_MODEL: its contents.
  const std::vector<uint8_t> garbage(256, 0x5a);
  CHECK(linfer_model_load_from_memory(garbage.data(), garbage.size(), &raw) == LINFER_ERROR_INVALID_MODEL);
  CHECK(!std::string(linfer_last_error()).empty());
  CHECK(raw == nullptr);

  auto o = make_model(small_config());
  Model m = load_model(model_bytes(o.desc));
  linfer_session* s = nullptr;
  // LINFER_ERROR_INVALID_ARGUMENT: options out of range, from the plan.
  linfer_session_options opt = linfer_session_options_default();
  opt.max_seq_len = 34;
  CHECK(linfer_session_create(m.get(), &opt, &s) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "max_seq_len 34 exceeds the model's n = 33");
  size_t bytes = 0;
  CHECK(linfer_session_arena_size(m.get(), &opt, &bytes) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "max_seq_len 34 exceeds the model's n = 33");
  // LINFER_ERROR_BUFFER_TOO_SMALL: a caller's arena.
  opt = linfer_session_options_default();
  REQUIRE(linfer_session_arena_size(m.get(), &opt, &bytes) == LINFER_OK);
  std::vector<uint8_t> arena(bytes);
  opt.arena = arena.data();
  opt.arena_size = bytes - 64;
  CHECK(linfer_session_create(m.get(), &opt, &s) == LINFER_ERROR_BUFFER_TOO_SMALL);
  CHECK(std::string(linfer_last_error()) ==
        "the arena is too small: " + std::to_string(bytes - 64) + " bytes given, " + std::to_string(bytes) + " needed");
  CHECK(s == nullptr);
  // LINFER_ERROR_UNSUPPORTED: an option this build left out (or, where XNNPACK is built, a session).
  opt = linfer_session_options_default();
  opt.dense_path = LINFER_DENSE_XNNPACK;
  const linfer_status xnn = linfer_session_create(m.get(), &opt, &s);
#if LINFER_WITH_XNNPACK
  CHECK(xnn == LINFER_OK);
  linfer_session_free(s);
  s = nullptr;
#else
  CHECK(xnn == LINFER_ERROR_UNSUPPORTED);
  CHECK(std::string(linfer_last_error()).find("-DLINFER_WITH_XNNPACK=ON") != std::string::npos);
#endif
  // Run-time inputs: LINFER_ERROR_INVALID_ARGUMENT with the session's message; a success clears it.
  opt = linfer_session_options_default();
  REQUIRE(linfer_session_create(m.get(), &opt, &s) == LINFER_OK);
  const int32_t ids[3] = {1, 40, 2};
  CHECK(linfer_session_run(s, ids, 3) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "token id 40 at position 1 is outside the vocabulary [0, 40)");
  CHECK(linfer_session_step(s, 1) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == linfer::testing::step_refusal());
  CHECK(linfer_session_run(s, ids, 1) == LINFER_OK);
  CHECK(std::string(linfer_last_error()).empty());
  linfer_session_free(s);
}

TEST_CASE("out of memory: an arena that cannot be allocated is LINFER_ERROR_OUT_OF_MEMORY, with its bytes") {
  if (kSanitized) {
    MESSAGE("skipped: sanitizers reserve shadow memory that an address-space limit breaks");
    return;
  }
  if (testing::skip_unless_built("full", "a full-attention model")) return;
  // A small file whose arena needs more than 4 GiB; the child may grow by 1 GiB only.
  auto o = make_model(linfer::testing::huge_arena_config());
  Model m = load_model(model_bytes(o.desc));
  size_t bytes = 0;
  const Status planned = Session::ArenaSize(m, SessionOptions(), &bytes);
  if (!planned.ok()) {  // 32-bit: refused by the plan, before any allocation
    CHECK(planned.code() == LINFER_ERROR_OUT_OF_MEMORY);
    return;
  }
  REQUIRE(uint64_t(bytes) > (uint64_t(1) << 32));
  const ChildReport r = with_address_space_limit(uint64_t(1) << 30, [&] {
    linfer_session* s = nullptr;
    const linfer_session_options opt = linfer_session_options_default();
    return linfer_session_create(m.get(), &opt, &s);
  });
  if (r.skipped) {
    MESSAGE("skipped: RLIMIT_AS does not hold here (an emulator?)");
    return;
  }
  CHECK(r.code == LINFER_ERROR_OUT_OF_MEMORY);
  CHECK(r.message == "out of memory allocating " + std::to_string(bytes) + " bytes for the session's arena");
}

TEST_CASE("out of memory while preparing the dense layers keeps its code (was LINFER_ERROR_INTERNAL)") {
#if !LINFER_WITH_XNNPACK
  MESSAGE("skipped: the own kernels read the model's weights in place; only XNNPACK allocates per layer");
#else
  if (kSanitized) {
    MESSAGE("skipped: sanitizers reserve shadow memory that an address-space limit breaks");
    return;
  }
  // XNNPACK packs its own f32 copy of each layer (and widens it into a temporary first): a 16 MiB
  // feed-forward matrix does not fit in 8 MiB more than the arena, which is small.
  auto cfg = small_config();
  cfg.dim = 512;
  cfg.num_heads = 8;
  cfg.kv_heads = 8;
  cfg.head_dim = 64;
  cfg.ff_dim = 8192;
  cfg.num_layers = 1;
  auto o = make_model(cfg);
  Model m = load_model(model_bytes(o.desc));
  linfer_session_options opt = linfer_session_options_default();
  opt.dense_path = LINFER_DENSE_XNNPACK;
  opt.max_seq_len = 8;
  size_t arena = 0;
  REQUIRE(linfer_session_arena_size(m.get(), &opt, &arena) == LINFER_OK);
  {  // XNNPACK initialised (once per process) before the limit
    linfer_session* s = nullptr;
    linfer_session_options small = opt;
    REQUIRE(linfer_session_create(m.get(), &small, &s) == LINFER_OK);
    linfer_session_free(s);
  }
  const ChildReport r = with_address_space_limit(arena + (8u << 20), [&] {
    linfer_session* s = nullptr;
    return linfer_session_create(m.get(), &opt, &s);
  });
  if (r.skipped) {
    MESSAGE("skipped: RLIMIT_AS does not hold here (an emulator?)");
    return;
  }
  CHECK(r.code == LINFER_ERROR_OUT_OF_MEMORY);
  CAPTURE(r.message);
  CHECK(r.message.rfind("out of memory allocating ", 0) == 0);
  CHECK(r.message.find(" bytes ") != std::string::npos);
  CHECK(r.message.find("XNNPACK") != std::string::npos);
#endif
}

// -DLINFER_ATTENTION_KINDS: a valid model of a kind the build left out is refused at load (file and
// memory) with LINFER_ERROR_UNSUPPORTED and one line naming the kind and the option; the kinds
// built load. One golden checkpoint per kind; as many refusals as kinds left out (none in the full
// build), so that a build without the check cannot pass.
TEST_CASE("a model of an attention kind this build left out is refused at load, naming the kind and the option") {
  std::map<std::string, testing::GoldenCase> one_per_kind;
  for (const testing::GoldenCase& c : testing::all_golden_cases()) one_per_kind.emplace(c.kind, c);
  REQUIRE(one_per_kind.size() == linfer::kAttentionKindCount);  // (every kind of the table)
  const std::string dir = std::string(LINFER_TEST_TMP) + "/kinds_built";
  std::system(("mkdir -p " + dir).c_str());
  size_t missing = 0, refused = 0;
  for (const auto& entry : one_per_kind) {
    const std::string& kind = entry.first;  // (not a structured binding: CAPTURE's lambda takes it)
    const testing::GoldenCase& c = entry.second;
    CAPTURE(kind);
    const bool built = testing::kind_built(kind);
    missing += !built;
    const std::string lfm = dir + "/" + kind + ".lfm";
    int code = 0;
    const std::string out = testing::convert_golden(c, lfm, "", &code);  // (the converter has every kind)
    REQUIRE_MESSAGE(code == 0, out);
    std::ifstream f(lfm, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (bool from_memory : {false, true}) {
      CAPTURE(from_memory);
      linfer_model* m = nullptr;
      const linfer_status st = from_memory ? linfer_model_load_from_memory(bytes.data(), bytes.size(), &m)
                                           : linfer_model_load(lfm.c_str(), &m);
      if (built) {
        CHECK_MESSAGE(st == LINFER_OK, linfer_last_error());
      } else {
        CHECK(st == LINFER_ERROR_UNSUPPORTED);
        CHECK(m == nullptr);
        CHECK(std::string(linfer_last_error()) == "attention kind '" + kind +
                                                      "' is not in this build (configure with "
                                                      "-DLINFER_ATTENTION_KINDS including " +
                                                      kind + ")");
        refused += st == LINFER_ERROR_UNSUPPORTED && !from_memory;
      }
      linfer_model_free(m);
    }
  }
  const std::string built_list = LINFER_TEST_ATTENTION_KINDS;
  const size_t built_count = size_t(std::count(built_list.begin(), built_list.end(), ',')) + 1;
  CHECK(missing == linfer::kAttentionKindCount - built_count);
  CHECK(refused == missing);
}
