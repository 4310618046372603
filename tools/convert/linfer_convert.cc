// linfer-convert CHECKPOINT -o MODEL.lfm [--config CONFIG.json] [--layout auto|lucidrains|fairseq|tatp22|linfer] [--dtype f32|f16|int8]
//
// checkpoint reader (no code execution) -> layout mapper -> canonical EncoderDescription ->
// validate -> .lfm writer. Output is written to a temporary file and renamed, so a failure never
// leaves a partial model behind.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "config_json.h"
#include "encoder.h"
#include "lfm_format.h"
#include "quantize.h"
#include "tool_util.h"

namespace {

using linfer::convert::Checkpoint;
using linfer::convert::SourceTensor;

constexpr const char* kUsage =
    "usage: linfer-convert CHECKPOINT -o MODEL.lfm [--config CONFIG.json] "
    "[--layout auto|lucidrains|fairseq|tatp22|linfer] [--dtype f32|f16|int8]";

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "linfer-convert: %s\n", message.c_str());
  if (code == 2) std::fprintf(stderr, "%s\n", kUsage);
  return code;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Guesses the source library from the key names.
std::string detect_layout(const Checkpoint& ck) {
  int linfer = 0, lucidrains = 0, fairseq = 0, tatp22 = 0;
  for (const auto& [name, t] : ck.tensors) {
    if (starts_with(name, "layers.") || name == "token_embedding.weight") ++linfer;
    if (starts_with(name, "linformer.net.") || name == "token_emb.weight") ++lucidrains;
    if (starts_with(name, "encoder.sentence_encoder.") || starts_with(name, "decoder.sentence_encoder."))
      ++fairseq;
    if (starts_with(name, "linformer.seq.") || name == "to_token_emb.weight") ++tatp22;
  }
  const int best = std::max(std::max(linfer, lucidrains), std::max(fairseq, tatp22));
  if (best == 0) return "";
  return best == linfer ? "linfer" : best == lucidrains ? "lucidrains" : best == fairseq ? "fairseq" : "tatp22";
}

// Name of a canonical slot in the linfer layout's state dict.
std::string linfer_key(const std::string& slot) {
  if (slot == "token_embedding" || slot == "position_embedding") return slot + ".weight";
  return slot;
}

struct Converted {
  linfer::EncoderDescription desc;
  std::vector<std::vector<float>> storage;  // owns the f32 data the views point at
  uint64_t parameters = 0;
  std::vector<std::string> shared;          // "a = b" lines for tensors that share memory
};

std::string map_linfer_layout(const Checkpoint& ck, const linfer::EncoderConfig& config, Converted* out) {
  linfer::EncoderDescription& d = out->desc;
  d.config = config;
  d.layers.resize(config.num_layers);
  std::map<std::string, bool> used;
  // Views of one storage with the same offset, shape and strides are one tensor (shared memory).
  std::map<std::string, std::pair<const void*, std::string>> by_view;
  out->storage.reserve(ck.tensors.size());
  std::string err;
  linfer::for_each_weight(d, [&](const std::string& slot, linfer::WeightView& w) {
    if (!err.empty()) return;
    const std::string key = linfer_key(slot);
    auto it = ck.tensors.find(key);
    if (it == ck.tensors.end()) return;
    const SourceTensor& t = it->second;
    used[key] = true;
    w.shape.clear();
    for (int64_t s : t.shape) {
      if (s <= 0 || s > int64_t(UINT32_MAX)) {
        err = "tensor '" + key + "' has an unusable dimension " + std::to_string(s);
        return;
      }
      w.shape.push_back(uint32_t(s));
    }
    if (w.shape.empty()) {
      err = "tensor '" + key + "' is a scalar; expected a vector or matrix";
      return;
    }
    std::string view_key = t.storage_key + "@" + std::to_string(t.storage_offset);
    for (size_t i = 0; i < t.shape.size(); ++i)
      view_key += ":" + std::to_string(t.shape[i]) + "/" + std::to_string(t.strides[i]);
    auto seen = by_view.find(view_key);
    if (seen != by_view.end()) {
      w.data = seen->second.first;
      out->shared.push_back(key + " = " + seen->second.second);
      return;
    }
    out->storage.emplace_back();
    if (!linfer::convert::tensor_to_f32(ck, t, &out->storage.back(), &err)) {
      err = "tensor '" + key + "': " + err;
      return;
    }
    w.dtype = linfer::DType::F32;
    w.data = out->storage.back().data();
    by_view[view_key] = {w.data, key};
    out->parameters += out->storage.back().size();
  });
  if (!err.empty()) return err;
  for (const auto& [name, t] : ck.tensors)
    if (!used.count(name))
      return "checkpoint tensor '" + name + "' has no place in the linfer layout with this configuration";
  return linfer::validate_description(d);
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, config_path, layout = "auto", dtype = "f32";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" || a == "--output" || a == "--config" || a == "--layout" || a == "--dtype") {
      if (i + 1 >= argc) return fail(a + " needs a value", 2);
      const std::string v = argv[++i];
      if (a == "-o" || a == "--output") output = v;
      else if (a == "--config") config_path = v;
      else if (a == "--layout") layout = v;
      else dtype = v;
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
  if (layout != "auto" && layout != "linfer" && layout != "lucidrains" && layout != "fairseq" &&
      layout != "tatp22")
    return fail("unknown layout '" + layout + "' (auto, lucidrains, fairseq, tatp22, linfer)", 2);
  if (dtype != "f32" && dtype != "f16" && dtype != "int8")
    return fail("unknown dtype '" + dtype + "' (f32, f16, int8)", 2);

  std::string err;
  std::unique_ptr<Checkpoint> ck = linfer::convert::read_checkpoint(input, &err);
  if (!ck) return fail(input + ": " + err);
  if (layout == "auto") {
    layout = detect_layout(*ck);
    if (layout.empty())
      return fail(input + ": cannot detect the layout from the key names; pass --layout");
  }
  if (layout != "linfer")
    return fail("layout '" + layout + "' is not supported yet; this version converts the linfer layout");

  // The configuration: --config, else the checkpoint's own linfer_config entry.
  std::string config_text;
  if (!config_path.empty()) {
    std::vector<uint8_t> bytes;
    err = linfer::tools::read_file(config_path, &bytes);
    if (!err.empty()) return fail(err);
    config_text.assign(bytes.begin(), bytes.end());
  } else {
    auto it = ck->metadata.find("linfer_config");
    if (it == ck->metadata.end())
      return fail(input + ": the checkpoint carries no linfer_config; pass --config CONFIG.json");
    config_text = it->second;
  }
  linfer::EncoderConfig config;
  err = linfer::convert::parse_linfer_config(config_text, &config);
  if (!err.empty()) return fail((config_path.empty() ? input + " linfer_config" : config_path) + ": " + err);

  Converted conv;
  err = map_linfer_layout(*ck, config, &conv);
  if (!err.empty()) return fail(input + ": " + err);

  linfer::convert::QuantizedStore quantized;
  if (dtype != "f32") {
    err = linfer::convert::quantize_description(
        &conv.desc, dtype == "f16" ? linfer::DType::F16 : linfer::DType::I8, &quantized);
    if (!err.empty()) return fail(err);
  }
  std::vector<uint8_t> bytes;
  err = linfer::write_lfm(conv.desc, "linfer-convert 0.1.0 (layout " + layout + ", " + dtype + ")",
                          {{"source_format", ck->format}, {"source_layout", layout}}, &bytes);
  if (!err.empty()) return fail(err);
  err = linfer::tools::write_file_atomic(output, bytes.data(), bytes.size());
  if (!err.empty()) return fail(err);

  const linfer::EncoderConfig& c = conv.desc.config;
  std::printf("layout: %s (%s)\n", layout.c_str(), ck->format.c_str());
  std::printf("config: %s, %u layers, dim %u, %u heads x %u (kv heads %u), ff %u, n=%u, k=%u, vocab %u\n",
              linfer::to_string(c.attention_kind), c.num_layers, c.dim, c.num_heads, c.head_dim,
              c.kv_heads, c.ff_dim, c.max_seq_len, c.proj_len, c.vocab_size);
  std::printf("        norm %s, positions %s, projection %s / sharing %s, activation %s, head %s\n",
              linfer::to_string(c.norm_placement), linfer::to_string(c.positions),
              linfer::to_string(c.projection_placement), linfer::to_string(c.projection_sharing),
              linfer::to_string(c.activation), linfer::to_string(c.head));
  std::map<std::string, uint64_t> bytes_by_dtype;
  std::map<const void*, bool> counted;
  linfer::for_each_weight(conv.desc, [&](const std::string&, const linfer::WeightView& w) {
    if (w.present() && !counted[w.data]) {
      counted[w.data] = true;
      bytes_by_dtype[linfer::to_string(w.dtype)] += w.bytes();
    }
  });
  std::printf("parameters: %llu; weight bytes:", (unsigned long long)conv.parameters);
  for (const auto& [name, n] : bytes_by_dtype) std::printf(" %s %llu", name.c_str(), (unsigned long long)n);
  std::printf("\n");
  std::printf("shared tensors: %s\n", conv.shared.empty() ? "none" : "");
  for (const std::string& s : conv.shared) std::printf("  %s\n", s.c_str());
  std::printf("wrote %s (%zu bytes)\n", output.c_str(), bytes.size());
  return 0;
}
