// SPDX-License-Identifier: Apache-2.0
// linfer-bench MODEL.lfm [--seq-len N] [--threads N] [--runs N] [--warmup N] [--profile]
//                        [--dense auto|xnnpack] [--pipeline auto|on|off] [--pipeline-rows N] [--max-isa ISA]
//                        [--fp16-arithmetic] [--sessions N] [--ids FILE] [--dump OUT.npy]
// --max-isa caps the session's kernels (the session option max_isa): the dense kernels and the
// Highway kernels (x86: avx2 and avxvnni run Highway's AVX2 target, sse4 its SSE4 with portable
// dense kernels, generic everything portable).
// --fp16-arithmetic sets the session option fp16_arithmetic: f16 layers with fp16 multiply-adds
// where the CPU has them (ARMv8.2 FP16), ignored elsewhere (the printed kernels say which ran).
// --sessions N creates N sessions on the one model, runs each once, and reports the resident
// memory the model and the sessions add (RSS from /proc/self/status) and the creation time:
// the figures of docs/performance.md "Memory". Timed runs use the first session.
// Times run() on random token ids (fixed seed) after warm-up runs (default 1) and prints latency (median,
// min, max), effective GFLOP/s, arena bytes, packed weight bytes and peak RSS.
//   --ids FILE     the timed (and warm-up) runs use these token ids (whitespace-separated) instead of
//                  random ones: the first --seq-len of them (the file must have at least that many;
//                  without --seq-len, all of them)
//   --dump OUT.npy writes the output of the last timed run as a float32 [rows, cols] .npy file, so that
//                  the accuracy of a configuration is measured on the very runs that are timed
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"
#include "tool_util.h"

namespace {
const char kUsage[] =
    "usage: linfer-bench MODEL.lfm [--seq-len N] [--threads N] [--runs N] [--warmup N] [--profile]\n"
    "                    [--dense auto|xnnpack] [--pipeline auto|on|off] [--pipeline-rows N] [--max-isa ISA]\n"
    "                    [--fp16-arithmetic] [--sessions N] [--ids FILE] [--dump OUT.npy]\n"
    "                    (ISA: generic sse4 avx2 avxvnni avx512 avx512vnni avx512bf16 amx neon neondot neoni8mm)\n";

int fail(const std::string& m, int code = 1) {
  std::fprintf(stderr, "linfer-bench: %s\n", m.c_str());
  if (code == 2) std::fputs(kUsage, stderr);
  return code;
}
// Peak resident memory of this process: VmHWM from /proc (getrusage's ru_maxrss would include a
// parent's memory at fork, since Linux carries the high-water mark across exec).
// Current resident memory: VmRSS.
long rss_bytes() {
  long kb = -1;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    std::fclose(f);
  }
  return kb * 1024;
}
long peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f) {
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    std::fclose(f);
    if (kb >= 0) return kb * 1024;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss * 1024L;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, ids_path, dump_path;
  uint32_t seq_len = 0, threads = 1, runs = 10, warmup = 1, sessions = 1;
  bool profile = false;
  linfer::SessionOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seq-len" || a == "--threads" || a == "--runs" || a == "--warmup" || a == "--sessions" ||
        a == "--pipeline-rows") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      const char* v = argv[++i];
      uint32_t* dst = a == "--seq-len"         ? &seq_len
                      : a == "--threads"       ? &threads
                      : a == "--runs"          ? &runs
                      : a == "--warmup"        ? &warmup
                      : a == "--pipeline-rows" ? &options.pipeline_block_rows
                                               : &sessions;
      const uint32_t hi = a == "--threads" || a == "--sessions" ? 256
                          : a == "--runs" || a == "--warmup"    ? 100000
                          : a == "--pipeline-rows"              ? 4096
                                                                : (1u << 20);
      const uint32_t lo = a == "--warmup" ? 0 : 1;  // no warm-up: the first run is timed too
      if (!linfer::tools::parse_uint(v, lo, hi, dst))
        return fail(
            a + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'", 2);
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--fp16-arithmetic") {
      options.fp16_arithmetic = true;
    } else if (a == "--max-isa") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      const std::string v = argv[++i];
      // The cap holds for the dense and the Highway kernels (attention, compression, norms) alike.
      // In linfer_isa's order: names[k] is the value k.
      const char* names[] = {"auto", "generic", "avx2", "avxvnni",  "avx512", "avx512vnni",
                             "neon", "neondot", "sse4", "neoni8mm", "amx",    "avx512bf16"};
      const size_t count = sizeof names / sizeof names[0];
      size_t k = 0;
      while (k < count && v != names[k]) ++k;
      if (k == count) return fail("--max-isa does not take '" + v + "'", 2);
      options.max_isa = linfer_isa(k);
    } else if (a == "--ids" || a == "--dump") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      (a == "--ids" ? ids_path : dump_path) = argv[++i];
      if ((a == "--ids" ? ids_path : dump_path).empty()) return fail(a + " needs a non-empty path", 2);
    } else if (a == "--dense" || a == "--pipeline") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      const std::string v = argv[++i];
      if (a == "--dense" && (v == "auto" || v == "xnnpack"))
        options.dense_path = v == "auto" ? LINFER_DENSE_AUTO : LINFER_DENSE_XNNPACK;
      else if (a == "--pipeline" && (v == "auto" || v == "on" || v == "off"))
        options.row_pipeline = v == "auto" ? LINFER_PIPELINE_AUTO
                               : v == "on" ? LINFER_PIPELINE_ON
                                           : LINFER_PIPELINE_OFF;
      else
        return fail(a + " does not take '" + v + "'", 2);
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "'", 2);
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return fail("unexpected argument '" + a + "'", 2);
    }
  }
  if (model_path.empty()) return fail("no model given", 2);
  const long rss_start = rss_bytes();
  const auto load0 = std::chrono::steady_clock::now();
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(model_path, &model);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load0).count();
  const long rss_loaded = rss_bytes();
  if (!s) return fail(model_path + ": " + s.message());
  const linfer_model_info info = model.info();
  std::vector<int32_t> given_ids;
  if (!ids_path.empty()) {
    if (!info.vocab_size) return fail("--ids: the model takes embeddings, not token ids");
    linfer::err::Result<std::vector<int32_t>> read = linfer::tools::read_token_ids(ids_path);
    if (!read.ok()) return fail(read.status().message());
    given_ids = std::move(read.value());
    if (given_ids.empty()) return fail("--ids: '" + ids_path + "' has no token ids");
    if (seq_len == 0) {
      if (given_ids.size() > info.max_seq_len)
        return fail("--ids: '" + ids_path + "' has " + std::to_string(given_ids.size()) +
                    " ids, more than the model's n = " + std::to_string(info.max_seq_len) +
                    " (give --seq-len to use the first ones)");
      seq_len = uint32_t(given_ids.size());
    } else if (given_ids.size() < seq_len) {
      return fail("--ids: '" + ids_path + "' has " + std::to_string(given_ids.size()) + " ids, fewer than --seq-len " +
                  std::to_string(seq_len));
    }
    given_ids.resize(seq_len);
    for (size_t t = 0; t < given_ids.size(); ++t)
      if (given_ids[t] < 0 || uint32_t(given_ids[t]) >= info.vocab_size)
        return fail("--ids: id " + std::to_string(given_ids[t]) + " at position " + std::to_string(t) +
                    " is outside the vocabulary [0, " + std::to_string(info.vocab_size) + ")");
  }
  if (seq_len == 0) seq_len = info.max_seq_len;
  if (seq_len > info.max_seq_len)
    return fail("--seq-len " + std::to_string(seq_len) +
                " exceeds the model's n = " + std::to_string(info.max_seq_len));

  options.max_seq_len = seq_len;
  options.num_threads = threads;
  options.enable_profiling = profile;
  std::vector<linfer::Session> all(sessions);
  std::vector<double> create_ms;
  for (linfer::Session& each : all) {
    const auto c0 = std::chrono::steady_clock::now();
    s = linfer::Session::Create(model, options, &each);
    create_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count());
    if (!s) return fail(s.message());
  }
  linfer::Session& session = all[0];

  std::mt19937 rng(1234);
  std::vector<int32_t> ids(seq_len);
  std::vector<float> embeddings;
  if (!given_ids.empty()) {
    ids = given_ids;
  } else if (info.vocab_size) {
    for (int32_t& id : ids) id = int32_t(rng() % info.vocab_size);
  } else {
    embeddings.resize(size_t(seq_len) * info.dim);
    std::normal_distribution<float> nd;
    for (float& v : embeddings) v = nd(rng);
  }
  auto run_once = [&]() {
    return info.vocab_size ? session.Run(ids) : session.RunEmbeddings(embeddings.data(), seq_len);
  };
  for (size_t i = 1; i < all.size(); ++i) {  // every session computes once: its arena is touched
    s = info.vocab_size ? all[i].Run(ids) : all[i].RunEmbeddings(embeddings.data(), seq_len);
    if (!s) return fail(s.message());
  }
  for (uint32_t w = 0; w < warmup; ++w) {
    s = run_once();
    if (!s) return fail(s.message());
  }
  const long rss_sessions = rss_bytes();
  linfer_profile warm = session.profile();
  std::vector<double> ms;
  for (uint32_t r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    s = run_once();
    const auto t1 = std::chrono::steady_clock::now();
    if (!s) return fail(s.message());
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  const long peak_rss = peak_rss_bytes();
  if (!dump_path.empty()) {
    // The session's output is that of the last run, i.e. of the last timed run.
    const linfer::OutputView out = session.output();
    const std::vector<uint8_t> bytes = linfer::tools::npy_bytes(out.data, {out.rows, out.cols});
    const linfer::err::Status written = linfer::tools::write_file_atomic(dump_path, bytes.data(), bytes.size());
    if (!written.ok()) return fail(written.message());
  }
  std::printf("model: %s (%s, %u layers, dim %u, %u heads, ff %u, n=%u, k=%u, %s weights)\n", model_path.c_str(),
              info.attention_kind, info.num_layers, info.dim, info.num_heads, info.ff_dim, info.max_seq_len,
              info.proj_len, info.weight_dtype);
  std::printf("seq_len: %u, threads: %u, runs: %u\n", seq_len, threads, runs);
  std::printf("session: %s\n", session.describe().c_str());
  if (!ids_path.empty()) std::printf("ids: %s (first %u)\n", ids_path.c_str(), seq_len);
  if (!dump_path.empty()) {
    const linfer::OutputView out = session.output();
    std::printf("dump: %s (float32 [%zu, %zu], output of the last timed run)\n", dump_path.c_str(), out.rows, out.cols);
  }
  std::printf("latency_ms: median %.3f, min %.3f, max %.3f\n", median, ms.front(), ms.back());
  std::printf("gflops: %.2f\n", double(linfer_model_flops(model.get(), seq_len)) / (median * 1e6));
  std::printf("arena_bytes: %zu\npacked_weight_bytes: %zu\npeak_rss_bytes: %ld\n", session.arena_bytes(),
              session.packed_weight_bytes(), peak_rss);
  size_t arenas = 0, packed = 0;
  for (const linfer::Session& each : all) arenas += each.arena_bytes(), packed += each.packed_weight_bytes();
  std::printf("load_ms: %.2f\ncreate_ms: first %.2f, max %.2f\n", load_ms, create_ms.front(),
              *std::max_element(create_ms.begin(), create_ms.end()));
  std::printf(
      "memory: format version %u, weights %llu bytes, %u sessions, arenas %zu bytes, "
      "session-owned weights %zu bytes, rss added by load %ld bytes, by load and sessions %ld bytes\n",
      info.format_version, (unsigned long long)info.resident_weight_bytes, sessions, arenas, packed,
      rss_loaded - rss_start, rss_sessions - rss_start);
  if (profile) {
    // Mean per run over the timed runs; profiling adds a clock read around each operator.
    const linfer_profile p = session.profile();
    double total = 0;
    for (int k = 0; k < LINFER_OP_KIND_COUNT; ++k) total += p.milliseconds[k] - warm.milliseconds[k];
    std::printf("profile (mean ms per run, share of profiled time):\n");
    for (int k = 0; k < LINFER_OP_KIND_COUNT; ++k) {
      const double ms = (p.milliseconds[k] - warm.milliseconds[k]) / runs;
      std::printf("  %-12s %9.3f  %5.1f%%\n", linfer_op_kind_name(linfer_op_kind(k)), ms,
                  total > 0 ? 100.0 * ms * runs / total : 0.0);
    }
  }
  return 0;
}
