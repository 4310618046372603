// SPDX-License-Identifier: Apache-2.0
#include "calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#if LINFER_CALIBRATE_THREADS
#include <thread>
#endif

#include "dense_layer.h"  // (the runtime's calibration hook: rt::set_dense_input_hook)
#if LINFER_CALIBRATE_THREADS
#include "thread_pool.h"
#endif
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/linfer.h"
#include "linfer/types/aligned_alloc.h"

namespace linfer::convert {
namespace {

struct Observed {
  std::map<const void*, std::vector<float>*> by_weight;  // the loaded model's dense weights
};

void observe(void* context, const void* weight, const float* x, size_t rows, size_t inputs) {
  auto& o = *static_cast<Observed*>(context);
  auto it = o.by_weight.find(weight);
  if (it == o.by_weight.end()) return;
  std::vector<float>& m = *it->second;
  if (m.size() != inputs) return;
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < inputs; ++j) m[j] = std::max(m[j], std::fabs(x[r * inputs + j]));
}

struct Freer {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

err::Result<InputMaxima> calibrate_dense_inputs(const EncoderDescription& desc, const std::vector<std::string>& lines) {
  if (!desc.tokenizer.present) return err::invalid_argument("--calibrate needs the model's tokenizer (--tokenizer)");
  // The f32 model as a version 2 file in memory, loaded in place: its dense weights are then the
  // file's bytes, which name the slots (parse_lfm of the same bytes).
  EncoderDescription packed = desc;
  PanelStore panels;
  err::Status status = pack_dense_weights(&packed, &panels, /*move_tied_embedding=*/true);
  std::vector<uint8_t> bytes;
  if (status.ok()) status = write_lfm(packed, "linfer-convert calibration", {}, &bytes);
  if (!status.ok()) return std::move(status).within("--calibrate: ");
  const size_t size = bytes.size();
  std::unique_ptr<uint8_t, Freer> file(static_cast<uint8_t*>(aligned_block(kDataAlignment, size)));
  if (!file) return err::Status(LINFER_ERROR_OUT_OF_MEMORY, "--calibrate: out of memory for the f32 model");
  std::memcpy(file.get(), bytes.data(), size);
  bytes = std::vector<uint8_t>();
  EncoderDescription view;
  LfmInfo info;
  if (err::Status s = parse_lfm(file.get(), size, &view, &info); !s.ok()) return std::move(s).within("--calibrate: ");
  // (The C API's failures: its code, and its message after "--calibrate: ".)
  auto failed = [](linfer_status code, const std::string& where) {
    return err::failure(code, "--calibrate: {}{}", where, linfer_last_error());
  };
  linfer_model* model = nullptr;
  if (linfer_status st = linfer_model_load_in_place(file.get(), size, &model); st != LINFER_OK) return failed(st, "");

#if LINFER_CALIBRATE_THREADS
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
#else
  const size_t cores = 1;
#endif
  // The lines over the machine's cores (a 3,000-line file takes half a minute of one core for
  // all-MiniLM-L6-v2): each worker runs every workers-th line on a one-thread session of its own
  // (observe is not thread-safe) into maxima of its own, merged at the end. A maximum does not
  // depend on the order of the lines: the result is the same for any number of workers.
  const size_t workers = std::max<size_t>(1, std::min<size_t>({cores, 8, lines.size()}));
  struct Worker {
    InputMaxima stats;
    Observed observed;
    size_t failed_line = SIZE_MAX;  // the worker's first failing line, if any
    err::Status status;
  };
  std::vector<Worker> work(workers);
  const size_t max_len = view.config.max_seq_len;
  auto run_lines = [&](size_t w) {
    Worker& me = work[w];
    for_each_weight(view, [&](const std::string& name, const WeightView& wv) {
      if (!wv.present() || !is_dense_weight(name) || wv.shape.size() != 2) return;
      me.stats[name].assign(wv.shape[1], 0.0f);
      me.observed.by_weight[wv.data] = &me.stats[name];
    });
    linfer_session_options options = linfer_session_options_default();
    options.num_threads = 1;
    options.dense_path = LINFER_DENSE_AUTO;
    linfer_session* session = nullptr;
    if (linfer_status st = linfer_session_create(model, &options, &session); st != LINFER_OK) {
      me.failed_line = 0;
      me.status = failed(st, "");
      return;
    }
    rt::set_dense_input_hook(session, {observe, &me.observed});
    std::vector<int32_t> ids;
    for (size_t i = w; i < lines.size(); i += work.size()) {
      size_t count = 0;
      linfer_status st = linfer_tokenize(model, lines[i].data(), lines[i].size(), nullptr, 0, &count);
      if (st == LINFER_OK) {
        ids.resize(count);
        st = linfer_tokenize(model, lines[i].data(), lines[i].size(), ids.data(), ids.size(), &count);
      }
      if (st == LINFER_OK && ids.size() > max_len) {  // cut as linfer-embed cuts: the closing token kept
        ids[max_len - 1] = ids.back();
        ids.resize(max_len);
      }
      if (st == LINFER_OK && !ids.empty()) st = linfer_session_run(session, ids.data(), ids.size());
      if (st != LINFER_OK) {
        me.failed_line = i;
        me.status = failed(st, err::message("line {}: ", i + 1));
        break;
      }
    }
    linfer_session_free(session);
  };
  // Worker w's lines as chunk w of one region of the runtime's thread pool; on one thread when the
  // build has no threads or the system refuses one.
  bool ran = false;
#if LINFER_CALIBRATE_THREADS
  rt::ThreadPool pool;
  if (work.size() > 1 && pool.start(work.size(), /*yield=*/false).ok()) {
    auto run_chunk = [](void* context, size_t chunk, size_t) { (*static_cast<decltype(run_lines)*>(context))(chunk); };
    pool.run(run_chunk, &run_lines, work.size());
    ran = true;
  }
#endif
  if (!ran)
    for (size_t w = 0; w < work.size(); ++w) run_lines(w);
  linfer_model_free(model);
  // The first failing line's error, as one worker over all the lines would give.
  const Worker* first_failure = nullptr;
  for (const Worker& me : work)
    if (me.failed_line != SIZE_MAX && (!first_failure || me.failed_line < first_failure->failed_line))
      first_failure = &me;
  if (first_failure) return first_failure->status;
  InputMaxima stats = std::move(work[0].stats);
  for (size_t w = 1; w < work.size(); ++w)
    for (auto& [name, maxima] : stats) {
      const std::vector<float>& other = work[w].stats.at(name);
      for (size_t j = 0; j < maxima.size(); ++j) maxima[j] = std::max(maxima[j], other[j]);
    }
  return stats;
}

}  // namespace linfer::convert
