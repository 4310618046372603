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
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate.h"
#include "checkpoint.h"
#include "layout.h"
#include "layouts.h"
#include "linfer/format/encoder.h"
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/linfer_version.h"
#include "linfer/types/status.h"
#include "quantize.h"
#include "sentence_transformers.h"
#include "tokenizers/tokenizer_source.h"
#include "tool_util.h"

namespace {

namespace err = linfer::err;

constexpr const char* kUsage =
    "usage: linfer-convert CHECKPOINT -o MODEL.lfm [--config CONFIG.json] "
    "[--layout auto|lucidrains|fairseq|tatp22|performer|reformer|longformer|bigbird|bert|linfer] [--dtype f32|f16|int8] [--format-version 1|2|3|4|5] [--tokenizer FILE]... "
    "[--pooling auto|none|cls|mean] [--normalize] [--calibrate TEXT_FILE [--smoothing-alpha A] "
    "[--int8-f32-channels N]]";

// The one place a failure is told: one line on stderr, and the usage after a bad command line
// (exit 2; any other failure exits 1).
int fail(const err::Status& status, int exit_code = 1) {
  std::fprintf(stderr, "linfer-convert: %s\n", status.message().c_str());
  if (exit_code == 2) std::fprintf(stderr, "%s\n", kUsage);
  return exit_code;
}

struct Arguments {
  bool help = false;
  std::string input, output, config_path, layout = "auto", dtype = "f32", pooling = "auto";
  // "" or 5: 4 or 5 (f32 input channels); 2 or 3: the oldest of them that holds the model (3 with
  // input scales: lfm.h)
  std::string version;
  std::string calibration_path;
  bool normalize = false;
  double alpha = 0.5;
  unsigned long f32_channels = 0;
  std::vector<std::string> tokenizer_paths;
};

err::Result<Arguments> parse_arguments(int argc, char** argv);
err::Status convert(const Arguments& args);

}  // namespace

// Every failure is one line and a non-zero exit, also when memory runs out on a hostile input.
int main(int argc, char** argv) {
  try {
    err::Result<Arguments> args = parse_arguments(argc, argv);
    if (!args.ok()) return fail(args.status(), 2);
    if (args.value().help) {
      std::printf("%s\n", kUsage);
      return 0;
    }
    const err::Status converted = convert(args.value());
    return converted.ok() ? 0 : fail(converted);
  } catch (const std::bad_alloc&) {
    return fail(err::Status(LINFER_ERROR_OUT_OF_MEMORY, "out of memory"));
  } catch (const std::exception& e) {
    return fail(err::internal_error(std::string("internal error: ") + e.what()));
  }
}

namespace {

// The command line, checked (LINFER_ERROR_INVALID_ARGUMENT naming the bad argument).
err::Result<Arguments> parse_arguments(int argc, char** argv) {
  Arguments args;
  std::string alpha_text = "0.5", f32_channels_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" || a == "--output" || a == "--config" || a == "--layout" || a == "--dtype" ||
        a == "--format-version" || a == "--tokenizer" || a == "--pooling" || a == "--calibrate" ||
        a == "--smoothing-alpha" || a == "--int8-f32-channels") {
      if (i + 1 >= argc) return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "{} needs a value", a);
      const std::string v = argv[++i];
      if (a == "-o" || a == "--output")
        args.output = v;
      else if (a == "--config")
        args.config_path = v;
      else if (a == "--layout")
        args.layout = v;
      else if (a == "--dtype")
        args.dtype = v;
      else if (a == "--tokenizer")
        args.tokenizer_paths.push_back(v);
      else if (a == "--pooling")
        args.pooling = v;
      else if (a == "--calibrate")
        args.calibration_path = v;
      else if (a == "--smoothing-alpha")
        alpha_text = v;
      else if (a == "--int8-f32-channels")
        f32_channels_text = v;
      else
        args.version = v;
    } else if (a == "--normalize") {
      args.normalize = true;
    } else if (a == "-h" || a == "--help") {
      args.help = true;
      return args;
    } else if (!a.empty() && a[0] == '-') {
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "unknown option '{}'", a);
    } else if (args.input.empty()) {
      args.input = a;
    } else {
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "unexpected argument '{}'", a);
    }
  }
  if (args.input.empty()) return err::invalid_argument("no checkpoint given");
  if (args.output.empty()) return err::invalid_argument("no output given (-o MODEL.lfm)");
  if (args.layout != "auto" && !linfer::convert::find_layout(args.layout))
    return err::failure(
        LINFER_ERROR_INVALID_ARGUMENT,
        "unknown layout '{}' (auto, lucidrains, fairseq, tatp22, performer, reformer, longformer, bigbird, bert, linfer)",
        args.layout);
  if (args.dtype != "f32" && args.dtype != "f16" && args.dtype != "int8")
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "unknown dtype '{}' (f32, f16, int8)", args.dtype);
  if (args.pooling != "auto" && args.pooling != "none" && args.pooling != "cls" && args.pooling != "mean")
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "unknown pooling '{}' (auto, none, cls, mean)", args.pooling);
  if (args.normalize && (args.pooling == "auto" || args.pooling == "none"))
    return err::invalid_argument("--normalize needs --pooling cls or mean");
  const std::string& version = args.version;
  if (!version.empty() && version != "1" && version != "2" && version != "3" && version != "4" && version != "5")
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                        "unknown format version '{}' (1: row-major, 2: dense layers in panels, 3: and int8 input "
                        "scales, 4: and each attention kind's part in its own tables, 5: and int8 input channels kept "
                        "in f32)",
                        version);
  char* alpha_end = nullptr;
  args.alpha = std::strtod(alpha_text.c_str(), &alpha_end);
  if (alpha_text.empty() || *alpha_end != '\0' || !(args.alpha >= 0.0 && args.alpha <= 1.0))
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "--smoothing-alpha '{}' is not a number from 0 to 1",
                        alpha_text);
  if (!args.calibration_path.empty() && args.dtype != "int8")
    return err::invalid_argument("--calibrate is for --dtype int8");
  // (By default 2, what all-MiniLM-L6-v2 needs for cosine >= 0.995 (docs/accuracy.md); none when an
  // older format version is asked for, which cannot hold them.)
  args.f32_channels = version.empty() || version == "5" ? 2 : 0;
  if (!f32_channels_text.empty()) {
    char* end = nullptr;
    args.f32_channels = std::strtoul(f32_channels_text.c_str(), &end, 10);
    if (f32_channels_text[0] < '0' || f32_channels_text[0] > '9' || *end != '\0' ||
        args.f32_channels > linfer::Limits::kMaxF32Inputs)
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "--int8-f32-channels '{}' is not a number from 0 to {}",
                          f32_channels_text, linfer::Limits::kMaxF32Inputs);
    if (args.calibration_path.empty()) return err::invalid_argument("--int8-f32-channels needs --calibrate");
  }
  // Every feed-forward output layer keeps its channels (keep_f32_inputs): refused here, before the
  // calibration's work (half a minute for all-MiniLM-L6-v2), rather than by the writer after it.
  if (args.f32_channels && !version.empty() && version != "5")
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                        "--int8-f32-channels {} keeps input channels in f32, which format version {} cannot hold "
                        "(version 5 can)",
                        args.f32_channels, version);
  return args;
}

// The calibration file's non-empty lines (read before the conversion's work: a missing file
// fails first).
err::Result<std::vector<std::string>> read_calibration_lines(const std::string& path) {
  err::Result<std::vector<uint8_t>> bytes = linfer::tools::read_file(path);
  if (!bytes.ok()) return err::Status(bytes.status()).within("--calibrate: ");
  std::vector<std::string> lines;
  std::string line;
  for (uint8_t b : bytes.value()) {
    if (b != '\n') {
      line += char(b);
    } else {
      if (!line.empty()) lines.push_back(line);
      line.clear();
    }
  }
  if (!line.empty()) lines.push_back(line);
  if (lines.empty()) return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "--calibrate: {} has no text", path);
  return lines;
}

// Converts, writes the model and prints its summary.
// The model's attention kind's own fields as --config names them ("bucket_size 4, num_hashes 2").
std::string kind_fields_text(const linfer::EncoderConfig& c) {
  const std::vector<linfer::KindFieldInfo> fields = linfer::kind_field_infos(c.attention_kind);
  std::string text;
  for (size_t i = 0; i < fields.size(); ++i) {
    const uint32_t v = linfer::kind_field_value(c, i);
    float f;
    std::memcpy(&f, &v, sizeof f);
    char value[32];
    switch (fields[i].type) {
      case linfer::KindFieldInfo::kEnum: {  // (validated: a value of the list)
        uint32_t n = 0;
        while (fields[i].choices[n] && n < v) ++n;
        std::snprintf(value, sizeof value, "%s", fields[i].choices[n] ? fields[i].choices[n] : "?");
        break;
      }
      case linfer::KindFieldInfo::kBool:
        std::snprintf(value, sizeof value, "%s", v ? "true" : "false");
        break;
      case linfer::KindFieldInfo::kNumber:
        std::snprintf(value, sizeof value, "%u", v);
        break;
      case linfer::KindFieldInfo::kFloat:
        std::snprintf(value, sizeof value, "%g", double(f));
        break;
    }
    text += (i ? ", " : "") + std::string(fields[i].name) + " " + value;
  }
  return text;
}

err::Status convert(const Arguments& args) {
  const std::string& input = args.input;
  const std::string& version = args.version;
  std::vector<std::string> calibration_lines;
  if (!args.calibration_path.empty()) {
    err::Result<std::vector<std::string>> lines = read_calibration_lines(args.calibration_path);
    if (!lines.ok()) return lines.status();
    calibration_lines = std::move(lines.value());
  }

  err::Result<std::unique_ptr<linfer::convert::Checkpoint>> read = linfer::convert::read_checkpoint(input);
  if (!read.ok()) return err::Status(read.status()).within(input + ": ");
  const linfer::convert::Checkpoint& ck = *read.value();
  std::string config_text;
  if (!args.config_path.empty()) {
    err::Result<std::vector<uint8_t>> bytes = linfer::tools::read_file(args.config_path);
    if (!bytes.ok()) return bytes.status();
    config_text.assign(bytes.value().begin(), bytes.value().end());
  }
  std::string layout = args.layout;
  if (layout == "auto") {
    err::Result<std::string> detected = linfer::convert::detect_layout(ck, config_text);
    if (!detected.ok()) return err::Status(detected.status()).within(input + ": ");
    layout = detected.value();
  }
  err::Result<linfer::convert::MappedModel> mapped = linfer::convert::map_checkpoint(layout, ck, config_text);
  if (!mapped.ok()) return err::Status(mapped.status()).within(input + " (" + layout + " layout): ");
  linfer::convert::MappedModel& conv = mapped.value();

  // Pooling: sentence-transformers' files beside config.json, or --pooling.
  linfer::convert::SentencePooling pool;
  if (args.pooling == "auto" && !args.config_path.empty()) {
    const size_t slash = args.config_path.find_last_of('/');
    err::Result<linfer::convert::SentencePooling> found = linfer::convert::read_sentence_transformers(
        slash == std::string::npos ? "." : args.config_path.substr(0, slash));
    if (!found.ok()) return found.status();
    pool = found.value();
  } else if (args.pooling == "cls" || args.pooling == "mean") {
    pool.present = true;
    pool.pooling = args.pooling == "cls" ? linfer::Pooling::First : linfer::Pooling::Mean;
    pool.normalize = args.normalize;
    pool.note = "--pooling " + args.pooling + (args.normalize ? " --normalize" : "");
  }
  if (pool.present) {
    if (err::Status s = linfer::convert::apply_pooling(pool, &conv.desc); !s.ok())
      return std::move(s).within(input + ": ");
    conv.notes.push_back(pool.note);
  }

  linfer::convert::TokenizerData tokenizer;  // (what conv.desc.tokenizer points into)
  if (!args.tokenizer_paths.empty()) {
    err::Result<linfer::convert::TokenizerData> read_tokenizer = linfer::convert::read_tokenizer(args.tokenizer_paths);
    if (!read_tokenizer.ok()) return err::Status(read_tokenizer.status()).within("--tokenizer: ");
    tokenizer = std::move(read_tokenizer.value());
    conv.desc.tokenizer = tokenizer.view();
  }

  linfer::convert::QuantizedStore quantized;
  size_t smoothed = 0, kept_f32 = 0;
  if (!calibration_lines.empty()) {
    err::Result<linfer::convert::InputMaxima> max_abs =
        linfer::convert::calibrate_dense_inputs(conv.desc, calibration_lines);
    if (!max_abs.ok()) return max_abs.status();
    smoothed = linfer::convert::smooth_dense_weights(&conv.desc, max_abs.value(), float(args.alpha), &quantized);
    if (args.f32_channels)
      kept_f32 = linfer::convert::keep_f32_inputs(&conv.desc, max_abs.value(), uint32_t(args.f32_channels), &quantized);
  }
  if (args.dtype != "f32") {
    const linfer::DType dtype = args.dtype == "f16" ? linfer::DType::F16 : linfer::DType::I8;
    if (err::Status s = linfer::convert::quantize_description(&conv.desc, dtype, &quantized); !s.ok()) return s;
  }
  // Version 2: the dense layers in the panel layout the kernels read, so that the runtime uses
  // the file's bytes in place (a tied LM head and its embedding stay one tensor).
  linfer::PanelStore panels;
  if (version != "1")
    if (err::Status s = linfer::pack_dense_weights(&conv.desc, &panels, /*move_tied_embedding=*/true); !s.ok())
      return s;
  std::vector<uint8_t> bytes;
  if (err::Status s = linfer::write_lfm(
          conv.desc, "linfer-convert " LINFER_VERSION_STRING " (layout " + layout + ", " + args.dtype + ")",
          {{"source_format", ck.format}, {"source_layout", layout}}, &bytes,
          /*validate=*/true, version.empty() ? linfer::kFormatVersion : uint32_t(std::stoul(version)));
      !s.ok())
    return s;
  if (err::Status s = linfer::tools::write_file_atomic(args.output, bytes.data(), bytes.size()); !s.ok()) return s;

  const linfer::EncoderConfig& c = conv.desc.config;
  std::printf("layout: %s (%s)\n", layout.c_str(), ck.format.c_str());
  for (const std::string& note : conv.notes) std::printf("note: %s\n", note.c_str());
  std::printf("config: %s, %u layers, dim %u, %u heads x %u (kv heads %u), ff %u, n=%u, vocab %u\n",
              linfer::to_string(c.attention_kind), c.num_layers, c.dim, c.num_heads, c.head_dim, c.kv_heads, c.ff_dim,
              c.max_seq_len, c.vocab_size);
  std::printf("        norm %s, positions %s, activation %s, head %s%s\n", linfer::to_string(c.norm_placement),
              linfer::to_string(c.positions), linfer::to_string(c.activation), linfer::to_string(c.head),
              c.causal == linfer::CausalMode::Causal ? ", causal" : "");
  if (const std::string fields = kind_fields_text(c); !fields.empty())
    std::printf("        %s: %s\n", linfer::to_string(c.attention_kind), fields.c_str());
  if (c.head == linfer::HeadKind::Pooled)
    std::printf("        output: the %s-pooled vector%s, inputs up to %u tokens\n", linfer::to_string(c.pooling),
                c.normalize_output ? ", L2-normalized" : "", c.max_seq_len);
  if (smoothed)
    std::printf("        int8 inputs smoothed in %zu dense layers (calibration: %zu lines of %s, alpha %g)\n", smoothed,
                calibration_lines.size(), args.calibration_path.c_str(), args.alpha);
  if (kept_f32)
    std::printf("        int8 inputs: %lu channels of the largest calibrated |x| kept in f32 in %zu dense layers\n",
                args.f32_channels, kept_f32);
  if (c.rotary != linfer::Rotary::None) std::printf("        rotary positions %s\n", linfer::to_string(c.rotary));
  if (c.head == linfer::HeadKind::Classifier && c.classifier_activation != linfer::Activation::Tanh)
    std::printf("        classifier activation %s\n", linfer::to_string(c.classifier_activation));
  if (c.reversible_merge != linfer::ReversibleMerge::Sum)
    std::printf("        reversible halves merged by their %s\n", linfer::to_string(c.reversible_merge));
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
  std::printf("wrote %s (%zu bytes, format version %d%s)\n", args.output.c_str(), bytes.size(), written,
              written == 1   ? ": row-major"
              : written == 2 ? ": dense layers in panel layout"
              : written == 3 ? ": dense layers in panel layout, int8 input scales"
              : written == 5 ? ": dense layers in panel layout, int8 input channels kept in f32"
                             : ": dense layers in panel layout");
  return {};
}

}  // namespace
