// SPDX-License-Identifier: Apache-2.0
// Sessions, the arena planner and input validation at run time.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "arena_plan.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/kinds/sliding_window.h"
#include "dense_layer.h"  // set_dense_input_hook
#include "linfer/format/panel.h"
#include "linfer/linfer.hpp"
#include "linfer/types/half.h"
#include "linfer/types/int8.h"
#include "test_models.h"
#include "test_util.h"

using namespace linfer;
using linfer::testing::make_model;
using linfer::testing::model_bytes;
using linfer::testing::small_config;

namespace {
Model load(const std::vector<uint8_t>& bytes) {
  Model m;
  Status s = Model::LoadFromMemory(bytes.data(), bytes.size(), &m);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return m;
}
std::vector<int32_t> ids_of(size_t n, uint32_t vocab) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = int32_t((i * 7 + 3) % vocab);
  return ids;
}
std::vector<float> run(Session& s, const std::vector<int32_t>& ids) {
  Status st = s.Run(ids);
  REQUIRE_MESSAGE(st.ok(), st.message());
  OutputView o = s.output();
  return std::vector<float>(o.data, o.data + o.rows * o.cols);
}
// Largest |got - want| over the largest |want| (outputs of two paths or thread counts).
double scaled_difference(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return diff / scale;
}
}  // namespace

TEST_CASE("arena plan: overlapping lifetimes never share bytes, disjoint ones may") {
  std::vector<ArenaRequest> r = {{1000, 0, 1}, {500, 1, 2}, {800, 2, 3}, {100, 0, 3}, {1200, 3, 3}};
  const uint64_t total = plan_arena(r);
  for (size_t i = 0; i < r.size(); ++i) {
    CHECK(r[i].offset % 64 == 0);
    CHECK(r[i].offset + r[i].bytes <= total);
    for (size_t j = i + 1; j < r.size(); ++j) {
      const bool overlap_time = r[i].first_step <= r[j].last_step && r[j].first_step <= r[i].last_step;
      const bool overlap_bytes =
          r[i].offset < r[j].offset + r[j].bytes + 16 && r[j].offset < r[i].offset + r[i].bytes + 16;
      CHECK_FALSE((overlap_time && overlap_bytes));
    }
  }
  uint64_t sum = 0;
  for (auto& x : r) sum += x.bytes;
  CHECK(total < sum);  // reuse happened
}

TEST_CASE("session: caller arena gives the same output as an owned one") {
  auto o = make_model(small_config());
  Model m = load(model_bytes(o.desc));
  SessionOptions opt;
  size_t bytes = 0;
  REQUIRE(Session::ArenaSize(m, opt, &bytes).ok());
  CHECK(bytes > 0);
  std::vector<uint8_t> arena(bytes);
  opt.arena = arena.data() + 1;  // deliberately misaligned: the session aligns inside
  opt.arena_size = bytes - 1;
  Session small;
  Status s = Session::Create(m, opt, &small);
  CHECK(s.code() == LINFER_ERROR_BUFFER_TOO_SMALL);
  CHECK(s.message().find("needed") != std::string::npos);
  opt.arena = arena.data();
  opt.arena_size = bytes;
  Session caller, owned;
  REQUIRE(Session::Create(m, opt, &caller).ok());
  REQUIRE(Session::Create(m, SessionOptions(), &owned).ok());
  const auto ids = ids_of(33, 40);
  CHECK(run(caller, ids) == run(owned, ids));
}

TEST_CASE("an activation the kernels do not fuse (tanh) runs once, whether rows or output channels are split") {
  // Causal attention: the first 5 rows of a 30-token run are the 5-token run's. 5 rows on one
  // thread split the output channels, 30 split the rows: both must apply tanh once.
  if (linfer::testing::skip_unless_built("linear_elu", "a causal linear-attention model")) return;
  EncoderConfig c = small_config();
  set_attention_kind(c, AttentionKind::LinearElu);
  c.causal = CausalMode::Causal;
  c.activation = Activation::Tanh;
  auto o = make_model(c);
  Model m = load(model_bytes(o.desc));
  for (linfer_row_pipeline pipeline : {LINFER_PIPELINE_OFF, LINFER_PIPELINE_ON}) {
    CAPTURE(int(pipeline));
    SessionOptions opt;
    opt.row_pipeline = pipeline;
    Session s;
    REQUIRE(Session::Create(m, opt, &s).ok());
    const auto ids = ids_of(30, 40);
    const std::vector<float> whole = run(s, ids), first = run(s, std::vector<int32_t>(ids.begin(), ids.begin() + 5));
    CHECK(scaled_difference(std::vector<float>(whole.begin(), whole.begin() + first.size()), first) <= 1e-5);
  }
}

TEST_CASE("format versions 1 and 2 load to the same model; version 1 is packed once, at load") {
  // Version 1 stores dense layers row-major: the loader packs them once and drops the file pages
  // of the originals; a page read again later (nothing should) still holds the same bytes.
  // Version 2 stores them in panels and is used in place. Same outputs, bit for bit.
  auto cfg = small_config();
  cfg.dim = 128;
  cfg.ff_dim = 512;  // 256 KiB feed-forward matrices: many whole pages to release
  auto o = make_model(cfg);
  std::vector<uint8_t> v1;
  REQUIRE(write_lfm(o.desc, "test", {}, &v1, true, 1).ok());
  PanelStore store;
  REQUIRE(pack_dense_weights(&o.desc, &store, true).ok());
  std::vector<uint8_t> v2;
  REQUIRE(write_lfm(o.desc, "test", {}, &v2, true, 2).ok());
  const std::string path = std::string(LINFER_TEST_TMP) + "/version1.lfm";
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(std::fwrite(v1.data(), 1, v1.size(), f) == v1.size());
  std::fclose(f);
  Model mapped1, copied2 = load(v2);
  REQUIRE(Model::Load(path, &mapped1).ok());
  CHECK(mapped1.info().format_version == 1);
  CHECK(copied2.info().format_version == 2);
  CHECK(mapped1.info().resident_weight_bytes == copied2.info().resident_weight_bytes);
  const auto ids = ids_of(29, cfg.vocab_size);
  Session first, second, reference;
  REQUIRE(Session::Create(mapped1, SessionOptions(), &first).ok());
  const auto a = run(first, ids);
  REQUIRE(Session::Create(mapped1, SessionOptions(), &second).ok());
  REQUIRE(Session::Create(copied2, SessionOptions(), &reference).ok());
  CHECK(run(second, ids) == a);
  CHECK(run(first, ids) == a);
  CHECK(run(reference, ids) == a);
  CHECK(first.packed_weight_bytes() == 0);  // sessions hold no weights of their own
  std::remove(path.c_str());
}

TEST_CASE("session: bad inputs fail with a clear error before computing") {
  auto o = make_model(small_config());
  Model m = load(model_bytes(o.desc));
  SessionOptions opt;
  opt.max_seq_len = 20;
  Session s;
  REQUIRE(Session::Create(m, opt, &s).ok());
  std::vector<int32_t> ids = ids_of(21, 40);
  Status st = s.Run(ids);
  CHECK(st.code() == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(st.message() == "input length 21 is outside [1, 20]");
  st = s.Run(ids.data(), 0);
  CHECK(st.message() == "input length 0 is outside [1, 20]");
  ids.resize(5);
  ids[3] = 40;
  st = s.Run(ids);
  CHECK(st.message() == "token id 40 at position 3 is outside the vocabulary [0, 40)");
  ids[3] = -1;
  CHECK(s.Run(ids).code() == LINFER_ERROR_INVALID_ARGUMENT);
  opt.max_seq_len = 34;
  Session too_long;
  st = Session::Create(m, opt, &too_long);
  CHECK(st.message() == "max_seq_len 34 exceeds the model's n = 33");
}

TEST_CASE("32-bit limits: an arena or a file beyond the address space is refused, not cut short") {
  // Full attention over the longest n the format allows: a small file whose arena needs more
  // than 4 GiB. Planned in 64 bits; a 32-bit build must refuse it, not allocate it modulo 2^32.
  if (linfer::testing::skip_unless_built("full", "a full-attention model")) return;
  auto o = make_model(linfer::testing::huge_arena_config());
  Model m = load(model_bytes(o.desc));
  size_t bytes = 0;
  const Status st = Session::ArenaSize(m, SessionOptions(), &bytes);
  if (sizeof(size_t) < 8) {
    CHECK(st.code() == LINFER_ERROR_OUT_OF_MEMORY);
    CHECK(st.message().find("more than a 32-bit process can address") != std::string::npos);
    Session s;
    CHECK(Session::Create(m, SessionOptions(), &s).code() == LINFER_ERROR_OUT_OF_MEMORY);
  } else {
    REQUIRE(st.ok());
    CHECK(uint64_t(bytes) > (uint64_t(1) << 32));
  }
  // A 3 GiB file (sparse: no disk space): a 32-bit process cannot map it (with a 32-bit off_t
  // it cannot even stat it); a 64-bit one maps it and finds no model in it.
  const std::string path = std::string(LINFER_TEST_TMP) + "/huge.lfm";
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate64(fd, off64_t(3) << 30) == 0);
  ::close(fd);
  Model huge;
  const Status load_status = Model::Load(path, &huge);
  std::remove(path.c_str());
  if (sizeof(size_t) < 8) {
    CHECK(load_status.code() == LINFER_ERROR_IO);
    CHECK(load_status.message() == "'" + path + "' is too large for a 32-bit process to map");
  } else {
    CHECK(load_status.code() == LINFER_ERROR_INVALID_MODEL);
  }
}

TEST_CASE("session: same output for 1, 2 and 3 threads; repeated runs are bit-identical") {
  for (auto sharing : {ProjectionSharing::None, ProjectionSharing::Headwise, ProjectionSharing::KeyValue,
                       ProjectionSharing::Layerwise}) {
    EncoderConfig c = small_config();
    linformer_fields(c).projection_sharing = sharing;
    auto o = make_model(c, 7);
    Model m = load(model_bytes(o.desc));
    const auto ids = ids_of(33, 40);
    std::vector<float> base;
    for (uint32_t threads : {1u, 2u, 3u}) {
      SessionOptions opt;
      opt.num_threads = threads;
      Session s;
      REQUIRE(Session::Create(m, opt, &s).ok());
      auto a = run(s, ids), b = run(s, ids);
      CHECK(a == b);
      if (base.empty()) {
        base = a;
        continue;
      }
      CHECK(scaled_difference(a, base) < 1e-5);
    }
  }
}

TEST_CASE("model info; f16 and int8 weights stay in their dtype and run close to f32") {
  auto o = make_model(small_config());
  // Store q of layer 0 as f16 and k of layer 1 as int8; the output must stay close to f32.
  Model f32 = load(model_bytes(o.desc));
  auto& q = o.desc.layers[0].q.weight;
  std::vector<uint16_t> half(q.elements());
  const float* qf = static_cast<const float*>(q.data);
  for (size_t i = 0; i < half.size(); ++i) half[i] = float_to_half(qf[i]);
  q.dtype = DType::F16;
  q.data = half.data();
  auto& k = o.desc.layers[1].k.weight;
  const float* kf = static_cast<const float*>(k.data);
  const size_t rows = k.shape[0], cols = k.shape[1];
  std::vector<int8_t> q8(rows * cols);
  std::vector<float> scales(rows);
  for (size_t r = 0; r < rows; ++r) scales[r] = quantize_row_int8(kf + r * cols, cols, q8.data() + r * cols);
  k.dtype = DType::I8;
  k.data = q8.data();
  k.scales = scales.data();
  Model mixed = load(model_bytes(o.desc));
  const linfer_model_info info = mixed.info();
  CHECK(std::string(info.weight_dtype) == "mixed");
  CHECK(std::string(f32.info().weight_dtype) == "f32");
  // Nothing is widened: the two models differ by exactly the bytes of q and k in their dtypes.
  auto packed = [](DType t, const WeightView& w) { return panel_matrix_bytes(t, w.shape[0], w.shape[1], 1); };
  CHECK(f32.info().resident_weight_bytes - info.resident_weight_bytes ==
        packed(DType::F32, q) - packed(DType::F16, q) + packed(DType::F32, k) - packed(DType::I8, k));
  Session a, b;
  REQUIRE(Session::Create(f32, SessionOptions(), &a).ok());
  REQUIRE(Session::Create(mixed, SessionOptions(), &b).ok());
  const auto ids = ids_of(33, 40);
  const auto x = run(a, ids), y = run(b, ids);
  double dot = 0, nx = 0, ny = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    dot += double(x[i]) * y[i];
    nx += double(x[i]) * x[i];
    ny += double(y[i]) * y[i];
  }
  CHECK(dot / std::sqrt(nx * ny) > 0.999);
}

TEST_CASE("session options: struct_size versions and invalid values fail with a message") {
  auto o = make_model(small_config());
  Model m = load(model_bytes(o.desc));
  linfer_session* s = nullptr;
  // A caller that did not start from linfer_session_options_default().
  linfer_session_options zeroed{};
  CHECK(linfer_session_create(m.get(), &zeroed, &s) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()).find("struct_size") != std::string::npos);
  CHECK(s == nullptr);
  // An older caller: the struct ends before dense_path; the fields it lacks keep their defaults.
  linfer_session_options older = linfer_session_options_default();
  older.struct_size = offsetof(linfer_session_options, dense_path);
  older.dense_path = linfer_dense_path(77);  // beyond its struct_size: not read
  REQUIRE(linfer_session_create(m.get(), &older, &s) == LINFER_OK);
  linfer_session_free(s);
  // A newer caller with a field this library does not know: zero is fine, non-zero refused.
  struct Newer {
    linfer_session_options known;
    uint64_t future_field;
  } newer{linfer_session_options_default(), 0};
  newer.known.struct_size = sizeof(Newer);
  REQUIRE(linfer_session_create(m.get(), &newer.known, &s) == LINFER_OK);
  linfer_session_free(s);
  newer.future_field = 1;
  CHECK(linfer_session_create(m.get(), &newer.known, &s) == LINFER_ERROR_UNSUPPORTED);
  CHECK(std::string(linfer_last_error()).find("does not know") != std::string::npos);
  // Values outside the enums.
  linfer_session_options bad = linfer_session_options_default();
  bad.dense_path = linfer_dense_path(9);
  CHECK(linfer_session_create(m.get(), &bad, &s) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "dense_path 9 is not a linfer_dense_path");
  bad = linfer_session_options_default();
  bad.row_pipeline = linfer_row_pipeline(3);
  CHECK(linfer_session_create(m.get(), &bad, &s) == LINFER_ERROR_INVALID_ARGUMENT);
  size_t bytes = 0;
  CHECK(linfer_session_arena_size(m.get(), &bad, &bytes) == LINFER_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("session memory, description and profile report what the session did") {
  auto o = make_model(small_config());
  Model m = load(model_bytes(o.desc));
  SessionOptions opt;
  opt.enable_profiling = true;
  opt.num_threads = 2;
  size_t planned = 0;
  REQUIRE(Session::ArenaSize(m, opt, &planned).ok());
  Session s;
  REQUIRE(Session::Create(m, opt, &s).ok());
  size_t arena = 0, packed = 1;
  REQUIRE(linfer_session_memory(s.get(), &arena, &packed) == LINFER_OK);
  CHECK(arena == planned);
  CHECK(packed == 0);  // the model's weights, read in place
  CHECK(linfer_session_memory(nullptr, &arena, &packed) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(linfer_session_memory(s.get(), nullptr, &packed) == LINFER_ERROR_INVALID_ARGUMENT);
  const std::string d = s.describe();
  CHECK(d.find("dense: f32 dense_f32_") != std::string::npos);
  CHECK(d.find("threads: 2") != std::string::npos);
  CHECK(std::string(linfer_session_describe(nullptr)).empty());

  // Nothing is profiled before a run; after three, every stage of this model has taken time and
  // the run count is 3; a reset starts over; a session without profiling reports zeros.
  linfer_profile p = s.profile();
  CHECK(p.runs == 0);
  const auto ids = ids_of(33, 40);
  for (int i = 0; i < 3; ++i) REQUIRE(s.Run(ids).ok());
  p = s.profile();
  CHECK(p.runs == 3);
  for (linfer_op_kind k :
       {LINFER_OP_EMBEDDING, LINFER_OP_NORM, LINFER_OP_DENSE, LINFER_OP_COMPRESS, LINFER_OP_ATTENTION}) {
    CAPTURE(linfer_op_kind_name(k));
    CHECK(p.milliseconds[k] > 0.0);
  }
  CHECK(std::string(linfer_op_kind_name(LINFER_OP_COMPRESS)) == "compress");
  CHECK(std::string(linfer_op_kind_name(linfer_op_kind(99))) == "unknown");
  linfer_session_profile_reset(s.get());
  p = s.profile();
  CHECK(p.runs == 0);
  for (int k = 0; k < LINFER_OP_KIND_COUNT; ++k) CHECK(p.milliseconds[k] == 0.0);
  Session quiet;
  REQUIRE(Session::Create(m, SessionOptions(), &quiet).ok());
  REQUIRE(quiet.Run(ids).ok());
  p = quiet.profile();
  CHECK(p.runs == 0);
  CHECK(p.milliseconds[LINFER_OP_DENSE] == 0.0);
}

// Sliding-window models without global rows run on the row pipeline: each block's rows see the
// keys of their neighbours in other blocks (blocks of 4 rows, radius 3) and match the operator
// path; with global rows (whose output needs every row's query first) the pipeline stays off.
TEST_CASE("row pipeline: a sliding window across blocks matches the operator path") {
  if (linfer::testing::skip_unless_built("sliding_window", "a sliding-window model")) return;
  EncoderConfig c = small_config();
  set_attention_kind(c, AttentionKind::SlidingWindow);
  sliding_window_fields(c).window_radius = 3;
  for (uint32_t global : {0u, 2u}) {
    CAPTURE(global);
    sliding_window_fields(c).global_positions = global;
    auto o = make_model(c);
    Model m = load(model_bytes(o.desc));
    SessionOptions off, on;
    off.row_pipeline = LINFER_PIPELINE_OFF;
    on.row_pipeline = LINFER_PIPELINE_AUTO;
    on.pipeline_block_rows = 4;
    on.num_threads = 2;
    Session operators, rows;
    REQUIRE(Session::Create(m, off, &operators).ok());
    REQUIRE(Session::Create(m, on, &rows).ok());
    CHECK(rows.describe().find(global ? "row pipeline: off" : "row pipeline: on, 4 rows") != std::string::npos);
    for (size_t T : {size_t(1), size_t(9), size_t(33)}) {
      CAPTURE(T);
      const auto ids = ids_of(T, c.vocab_size);
      CHECK(scaled_difference(run(rows, ids), run(operators, ids)) <= 1e-5);
    }
  }
}

// linfer-convert --calibrate reads the dense layers' inputs through a hook of its own session:
// other sessions, even of the same model, run as before and report nothing.
TEST_CASE("calibration hook: one session's dense inputs, not another's") {
  auto o = make_model(small_config(), 7);
  const std::vector<uint8_t> bytes = model_bytes(o.desc);
  linfer_model* model = nullptr;
  REQUIRE(linfer_model_load_from_memory(bytes.data(), bytes.size(), &model) == LINFER_OK);
  linfer_session_options options = linfer_session_options_default();
  options.num_threads = 1;
  linfer_session *hooked = nullptr, *other = nullptr;
  REQUIRE(linfer_session_create(model, &options, &hooked) == LINFER_OK);
  REQUIRE(linfer_session_create(model, &options, &other) == LINFER_OK);
  struct Seen {
    size_t calls = 0, rows = 0;
    bool inputs_match = true;
  } seen;
  rt::DenseInputHook hook;
  hook.context = &seen;
  hook.observe = [](void* context, const void* weight, const float* x, size_t rows, size_t inputs) {
    auto& s = *static_cast<Seen*>(context);
    ++s.calls;
    s.rows += rows;
    s.inputs_match = s.inputs_match && weight != nullptr && x != nullptr && (inputs == 24 || inputs == 40);
  };
  rt::set_dense_input_hook(hooked, hook);
  const auto ids = ids_of(9, 40);
  REQUIRE(linfer_session_run(other, ids.data(), ids.size()) == LINFER_OK);
  CHECK(seen.calls == 0);
  REQUIRE(linfer_session_run(hooked, ids.data(), ids.size()) == LINFER_OK);
  CHECK(seen.calls >= 2 * 6);     // q, k, v, out, fc1 and fc2 of both layers at least once
  CHECK(seen.rows == 2 * 6 * 9);  // 9 rows each (K and V: the compressed rows, k = 9 too)
  CHECK(seen.inputs_match);
  const size_t calls = seen.calls;
  rt::set_dense_input_hook(hooked, {});
  REQUIRE(linfer_session_run(hooked, ids.data(), ids.size()) == LINFER_OK);
  CHECK(seen.calls == calls);
  linfer_session_free(other);
  linfer_session_free(hooked);
  linfer_model_free(model);
}
