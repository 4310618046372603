// SPDX-License-Identifier: Apache-2.0
// Writes the format-version files of tests/format_versions/ (make_files.sh): tiny random models of
// several attention kinds, written as format version 1 (row-major), 2 (dense layers in panels),
// 3 (int8 dense layers with input scales), 4 (each attention kind's part in its own tables) and 5
// (int8 dense layers with f32 input channels),
// each with the outputs this runtime gives them. test_format_versions loads them with every later
// runtime and compares. A record of what one release wrote: a file that exists is never written
// again (versions 1 to 3 are the release before version 4's).
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "linfer/format/lfm.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/kinds/lsh.h"
#include "linfer/format/kinds/block_sparse.h"
#include "linfer/format/kinds/sliding_window.h"
#include "linfer/format/kinds/performer.h"
#include "linfer/format/panel.h"
#include "linfer/linfer.h"
#include "quantize.h"
#include "test_models.h"
#include "version_cases.h"

using namespace linfer;

namespace {

EncoderConfig tiny_config(AttentionKind kind) {
  EncoderConfig c;
  set_attention_kind(c, kind);
  c.vocab_size = 16;
  c.dim = 8;
  c.num_layers = 2;
  c.num_heads = 2;
  c.head_dim = 4;
  c.kv_heads = 2;
  c.ff_dim = 16;
  c.max_seq_len = 12;
  c.final_norm = true;
  switch (kind) {
    case AttentionKind::Linformer:
      linformer_fields(c).proj_len = 4;
      break;
    case AttentionKind::FullSoftmax:
      c.head = HeadKind::LmLogits;
      break;
    case AttentionKind::LinearElu:
      c.causal = CausalMode::Causal;
      break;
    case AttentionKind::GiveTake:
      c.num_global_tokens = 2;
      break;
    case AttentionKind::Performer:
      performer_fields(c).num_features = 8;
      c.head = HeadKind::Classifier;
      c.num_classes = 3;
      break;
    case AttentionKind::SlidingWindow:
      sliding_window_fields(c).window_radius = 2;
      sliding_window_fields(c).global_positions = 1;
      break;
    case AttentionKind::BlockSparse:
      block_sparse_fields(c).block_size = 3;
      block_sparse_fields(c).global_blocks = 1;
      block_sparse_fields(c).num_random_blocks = 1;
      break;
    case AttentionKind::Lsh:
      lsh_fields(c).bucket_size = 2;
      lsh_fields(c).num_hashes = 2;
      c.kv_heads = 1;
      break;
  }
  return c;
}

bool fail(const std::string& what) {
  std::fprintf(stderr, "write_files: %s\n", what.c_str());
  return false;
}

bool write_case(const testing::VersionCase& vc, const std::string& dir) {
  AttentionKind kind = AttentionKind::Linformer;
  for (size_t i = 0; i < kAttentionKindCount; ++i)
    if (vc.kind == kAttentionKindNames[i].name) kind = kAttentionKindNames[i].kind;
  testing::OwnedDescription o = testing::make_model(tiny_config(kind), 7);
  if (kind == AttentionKind::Performer)  // (make_model leaves the random features out)
    for (LayerWeights& l : o.desc.layers) {
      const EncoderConfig& c = o.desc.config;
      auto v = std::make_unique<std::vector<float>>(size_t(c.head_dim) * performer_fields(c).num_features);
      for (size_t i = 0; i < v->size(); ++i) (*v)[i] = float(int(i * 37 % 17) - 8) / 8.0f;
      WeightView& features = l.kind_tensors[PerformerTensors::kFeatures];
      features.shape = {c.head_dim, performer_fields(c).num_features};
      features.data = v->data();
      o.store.push_back(std::move(v));
    }
  convert::QuantizedStore quantized;
  PanelStore panels;
  if (vc.version == 3 || (vc.version >= 4 && vc.dtype == "int8")) {
    // input scales from made-up activation ranges: 1, 2 or 3 per column
    std::map<std::string, std::vector<float>> max_abs;
    for_each_weight(o.desc, [&](const std::string& name, const WeightView& w) {
      if (w.present() && w.shape.size() == 2) {
        std::vector<float> m(w.shape[1]);
        for (size_t j = 0; j < m.size(); ++j) m[j] = 1.0f + float(j % 3);
        if (vc.version >= 5) m[1] = m[4] = 10.0f;  // (fc2's two f32 input channels)
        max_abs[name] = m;
      }
    });
    if (convert::smooth_dense_weights(&o.desc, max_abs, 0.5f, &quantized) == 0) return fail("nothing smoothed");
    if (vc.version >= 5 && convert::keep_f32_inputs(&o.desc, max_abs, 2, &quantized) == 0)
      return fail("no f32 input channels");
  }
  const DType dtype = vc.dtype == "int8" ? DType::I8 : vc.dtype == "f16" ? DType::F16 : DType::F32;
  if (dtype != DType::F32)
    if (err::Status s = convert::quantize_description(&o.desc, dtype, &quantized); !s.ok()) return fail(s.message());
  if (vc.version > 1)
    if (err::Status s = pack_dense_weights(&o.desc, &panels, true); !s.ok()) return fail(s.message());
  std::vector<uint8_t> bytes;
  if (err::Status s = write_lfm(o.desc, "linfer tests/format_versions", {}, &bytes, true, vc.version); !s.ok())
    return fail(s.message());
  const std::string base = dir + "/" + testing::version_case_name(vc);
  std::ofstream(base + ".lfm", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());

  linfer_model* model = nullptr;
  linfer_session* session = nullptr;
  if (linfer_model_load((base + ".lfm").c_str(), &model) != LINFER_OK) return fail(linfer_last_error());
  linfer_model_info info{};
  info.struct_size = sizeof info;
  linfer_model_get_info(model, &info);
  if (info.format_version != vc.version) return fail(base + ": written as another version");
  linfer_session_options options = linfer_session_options_default();
  options.num_threads = 1;
  if (linfer_session_create(model, &options, &session) != LINFER_OK) return fail(linfer_last_error());
  std::vector<float> outputs;
  for (size_t length : testing::version_case_lengths(info.max_seq_len)) {
    const std::vector<int32_t> ids = testing::version_case_ids(length, info.vocab_size);
    const float* data = nullptr;
    size_t rows = 0, cols = 0;
    if (linfer_session_run(session, ids.data(), ids.size()) != LINFER_OK ||
        linfer_session_output(session, &data, &rows, &cols) != LINFER_OK)
      return fail(linfer_last_error());
    outputs.insert(outputs.end(), data, data + rows * cols);
  }
  linfer_session_free(session);
  linfer_model_free(model);
  std::ofstream(base + ".out", std::ios::binary)
      .write(reinterpret_cast<const char*>(outputs.data()), outputs.size() * sizeof(float));
  std::printf("%s.lfm: %zu bytes, %zu outputs\n", base.c_str(), bytes.size(), outputs.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: linfer_write_format_versions DIR\n");
    return 2;
  }
  for (const testing::VersionCase& vc : testing::kVersionCases) {
    const std::string base = std::string(argv[1]) + "/" + testing::version_case_name(vc);
    if (std::ifstream(base + ".lfm").good()) continue;  // (written by an earlier release: kept)
    if (!write_case(vc, argv[1])) return 1;
  }
  return 0;
}
