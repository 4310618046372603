// SPDX-License-Identifier: Apache-2.0
// linfer-convert CHECKPOINT -o MODEL.lfm [--config CONFIG.json] [--layout
// auto|lucidrains|fairseq|tatp22|performer|reformer|longformer|bigbird|bert|linfer]
//                [--dtype f32|f16|int8] [--format-version 1|2|3|4|5] [--tokenizer FILE]...
//                [--pooling auto|none|cls|mean] [--normalize]
//                [--calibrate TEXT_FILE [--smoothing-alpha A] [--int8-f32-channels N]]
// --tokenizer (repeatable): the model's tokenizer, stored in the file (docs/tokenizers.md).
// --pooling: the output is the pooled vector of the hidden states (a sentence embedding), L2-normalized
// with --normalize; auto (the default) reads sentence-transformers' modules.json beside --config.
// --calibrate (int8, with a tokenizer): activation smoothing from linfer's f32 inference on the
// file's lines (calibrate.h; docs/quantization.md); the file then needs format version 3 or later (the default, 4).
// --int8-f32-channels N (with --calibrate; default 2, 0 with --format-version 1 to 4): the N input
// channels of largest calibrated |x| of each second feed-forward layer kept in f32 beside its int8
// product (format version 5).
//
// checkpoint reader (no code execution) -> layout mapper -> canonical EncoderDescription ->
// validate -> .lfm writer. Output is written to a temporary file and renamed, so a failure never
// leaves a partial model behind.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/kinds/lsh.h"
#include "linfer/format/kinds/block_sparse.h"
#include "linfer/format/kinds/sliding_window.h"
#include "linfer/format/kinds/performer.h"
#include "checkpoint.h"
#include "layout.h"
#include "layouts.h"
#include "linfer/format/encoder.h"
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/linfer_version.h"
#include "quantize.h"
#include "sentence_transformers.h"
#include "tokenizers/tokenizer_source.h"
#include "tool_util.h"

namespace {

using linfer::convert::Checkpoint;
using linfer::convert::SourceTensor;

constexpr const char* kUsage =
    "usage: linfer-convert CHECKPOINT -o MODEL.lfm [--config CONFIG.json] "
    "[--layout auto|lucidrains|fairseq|tatp22|performer|reformer|longformer|bigbird|bert|linfer] [--dtype f32|f16|int8] [--format-version 1|2|3|4|5] [--tokenizer FILE]... "
    "[--pooling auto|none|cls|mean] [--normalize] [--calibrate TEXT_FILE [--smoothing-alpha A] "
    "[--int8-f32-channels N]]";

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "linfer-convert: %s\n", message.c_str());
  if (code == 2) std::fprintf(stderr, "%s\n", kUsage);
  return code;
}

int run(int argc, char** argv);

}  // namespace

// Every failure is one line and a non-zero exit, also when memory runs out on a hostile input.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}

namespace {

int run(int argc, char** argv) {
  // version "" or 5: 4 or 5 (f32 input channels); 2 or 3: the oldest of them that holds the model (3 with input
  // scales: lfm.h)
  std::string input, output, config_path, layout = "auto", dtype = "f32", version, pooling = "auto";
  std::string calibration_path, alpha_text = "0.5", f32_channels_text;
  bool normalize = false;
  std::vector<std::string> tokenizer_paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" || a == "--output" || a == "--config" || a == "--layout" || a == "--dtype" ||
        a == "--format-version" || a == "--tokenizer" || a == "--pooling" || a == "--calibrate" ||
        a == "--smoothing-alpha" || a == "--int8-f32-channels") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      const std::string v = argv[++i];
      if (a == "-o" || a == "--output")
        output = v;
      else if (a == "--config")
        config_path = v;
      else if (a == "--layout")
        layout = v;
      else if (a == "--dtype")
        dtype = v;
      else if (a == "--tokenizer")
        tokenizer_paths.push_back(v);
      else if (a == "--pooling")
        pooling = v;
      else if (a == "--calibrate")
        calibration_path = v;
      else if (a == "--smoothing-alpha")
        alpha_text = v;
      else if (a == "--int8-f32-channels")
        f32_channels_text = v;
      else
        version = v;
    } else if (a == "--normalize") {
      normalize = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "'", 2);
    } else if (input.empty()) {
      input = a;
    } else {
      return fail("unexpected argument '" + a + "'", 2);
    }
  }
  if (input.empty()) return fail("no checkpoint given", 2);
  if (output.empty()) return fail("no output given (-o MODEL.lfm)", 2);
  if (layout != "auto" && !linfer::convert::find_layout(layout))
    return fail("unknown layout '" + layout +
                    "' (auto, lucidrains, fairseq, tatp22, performer, reformer, longformer, bigbird, bert, linfer)",
                2);
  if (dtype != "f32" && dtype != "f16" && dtype != "int8")
    return fail("unknown dtype '" + dtype + "' (f32, f16, int8)", 2);
  if (pooling != "auto" && pooling != "none" && pooling != "cls" && pooling != "mean")
    return fail("unknown pooling '" + pooling + "' (auto, none, cls, mean)", 2);
  if (normalize && (pooling == "auto" || pooling == "none")) return fail("--normalize needs --pooling cls or mean", 2);
  if (!version.empty() && version != "1" && version != "2" && version != "3" && version != "4" && version != "5")
    return fail("unknown format version '" + version +
                    "' (1: row-major, 2: dense layers in panels, 3: and int8 input scales, 4: and each attention "
                    "kind's part in its own tables, 5: and int8 input channels kept in f32)",
                2);
  char* alpha_end = nullptr;
  const double alpha = std::strtod(alpha_text.c_str(), &alpha_end);
  if (alpha_text.empty() || *alpha_end != '\0' || !(alpha >= 0.0 && alpha <= 1.0))
    return fail("--smoothing-alpha '" + alpha_text + "' is not a number from 0 to 1", 2);
  if (!calibration_path.empty() && dtype != "int8") return fail("--calibrate is for --dtype int8", 2);
  // (By default 2, what all-MiniLM-L6-v2 needs for cosine >= 0.995 (docs/accuracy.md); none when an
  // older format version is asked for, which cannot hold them.)
  unsigned long f32_channels = version.empty() || version == "5" ? 2 : 0;
  if (!f32_channels_text.empty()) {
    char* end = nullptr;
    f32_channels = std::strtoul(f32_channels_text.c_str(), &end, 10);
    if (f32_channels_text[0] < '0' || f32_channels_text[0] > '9' || *end != '\0' ||
        f32_channels > linfer::Limits::kMaxF32Inputs)
      return fail("--int8-f32-channels '" + f32_channels_text + "' is not a number from 0 to " +
                      std::to_string(linfer::Limits::kMaxF32Inputs),
                  2);
    if (calibration_path.empty()) return fail("--int8-f32-channels needs --calibrate", 2);
  }
  std::vector<std::string> calibration_lines;
  if (!calibration_path.empty()) {  // (read first: a missing file fails before the conversion's work)
    std::vector<uint8_t> bytes;
    const std::string read_err = linfer::tools::read_file(calibration_path, &bytes);
    if (!read_err.empty()) return fail("--calibrate: " + read_err);
    std::string line;
    for (uint8_t b : bytes) {
      if (b != '\n') {
        line += char(b);
      } else {
        if (!line.empty()) calibration_lines.push_back(line);
        line.clear();
      }
    }
    if (!line.empty()) calibration_lines.push_back(line);
    if (calibration_lines.empty()) return fail("--calibrate: " + calibration_path + " has no text");
  }

  std::string err;
  std::unique_ptr<Checkpoint> ck = linfer::convert::read_checkpoint(input, &err);
  if (!ck) return fail(input + ": " + err);
  std::string config_text;
  if (!config_path.empty()) {
    std::vector<uint8_t> bytes;
    err = linfer::tools::read_file(config_path, &bytes);
    if (!err.empty()) return fail(err);
    config_text.assign(bytes.begin(), bytes.end());
  }
  if (layout == "auto") {
    layout = linfer::convert::detect_layout(*ck, config_text);
    if (layout.empty()) return fail(input + ": cannot detect the layout from the key names; pass --layout");
  }
  linfer::convert::MappedModel conv;
  err = linfer::convert::map_checkpoint(layout, *ck, config_text, &conv);
  if (!err.empty()) return fail(input + " (" + layout + " layout): " + err);

  // Pooling: sentence-transformers' files beside config.json, or --pooling.
  linfer::convert::SentencePooling pool;
  if (pooling == "auto" && !config_path.empty()) {
    const size_t slash = config_path.find_last_of('/');
    err = linfer::convert::read_sentence_transformers(slash == std::string::npos ? "." : config_path.substr(0, slash),
                                                      &pool);
    if (!err.empty()) return fail(err);
  } else if (pooling == "cls" || pooling == "mean") {
    pool.present = true;
    pool.pooling = pooling == "cls" ? linfer::Pooling::First : linfer::Pooling::Mean;
    pool.normalize = normalize;
    pool.note = "--pooling " + pooling + (normalize ? " --normalize" : "");
  }
  if (pool.present) {
    err = linfer::convert::apply_pooling(pool, &conv.desc);
    if (!err.empty()) return fail(input + ": " + err);
    conv.notes.push_back(pool.note);
  }

  linfer::convert::TokenizerData tokenizer;
  if (!tokenizer_paths.empty()) {
    err = linfer::convert::read_tokenizer(tokenizer_paths, &tokenizer);
    if (!err.empty()) return fail("--tokenizer: " + err);
    conv.desc.tokenizer = tokenizer.view();
  }

  linfer::convert::QuantizedStore quantized;
  size_t smoothed = 0, kept_f32 = 0;
  if (!calibration_lines.empty()) {
    std::map<std::string, std::vector<float>> max_abs;
    err = linfer::convert::calibrate_dense_inputs(conv.desc, calibration_lines, &max_abs);
    if (!err.empty()) return fail(err);
    smoothed = linfer::convert::smooth_dense_weights(&conv.desc, max_abs, float(alpha), &quantized);
    if (f32_channels)
      kept_f32 = linfer::convert::keep_f32_inputs(&conv.desc, max_abs, uint32_t(f32_channels), &quantized);
  }
  if (dtype != "f32") {
    err = linfer::convert::quantize_description(&conv.desc, dtype == "f16" ? linfer::DType::F16 : linfer::DType::I8,
                                                &quantized);
    if (!err.empty()) return fail(err);
  }
  // Version 2: the dense layers in the panel layout the kernels read, so that the runtime uses
  // the file's bytes in place (a tied LM head and its embedding stay one tensor).
  linfer::PanelStore panels;
  if (version != "1") {
    err = linfer::pack_dense_weights(&conv.desc, &panels, /*move_tied_embedding=*/true).message();
    if (!err.empty()) return fail(err);
  }
  std::vector<uint8_t> bytes;
  err = linfer::write_lfm(conv.desc, "linfer-convert " LINFER_VERSION_STRING " (layout " + layout + ", " + dtype + ")",
                          {{"source_format", ck->format}, {"source_layout", layout}}, &bytes,
                          /*validate=*/true, version.empty() ? linfer::kFormatVersion : uint32_t(std::stoul(version)))
            .message();
  if (!err.empty()) return fail(err);
  err = linfer::tools::write_file_atomic(output, bytes.data(), bytes.size());
  if (!err.empty()) return fail(err);

  const linfer::EncoderConfig& c = conv.desc.config;
  // (A model of another kind: k 0, the projections' defaults.)
  const linfer::LinformerFields lf =
      c.attention_kind == linfer::AttentionKind::Linformer ? linfer::linformer_fields(c) : linfer::LinformerFields();
  std::printf("layout: %s (%s)\n", layout.c_str(), ck->format.c_str());
  for (const std::string& note : conv.notes) std::printf("note: %s\n", note.c_str());
  std::printf("config: %s, %u layers, dim %u, %u heads x %u (kv heads %u), ff %u, n=%u, k=%u, vocab %u\n",
              linfer::to_string(c.attention_kind), c.num_layers, c.dim, c.num_heads, c.head_dim, c.kv_heads, c.ff_dim,
              c.max_seq_len, lf.proj_len, c.vocab_size);
  const std::string projection = c.attention_kind == linfer::AttentionKind::Linformer
                                     ? std::string(", projection ") + linfer::to_string(lf.projection_placement) +
                                           " / sharing " + linfer::to_string(lf.projection_sharing)
                                     : std::string();
  std::printf("        norm %s, positions %s%s, activation %s, head %s\n", linfer::to_string(c.norm_placement),
              linfer::to_string(c.positions), projection.c_str(), linfer::to_string(c.activation),
              linfer::to_string(c.head));
  if (c.head == linfer::HeadKind::Pooled)
    std::printf("        output: the %s-pooled vector%s, inputs up to %u tokens\n", linfer::to_string(c.pooling),
                c.normalize_output ? ", L2-normalized" : "", c.max_seq_len);
  if (smoothed)
    std::printf("        int8 inputs smoothed in %zu dense layers (calibration: %zu lines of %s, alpha %g)\n", smoothed,
                calibration_lines.size(), calibration_path.c_str(), alpha);
  if (kept_f32)
    std::printf("        int8 inputs: %lu channels of the largest calibrated |x| kept in f32 in %zu dense layers\n",
                f32_channels, kept_f32);
  if (c.rotary != linfer::Rotary::None) std::printf("        rotary positions %s\n", linfer::to_string(c.rotary));
  if (c.head == linfer::HeadKind::Classifier && c.classifier_activation != linfer::Activation::Tanh)
    std::printf("        classifier activation %s\n", linfer::to_string(c.classifier_activation));
  if (c.reversible_merge != linfer::ReversibleMerge::Sum)
    std::printf("        reversible halves merged by their %s\n", linfer::to_string(c.reversible_merge));
  if (c.attention_kind == linfer::AttentionKind::Performer)
    std::printf("        performer: %u %s features, eps %g%s\n", performer_fields(c).num_features,
                linfer::to_string(performer_fields(c).feature_map), double(performer_fields(c).feature_eps),
                performer_fields(c).key_stabiliser == linfer::KeyStabiliser::Sequence
                    ? ", keys stabilised over the whole input"
                    : "");
  if (c.attention_kind == linfer::AttentionKind::SlidingWindow)
    std::printf("        sliding window: radius %u (window %u), %u global positions%s\n",
                sliding_window_fields(c).window_radius, 2 * sliding_window_fields(c).window_radius + 1,
                sliding_window_fields(c).global_positions,
                conv.desc.layers[0].kind_tensors[linfer::SlidingWindowTensors::kQGlobalWeight].present()
                    ? ", own global projections"
                    : "");
  if (c.attention_kind == linfer::AttentionKind::BlockSparse)
    std::printf("        block sparse: blocks of %u rows, %u global at each end, %u random per block\n",
                block_sparse_fields(c).block_size, block_sparse_fields(c).global_blocks,
                block_sparse_fields(c).num_random_blocks);
  if (c.attention_kind == linfer::AttentionKind::Lsh)
    std::printf("        lsh: chunks of %u rows, %u hashing rounds, shared queries and keys%s\n",
                lsh_fields(c).bucket_size, lsh_fields(c).num_hashes,
                c.causal == linfer::CausalMode::Causal ? ", causal" : "");
  std::map<std::string, uint64_t> bytes_by_dtype;
  std::map<const void*, bool> counted;
  uint64_t f32_column_bytes = 0;  // int8 layers' input channels kept in f32 (not in w.bytes())
  linfer::for_each_weight(conv.desc, [&](const std::string&, const linfer::WeightView& w) {
    if (w.present() && !counted[w.data]) {
      counted[w.data] = true;
      bytes_by_dtype[linfer::to_string(w.dtype)] += w.bytes();
      f32_column_bytes += uint64_t(w.f32_input_count) * w.rows() * sizeof(float);
    }
  });
  std::printf("parameters: %llu; weight bytes:", (unsigned long long)conv.parameters);
  for (const auto& [name, n] : bytes_by_dtype) std::printf(" %s %llu", name.c_str(), (unsigned long long)n);
  if (f32_column_bytes)
    std::printf(", and f32 input columns of int8 layers %llu", (unsigned long long)f32_column_bytes);
  std::printf("\n");
  std::printf("shared tensors: %s\n", conv.shared.empty() ? "none" : "");
  for (const std::string& s : conv.shared) std::printf("  %s\n", s.c_str());
  // (write_lfm: 5 with f32 input channels, else 4; or of 2 and 3 the oldest that holds it)
  const int written = version.empty() || version == "4" || version == "5" ? (kept_f32 ? 5 : 4)
                      : version == "1"                                    ? 1
                      : smoothed                                          ? 3
                                                                          : 2;
  std::printf("wrote %s (%zu bytes, format version %d%s)\n", output.c_str(), bytes.size(), written,
              written == 1   ? ": row-major"
              : written == 2 ? ": dense layers in panel layout"
              : written == 3 ? ": dense layers in panel layout, int8 input scales"
              : written == 5 ? ": dense layers in panel layout, int8 input channels kept in f32"
                             : ": dense layers in panel layout");
  return 0;
}

}  // namespace
