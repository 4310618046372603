// SPDX-License-Identifier: Apache-2.0
// linfer-run MODEL.lfm (--ids FILE | --text FILE) [--dump OUT.npy] [--threads N]
// --text: tokenized by the model's tokenizer when its file carries one, else the bytes as ids.
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"
#include "tool_util.h"

namespace {

int usage_error(const std::string& message) {
  std::fprintf(stderr, "linfer-run: %s\n", message.c_str());
  std::fprintf(stderr, "usage: linfer-run MODEL.lfm (--ids FILE | --text FILE) [--dump OUT.npy] [--threads N]\n");
  return 2;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "linfer-run: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, ids_path, text_path, dump_path;
  uint32_t threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    if (a == "--ids" || a == "--text" || a == "--dump" || a == "--threads") {
      const char* v = value(a.c_str());
      if (!v) return usage_error(a + " needs a value");
      if (a == "--ids")
        ids_path = v;
      else if (a == "--text")
        text_path = v;
      else if (a == "--dump")
        dump_path = v;
      else if (!linfer::tools::parse_uint(v, 1, 256, &threads))
        return usage_error(std::string("--threads must be an integer in [1, 256], got '") + v + "'");
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: linfer-run MODEL.lfm (--ids FILE | --text FILE) [--dump OUT.npy] [--threads N]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (model_path.empty()) return usage_error("no model given");
  if (ids_path.empty() == text_path.empty()) return usage_error("give exactly one of --ids and --text");

  linfer::Model model;
  linfer::Status s = linfer::Model::Load(model_path, &model);
  if (!s) return fail(model_path + ": " + s.message());
  // --text: the model's tokenizer when the file carries one, else the bytes as ids.
  std::vector<int32_t> ids;
  if (!ids_path.empty()) {
    linfer::err::Result<std::vector<int32_t>> read = linfer::tools::read_token_ids(ids_path);
    if (!read.ok()) return fail(read.status().message());
    ids = std::move(read.value());
  } else if (model.has_tokenizer()) {
    linfer::err::Result<std::vector<uint8_t>> text = linfer::tools::read_file(text_path);
    if (!text.ok()) return fail(text.status().message());
    const std::vector<uint8_t>& bytes = text.value();
    s = model.Tokenize(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), &ids);
    if (!s) return fail(text_path + ": " + s.message());
  } else {
    linfer::err::Result<std::vector<int32_t>> read = linfer::tools::read_text_bytes(text_path);
    if (!read.ok()) return fail(read.status().message());
    ids = std::move(read.value());
  }
  if (ids.empty()) return fail("the input has no tokens");
  const linfer_model_info info = model.info();
  if (ids.size() > info.max_seq_len)
    return fail("the input has " + std::to_string(ids.size()) + " tokens; the model accepts at most " +
                std::to_string(info.max_seq_len));

  linfer::SessionOptions options;
  options.max_seq_len = uint32_t(ids.size());
  options.num_threads = threads;
  linfer::Session session;
  s = linfer::Session::Create(model, options, &session);
  if (!s) return fail(s.message());
  const auto t0 = std::chrono::steady_clock::now();
  s = session.Run(ids);
  const auto t1 = std::chrono::steady_clock::now();
  if (!s) return fail(s.message());
  const linfer::OutputView out = session.output();

  if (!dump_path.empty()) {
    const std::vector<uint8_t> bytes = linfer::tools::npy_bytes(out.data, {out.rows, out.cols});
    const linfer::err::Status written = linfer::tools::write_file_atomic(dump_path, bytes.data(), bytes.size());
    return written.ok() ? 0 : fail(written.message());
  }
  const char* kind = info.head == LINFER_HEAD_LM_LOGITS    ? "logits"
                     : info.head == LINFER_HEAD_CLASSIFIER ? "class logits"
                     : info.head == LINFER_HEAD_POOLED     ? "pooled vector"
                                                           : "hidden states";
  std::printf("model: %s, %u layers, dim %u, %u heads, n=%u, k=%u, %s weights\n", info.attention_kind, info.num_layers,
              info.dim, info.num_heads, info.max_seq_len, info.proj_len, info.weight_dtype);
  std::printf(
      "input: %zu tokens; output: %s [%zu, %zu]; %.3f ms with %u thread%s (one cold run; linfer-bench times warm runs)\n",
      ids.size(), kind, out.rows, out.cols, std::chrono::duration<double, std::milli>(t1 - t0).count(), threads,
      threads == 1 ? "" : "s");
  if (info.head == LINFER_HEAD_CLASSIFIER) {
    size_t best = 0;
    for (size_t c = 1; c < out.cols; ++c)
      if (out.data[c] > out.data[best]) best = c;
    std::printf("predicted class: %zu (logit %.4f)\n", best, out.data[best]);
  }
  std::printf("first row:");
  for (size_t c = 0; c < out.cols && c < 8; ++c) std::printf(" %.5f", out.data[c]);
  std::printf("%s\n", out.cols > 8 ? " ..." : "");
  return 0;
}
