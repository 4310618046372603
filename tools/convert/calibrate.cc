// SPDX-License-Identifier: Apache-2.0
#include "calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "dense_layer.h"  // (the runtime's calibration hook: rt::set_dense_input_hook)
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
  Observed observed;
  InputMaxima stats;
  for_each_weight(view, [&](const std::string& name, const WeightView& w) {
    if (!w.present() || !is_dense_weight(name) || w.shape.size() != 2) return;
    stats[name].assign(w.shape[1], 0.0f);
    observed.by_weight[w.data] = &stats[name];
  });

  // (The C API's failures: its code, and its message after "--calibrate: ".)
  auto failed = [](linfer_status code, const std::string& where) {
    return err::failure(code, "--calibrate: {}{}", where, linfer_last_error());
  };
  linfer_model* model = nullptr;
  if (linfer_status st = linfer_model_load_in_place(file.get(), size, &model); st != LINFER_OK) return failed(st, "");
  linfer_session_options options = linfer_session_options_default();
  options.num_threads = 1;  // (observe is not thread-safe)
  options.dense_path = LINFER_DENSE_AUTO;
  linfer_session* session = nullptr;
  if (linfer_status st = linfer_session_create(model, &options, &session); st != LINFER_OK) {
    status = failed(st, "");
    linfer_model_free(model);
    return status;
  }
  const size_t max_len = view.config.max_seq_len;
  std::vector<int32_t> ids;
  rt::set_dense_input_hook(session, {observe, &observed});
  for (size_t i = 0; i < lines.size() && status.ok(); ++i) {
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
    if (st != LINFER_OK) status = failed(st, err::message("line {}: ", i + 1));
  }
  linfer_session_free(session);
  linfer_model_free(model);
  if (!status.ok()) return status;
  return stats;
}

}  // namespace linfer::convert
