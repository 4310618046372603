// SPDX-License-Identifier: Apache-2.0
// linfer-convert on malicious and corrupt checkpoints: every one is refused with exit code 1 and a
// single line naming the problem, and leaves no output file (nor a temporary one) behind.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tool_util.h"

namespace {

const std::string kSrc = LINFER_SOURCE_DIR;
const std::string kTmp = std::string(LINFER_TEST_TMP) + "/convert_cli";

using linfer::testing::run_command;

std::vector<uint8_t> file(const std::string& path) { return linfer::testing::required(linfer::tools::read_file(path)); }

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint8_t> text(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// A safetensors file of zeros holding tensors of these names and shapes (for refusals that depend on
// the key names and shapes only).
std::vector<uint8_t> safetensors(const std::vector<std::pair<std::string, std::vector<size_t>>>& tensors);

// A safetensors file from a JSON header and a data size.
std::vector<uint8_t> safetensors(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> b(8);
  uint64_t n = header.size();
  std::memcpy(b.data(), &n, 8);
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + data_bytes, 0);
  return b;
}

std::vector<uint8_t> safetensors(const std::vector<std::pair<std::string, std::vector<size_t>>>& tensors) {
  std::string header;
  size_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    size_t bytes = 4;
    std::string dims;
    for (size_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d), bytes *= d;
    header += std::string(header.empty() ? "{" : ",") + "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + dims +
              "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  return safetensors(header + "}", offset);
}

struct Case {
  std::string name;
  std::function<std::vector<uint8_t>()> make;
  std::string extra_args;  // e.g. --config
  std::string message;
};

}  // namespace

TEST_CASE("malicious and corrupt checkpoints: one-line error, exit 1, no output file") {
  std::system(("rm -rf " + kTmp + " && mkdir -p " + kTmp).c_str());
  const std::string layouts = kSrc + "/tests/golden_layouts";
  const std::string readers = kSrc + "/tests/readers";
  {
    std::ofstream(kTmp + "/bad_key.json")
        << R"({"num_tokens": 64, "dim": 32, "seq_len": 32, "depth": 2, "heads": 4, "typo": 1})";
    std::ofstream(kTmp + "/no_heads_divide.json")
        << R"({"num_tokens": 64, "dim": 32, "seq_len": 32, "depth": 2, "k": 8, "heads": 5})";
    std::string tatp = [&] {
      std::ifstream f(layouts + "/tatp22_kv_gelu/config.json");
      return std::string(std::istreambuf_iterator<char>(f), {});
    }();
    auto with = [&](const std::string& from, const std::string& to) {
      std::string s = tatp;
      s.replace(s.find(from), from.size(), to);
      return s;
    };
    std::ofstream(kTmp + "/tatp_conv.json") << with("\"learnable\"", "\"convolution\"");
    std::ofstream(kTmp + "/tatp_noparams.json") << with("\"learnable\"", "\"no_params\"");
    std::ofstream(kTmp + "/tatp_causal.json") << with("\"causal\": false", "\"causal\": true");
    std::ofstream(kTmp + "/tatp_sharing.json") << with("\"kv\"", "\"none\"");
    std::ofstream(kTmp + "/performer_local.json")
        << R"({"num_tokens": 64, "max_seq_len": 32, "dim": 32, "depth": 2, "heads": 2, "dim_head": 16, "local_attn_heads": 1})";
    std::ofstream(kTmp + "/performer_glu.json")
        << R"({"num_tokens": 64, "max_seq_len": 32, "dim": 32, "depth": 2, "heads": 2, "dim_head": 16, "ff_glu": true})";
    std::ofstream(kTmp + "/performer_heads.json")
        << R"({"num_tokens": 64, "max_seq_len": 32, "dim": 32, "depth": 2, "heads": 4, "dim_head": 16, "causal": true})";
    std::ofstream(kTmp + "/performer_reversible.json")
        << R"({"num_tokens": 64, "max_seq_len": 32, "dim": 32, "depth": 2, "heads": 2, "dim_head": 16, "reversible": true})";
    const std::string reformer =
        R"({"num_tokens": 40, "dim": 32, "depth": 2, "max_seq_len": 32, "heads": 2, "dim_head": 16, "bucket_size": 4, "n_hashes": 3, "ff_mult": 2, )";
    const std::vector<std::pair<std::string, std::string>> reformer_variants = {
        {"full_attn", R"("use_full_attn": true})"},
        {"thres", R"("full_attn_thres": 64})"},
        {"mem_kv", R"("num_mem_kv": 4})"},
        {"local", R"("n_local_attn_heads": 1})"},
        {"pkm", R"("pkm_layers": [1]})"},
        {"glu", R"("ff_glu": true})"},
        {"scalenorm", R"("use_scale_norm": true})"},
        {"rezero", R"("use_rezero": true})"},
        {"emb_dim", R"("emb_dim": 16})"},
        {"axial", R"("axial_position_emb": true})"},
        {"across", R"("lsh_attend_across_buckets": false})"},
        {"dup", R"("lsh_allow_duplicate_attention": false})"},
        {"per_head", R"("random_rotations_per_head": true})"},
        {"bucket", R"("bucket_size": 512})"},
        {"hashes", R"("n_hashes": 17})"},
        {"act", R"("ff_activation": "silu"})"},
        {"heads", R"("heads": 4})"},
        {"typo", R"("n_hash": 2})"}};
    for (const auto& [tag, rest] : reformer_variants)
      std::ofstream(kTmp + "/reformer_" + tag + ".json") << reformer << rest;
    const std::string longformer =
        R"({"vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 42, "type_vocab_size": 1, "layer_norm_eps": 1e-5, )";
    std::ofstream(kTmp + "/longformer_windows.json") << longformer << R"("attention_window": [8, 6]})";
    std::ofstream(kTmp + "/longformer_odd.json") << longformer << R"("attention_window": 7})";
    std::ofstream(kTmp + "/longformer_relative.json")
        << longformer << R"("attention_window": 8, "position_embedding_type": "relative_key"})";
    std::ofstream(kTmp + "/longformer_act.json") << longformer << R"("attention_window": 8, "hidden_act": "silu"})";
    const std::string bigbird =
        R"({"vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 34, "type_vocab_size": 2, )";
    std::ofstream(kTmp + "/bigbird_local.json") << bigbird << R"("attention_type": "local"})";
    std::ofstream(kTmp + "/bigbird_block4.json") << bigbird << R"("block_size": 4, "num_random_blocks": 1})";
    std::ofstream(kTmp + "/bigbird_bert.json") << bigbird << R"("model_type": "bert", "block_size": 2})";
    std::ofstream(kTmp + "/bigbird_decoder.json") << bigbird << R"("is_decoder": true, "block_size": 2})";
    std::ofstream(kTmp + "/bigbird_act.json") << bigbird << R"("hidden_act": "silu", "block_size": 2})";
    std::ofstream(kTmp + "/bigbird_r65.json")
        << R"({"hidden_size": 8, "num_attention_heads": 2, "max_position_embeddings": 200, "block_size": 1, "num_random_blocks": 65})";
    // c02's configuration (an LM head) with a classifier activation
    std::ofstream(kTmp + "/linfer_lm_classifier_act.json")
        << R"({"vocab_size": 80, "dim": 24, "num_layers": 2, "num_heads": 3, "head_dim": 8, "ff_dim": 48, "max_seq_len": 32, )"
        << R"("proj_len": 12, "norm_placement": "post", "embedding_norm": true, "positions": "sinusoidal", )"
        << R"("projection_placement": "before", "projection_sharing": "none", "activation": "relu", "head": "lm", )"
        << R"("proj_bias": true, "classifier_activation": "gelu"})";
    std::ofstream(kTmp + "/linfer_k_gt_n.json")
        << R"({"vocab_size": 64, "dim": 32, "num_layers": 2, "num_heads": 4, "head_dim": 8, "ff_dim": 64, "max_seq_len": 32, "proj_len": 40})";
  }
  const std::string lucid = layouts + "/lucidrains_lm/checkpoint.pt";
  std::vector<Case> cases = {
      {"forbidden global posix.system", [&] { return file(readers + "/malicious_system.pt"); }, "",
       "forbidden global 'posix.system'"},
      {"TorchScript archive", [&] { return file(readers + "/torchscript.pt"); }, "", "TorchScript"},
      // 100 KB whose distinct, overlapping views of one small storage would take ~100 MB as f32.
      {"views overlapping one small storage", [&] { return file(readers + "/overlapping_views.pt"); }, "",
       "over 4 times its stored values"},
      {"empty file", [] { return std::vector<uint8_t>(); }, "", "is empty"},
      {"plain text", [] { return text("this is not a checkpoint at all, just some text\n"); }, "", ""},
      {"zip truncated in half",
       [&] {
         auto b = file(lucid);
         b.resize(b.size() / 2);
         return b;
       },
       "", ""},
      {"zip central directory offset out of range",
       [&] {
         auto b = file(lucid);
         // Corrupt every end-of-central-directory offset field we can find (plain and ZIP64).
         for (size_t i = b.size() - 22; i > 0 && i + 22 > b.size() - 200; --i)
           if (std::memcmp(&b[i], "PK\x05\x06", 4) == 0) {
             uint32_t bad = 0x7ffffff0;
             std::memcpy(&b[i + 16], &bad, 4);
           }
         for (size_t i = 0; i + 56 <= b.size(); ++i)
           if (std::memcmp(&b[i], "PK\x06\x06", 4) == 0) {
             uint64_t bad = uint64_t(1) << 40;
             std::memcpy(&b[i + 48], &bad, 8);
           }
         return b;
       },
       "", ""},
      {"zip with its local headers zeroed",
       [&] {
         auto b = file(lucid);
         for (size_t i = 0; i + 4 <= b.size(); ++i)
           if (std::memcmp(&b[i], "PK\x03\x04", 4) == 0) std::memset(&b[i], 0, 4);
         return b;
       },
       "", ""},
      {"legacy file truncated",
       [&] {
         auto b = file(layouts + "/lucidrains_share_kv_legacy/checkpoint.pt");
         b.resize(b.size() - 100);
         return b;
       },
       "--config " + layouts + "/lucidrains_share_kv_legacy/config.json", ""},
      {"safetensors lying offsets (gap)",
       [] { return safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12); }, "", ""},
      {"safetensors offsets past the end",
       [] { return safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4); }, "", ""},
      {"safetensors huge shape",
       [] { return safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8); },
       "", ""},
      {"safetensors header length absurd",
       [] {
         auto b = safetensors("{}", 0);
         uint64_t n = uint64_t(1) << 50;
         std::memcpy(b.data(), &n, 8);
         return b;
       },
       "", ""},
      {"safetensors duplicate key",
       [] {
         return safetensors(
             R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             8);
       },
       "", "duplicate"},
      {"safetensors without a known layout",
       [] { return safetensors(R"({"mystery.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4); }, "",
       "cannot detect the layout"},
      {"lucidrains without --config", [&] { return file(lucid); }, "", "pass --config"},
      {"lucidrains config with an unknown key", [&] { return file(lucid); }, "--config " + kTmp + "/bad_key.json",
       "unknown key 'typo'"},
      {"lucidrains config: dim not divisible by heads", [&] { return file(lucid); },
       "--config " + kTmp + "/no_heads_divide.json", "divisible by heads"},
      {"tatp22 method convolution", [&] { return file(layouts + "/tatp22_kv_gelu/checkpoint.pt"); },
       "--config " + kTmp + "/tatp_conv.json", "convolution"},
      {"tatp22 method no_params", [&] { return file(layouts + "/tatp22_kv_gelu/checkpoint.pt"); },
       "--config " + kTmp + "/tatp_noparams.json", "not saved in the checkpoint"},
      {"tatp22 causal", [&] { return file(layouts + "/tatp22_kv_gelu/checkpoint.pt"); },
       "--config " + kTmp + "/tatp_causal.json", "causal"},
      {"tatp22 sharing contradicts the storages", [&] { return file(layouts + "/tatp22_kv_gelu/checkpoint.pt"); },
       "--config " + kTmp + "/tatp_sharing.json", "storage sharing is 'kv'"},
      {"performer without --config", [&] { return file(layouts + "/performer_lm_rotary_causal/checkpoint.pt"); }, "",
       "pass --config"},
      {"performer local attention heads", [&] { return file(layouts + "/performer_lm_rotary_causal/checkpoint.pt"); },
       "--config " + kTmp + "/performer_local.json", "local_attn_heads"},
      {"performer GLU feed-forward", [&] { return file(layouts + "/performer_lm_rotary_causal/checkpoint.pt"); },
       "--config " + kTmp + "/performer_glu.json", "ff_glu = true is not supported"},
      {"performer heads contradict the weights",
       [&] { return file(layouts + "/performer_lm_rotary_causal/checkpoint.pt"); },
       "--config " + kTmp + "/performer_heads.json", "has shape"},
      {"performer reversible contradicts the keys",
       [&] { return file(layouts + "/performer_lm_rotary_causal/checkpoint.pt"); },
       "--config " + kTmp + "/performer_reversible.json", "sequential"},
      {"reformer without --config", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); }, "",
       "pass --config"},
      {"reformer full attention", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_full_attn.json", "use_full_attn = true is not supported"},
      {"reformer full attention for short inputs", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_thres.json", "full_attn_thres > 0 is not supported"},
      {"reformer memory key-values", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_mem_kv.json", "num_mem_kv > 0 is not supported"},
      {"reformer local attention heads", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_local.json", "n_local_attn_heads > 0 is not supported"},
      {"reformer product-key memory", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_pkm.json", "pkm_layers"},
      {"reformer GLU feed-forward", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_glu.json", "ff_glu = true is not supported"},
      {"reformer ScaleNorm", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_scalenorm.json", "use_scale_norm = true is not supported"},
      {"reformer ReZero", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_rezero.json", "use_rezero = true is not supported"},
      {"reformer emb_dim != dim", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_emb_dim.json", "emb_dim != dim"},
      {"reformer axial positions", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_axial.json", "axial_position_emb = true is not supported"},
      {"reformer masking other buckets", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_across.json", "lsh_attend_across_buckets = false is not supported"},
      {"reformer no duplicate attention", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_dup.json", "lsh_allow_duplicate_attention = false is not supported"},
      {"reformer rotations per head", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_per_head.json", "random_rotations_per_head = true is not supported"},
      {"reformer bucket_size over linfer's limit", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_bucket.json", "outside linfer's limits"},
      {"reformer n_hashes over linfer's limit", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_hashes.json", "outside linfer's limits"},
      {"reformer unknown activation", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_act.json", "ff_activation 'silu' is not supported"},
      {"reformer heads contradict the weights", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_heads.json", "has shape"},
      {"reformer config with an unknown key", [&] { return file(layouts + "/reformer_lm_rotary/checkpoint.pt"); },
       "--config " + kTmp + "/reformer_typo.json", "unknown key 'n_hash'"},
      {"longformer without --config", [&] { return file(layouts + "/longformer_mlm/checkpoint.pt"); }, "",
       "pass --config"},
      {"longformer windows differ between layers", [&] { return file(layouts + "/longformer_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/longformer_windows.json", "differs between layers"},
      {"longformer odd window", [&] { return file(layouts + "/longformer_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/longformer_odd.json", "must be even"},
      {"longformer relative positions", [&] { return file(layouts + "/longformer_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/longformer_relative.json", "position_embedding_type"},
      {"longformer unknown activation", [&] { return file(layouts + "/longformer_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/longformer_act.json", "hidden_act 'silu'"},
      {"bigbird without --config", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); }, "", "pass --config"},
      {"bigbird unknown attention_type", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/bigbird_local.json", "attention_type 'local' is not supported"},
      {"bigbird block_size does not divide the positions", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/bigbird_block4.json", "not a multiple of block_size 4"},
      {"bigbird config of another model", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--layout bigbird --config " + kTmp + "/bigbird_bert.json", "model_type 'bert'"},
      // (config.json's model_type picks the layout: BigBird's pooler has no place in BERT's)
      {"bigbird checkpoint, BERT's config.json", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/bigbird_bert.json",
       "checkpoint tensor 'bert.pooler.bias' has no place in the bert layout"},
      {"bigbird decoder", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/bigbird_decoder.json", "is_decoder"},
      {"bigbird unknown activation", [&] { return file(layouts + "/bigbird_mlm/checkpoint.pt"); },
       "--config " + kTmp + "/bigbird_act.json", "BigBird hidden_act 'silu'"},
      {"bigbird num_random_blocks over linfer's limit",
       [] {
         return safetensors({{"embeddings.word_embeddings.weight", {10, 8}},
                             {"embeddings.position_embeddings.weight", {200, 8}},
                             {"embeddings.token_type_embeddings.weight", {1, 8}}});
       },
       "--layout bigbird --config " + kTmp + "/bigbird_r65.json", "num_random_blocks 65 is more than linfer's 64"},
      {"fairseq with --config", [&] { return file(layouts + "/fairseq_default_cfg/checkpoint.pt"); },
       "--config " + kTmp + "/bad_key.json", "carry their own hyperparameters"},
      {"linfer layout: classifier_activation on an LM head",
       [&] { return file(kSrc + "/tests/golden/c02_post_none_before_sinus_lm/checkpoint.pt"); },
       "--config " + kTmp + "/linfer_lm_classifier_act.json", "classifier_activation applies to classifier heads only"},
      {"linfer layout with k > n", [&] { return file(kSrc + "/tests/golden/c07_bare_state_dict_none/checkpoint.pt"); },
       "--config " + kTmp + "/linfer_k_gt_n.json", "exceeds max_seq_len"},
      {"bare state_dict without a configuration",
       [&] { return file(kSrc + "/tests/golden/c07_bare_state_dict_none/checkpoint.pt"); }, "", "pass --config"},
  };
  CHECK(cases.size() >= 20);
  int index = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string in = kTmp + "/in_" + std::to_string(index) + ".bin";
    const std::string out = kTmp + "/out_" + std::to_string(index++) + ".lfm";
    write(in, c.make());
    int code = 0;
    const std::string text =
        run_command(std::string(LINFER_CONVERT_PATH) + " " + in + " -o " + out + " " + c.extra_args, &code);
    CHECK(code == 1);
    CHECK(text.rfind("linfer-convert: ", 0) == 0);
    CHECK_MESSAGE(std::count(text.begin(), text.end(), '\n') == 1, text);
    if (!c.message.empty()) CHECK_MESSAGE(text.find(c.message) != std::string::npos, text);
    CHECK(access(out.c_str(), F_OK) != 0);
  }
  // Nothing else was left in the folder: no temporary output files.
  int code = 0;
  CHECK(run_command("ls " + kTmp + " | grep -c tmp", &code) == "0\n");
}

TEST_CASE("linfer-convert usage errors exit 2") {
  int code = 0;
  std::string out = run_command(std::string(LINFER_CONVERT_PATH) + " x.pt -o y.lfm --dtype f64", &code);
  CHECK(code == 2);
  CHECK(out.find("unknown dtype 'f64'") != std::string::npos);
  out = run_command(std::string(LINFER_CONVERT_PATH) + " x.pt", &code);
  CHECK(code == 2);
  CHECK(out.find("no output given") != std::string::npos);
  out = run_command(std::string(LINFER_CONVERT_PATH) + " /nonexistent.pt -o " + kTmp + "/never.lfm", &code);
  CHECK(code == 1);
  CHECK(access((kTmp + "/never.lfm").c_str(), F_OK) != 0);
}

TEST_CASE("the tools' file helpers: a file that cannot be read is LINFER_ERROR_IO, bad contents a bad input") {
  std::system(("mkdir -p " + kTmp).c_str());
  const linfer::err::Status missing = linfer::tools::read_file(kTmp + "/nonexistent").status();
  CHECK(missing.code() == LINFER_ERROR_IO);
  CHECK(missing.message().rfind("cannot open '" + kTmp + "/nonexistent': ", 0) == 0);
  const std::string ids = kTmp + "/bad_ids.txt";
  std::ofstream(ids) << "1 2 x3\n";
  const linfer::err::Status bad = linfer::tools::read_token_ids(ids).status();
  CHECK(bad.code() == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(bad.message() == "'" + ids + "': token 2 ('x3') is not an integer id");
  CHECK(linfer::tools::read_npy_f32(ids).status().message() == "'" + ids + "' is not a .npy file");
  CHECK(linfer::tools::write_file_atomic(kTmp + "/no/such/folder/x", "x", 1).code() == LINFER_ERROR_IO);
  std::remove(ids.c_str());
}

TEST_CASE("a checkpoint beyond a 32-bit address space: one-line error, exit 1") {
  // 3 GiB, sparse (no disk space): a 32-bit process cannot map it (with a 32-bit off_t it cannot
  // even stat it); a 64-bit one maps it and finds no checkpoint in its zeros.
  std::system(("mkdir -p " + kTmp).c_str());
  const std::string in = kTmp + "/huge.pt", out = kTmp + "/huge.lfm";
  int code = 0;
  run_command("truncate -s 3G " + in, &code);
  REQUIRE(code == 0);
  const std::string text = run_command(std::string(LINFER_CONVERT_PATH) + " " + in + " -o " + out, &code);
  std::remove(in.c_str());
  CHECK(code == 1);
  CHECK_MESSAGE(std::count(text.begin(), text.end(), '\n') == 1, text);
  if (sizeof(size_t) < 8)
    CHECK_MESSAGE(text.find("is too large for a 32-bit process to map") != std::string::npos, text);
  CHECK(access(out.c_str(), F_OK) != 0);
}
