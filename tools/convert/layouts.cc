#include "layouts.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "config_json.h"

namespace linfer::convert {
namespace {

using json = nlohmann::json;
using Shape = std::vector<uint32_t>;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
std::string str(size_t i) { return std::to_string(i); }

// Fetches checkpoint tensors as f32 views with checked shapes, keeps one copy per storage view
// (so tensors that alias in the checkpoint alias in the model) and records which keys were used.
class Builder {
 public:
  Builder(const Checkpoint& ck, MappedModel* out) : ck_(ck), out_(out) {
    // What the mapper may materialize as f32: an honest checkpoint needs each stored value once,
    // plus the mapper's own copies (transposes, stacked heads), so 4x the storages as f32 and a
    // little slack is ample; views that overlap many times (a small hostile file) are refused
    // before they are copied.
    uint64_t stored = 0;
    for (const auto& [key, st] : ck.storages) stored += st.bytes / std::max<size_t>(1, dtype_size(st.dtype));
    budget_bytes_ = 4 * stored * sizeof(float) + (uint64_t(64) << 20);
  }

  bool has(const std::string& name) const { return ck_.tensors.count(name) > 0; }
  std::string error;

  // The identity of the memory behind `name`: equal for tensors that are the same view.
  std::string identity(const std::string& name) const {
    const SourceTensor& t = ck_.tensors.at(name);
    std::string id = t.storage_key + "@" + std::to_string(t.storage_offset);
    for (size_t i = 0; i < t.shape.size(); ++i)
      id += ":" + std::to_string(t.shape[i]) + "/" + std::to_string(t.strides[i]);
    return id;
  }

  // `name` with exactly `shape`, or an error. Returns an empty view on error.
  WeightView load(const std::string& name, const Shape& shape) {
    if (!error.empty()) return {};
    auto it = ck_.tensors.find(name);
    if (it == ck_.tensors.end()) {
      error = "tensor '" + name + "' is missing";
      return {};
    }
    used_.insert(name);
    const SourceTensor& t = it->second;
    Shape got;
    for (int64_t s : t.shape) got.push_back(s >= 0 && s <= int64_t(UINT32_MAX) ? uint32_t(s) : 0);
    if (got != shape) {
      error = "tensor '" + name + "' has shape " + shape_to_string(got) + ", expected " +
              shape_to_string(shape);
      return {};
    }
    const std::string id = identity(name);
    WeightView w;
    w.shape = shape;
    auto seen = by_identity_.find(id);
    if (seen != by_identity_.end()) {
      w.data = seen->second.first;
      out_->shared.push_back(name + " = " + seen->second.second);
      return w;
    }
    if (!charge(w.elements(), name)) return {};
    auto data = std::make_unique<std::vector<float>>();
    std::string err;
    if (!tensor_to_f32(ck_, t, data.get(), &err)) {
      error = "tensor '" + name + "': " + err;
      return {};
    }
    w.data = data->data();
    out_->parameters += data->size();
    by_identity_[id] = {w.data, name};
    out_->storage.push_back(std::move(data));
    return w;
  }
  WeightView load_optional(const std::string& name, const Shape& shape) {
    return has(name) ? load(name, shape) : WeightView();
  }
  // A linear layer with its bias: NAME.weight [out, in] and NAME.bias [out].
  LinearWeights linear(const std::string& name, uint32_t out, uint32_t in) {
    LinearWeights lw;
    lw.weight = load(name + ".weight", {out, in});
    lw.bias = load(name + ".bias", {out});
    return lw;
  }
  // A layer norm: NAME.weight and NAME.bias, both [dim].
  NormWeights norm(const std::string& name, uint32_t dim) {
    NormWeights nw;
    nw.weight = load(name + ".weight", {dim});
    nw.bias = load(name + ".bias", {dim});
    return nw;
  }
  // Marks a key as deliberately ignored (buffers, unused biases).
  void ignore(const std::string& name) { used_.insert(name); }

  // A new tensor made by the mapper (a transpose, a stack of heads).
  WeightView make(const Shape& shape, std::vector<float> values) {
    if (!charge(values.size(), "a tensor built from the checkpoint")) return {};
    auto data = std::make_unique<std::vector<float>>(std::move(values));
    WeightView w;
    w.shape = shape;
    w.data = data->data();
    out_->storage.push_back(std::move(data));
    return w;
  }
  // Rows of several [r x c] tensors stacked into one [sum r x c] tensor (or [count, r, c]).
  WeightView stack(const std::vector<std::string>& names, const Shape& each, bool new_axis) {
    std::vector<float> all;
    for (const std::string& n : names) {
      WeightView w = load(n, each);
      if (!error.empty()) return {};
      const float* p = static_cast<const float*>(w.data);
      all.insert(all.end(), p, p + w.elements());
    }
    Shape shape = each;
    if (new_axis) shape.insert(shape.begin(), uint32_t(names.size()));
    else shape[0] *= uint32_t(names.size());
    return make(shape, std::move(all));
  }
  WeightView transpose(const std::string& name, uint32_t rows, uint32_t cols) {
    WeightView w = load(name, {rows, cols});
    if (!error.empty()) return {};
    const float* p = static_cast<const float*>(w.data);
    std::vector<float> t(size_t(rows) * cols);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) t[c * rows + r] = p[r * cols + c];
    return make({cols, rows}, std::move(t));
  }

  // Every checkpoint tensor must have been used or ignored: anything else means a variant the
  // mapper does not understand, which must not be dropped silently.
  std::string check_all_used(const std::string& layout) const {
    for (const auto& [name, t] : ck_.tensors)
      if (!used_.count(name))
        return "checkpoint tensor '" + name + "' has no place in the " + layout +
               " layout with this configuration";
    return "";
  }

 private:
  // Counts `elements` f32 values against the budget; false (and an error) past it.
  bool charge(uint64_t elements, const std::string& what) {
    materialized_bytes_ += elements * sizeof(float);
    if (materialized_bytes_ <= budget_bytes_) return true;
    error = what + ": the checkpoint's tensors would take more than " +
            std::to_string(budget_bytes_ >> 20) +
            " MiB as f32, over 4 times its stored values (tensors overlapping the same storage many "
            "times); refused";
    return false;
  }

  const Checkpoint& ck_;
  uint64_t budget_bytes_ = 0, materialized_bytes_ = 0;
  MappedModel* out_;
  std::set<std::string> used_;
  std::map<std::string, std::pair<const void*, std::string>> by_identity_;
};

// Reads a library's constructor arguments from --config, refusing keys it does not know.
struct LibraryConfig {
  json j;
  std::string error;
  std::string source;

  // known empty: every key is accepted (a Hugging Face config.json holds many that do not matter).
  bool parse(const std::string& text, const std::set<std::string>& known, const std::string& src) {
    source = src;
    j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      error = source + " is not a JSON object";
      return false;
    }
    for (const auto& item : j.items())
      if (!known.empty() && !known.count(item.key())) {
        error = source + ": unknown key '" + item.key() + "'";
        return false;
      }
    return true;
  }
  bool present(const char* key) const { return j.contains(key) && !j.at(key).is_null(); }
  uint32_t u32(const char* key, uint32_t fallback, bool required = false) {
    if (!present(key)) {
      if (required && error.empty()) error = source + ": missing '" + key + "'";
      return fallback;
    }
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t(UINT32_MAX)) {
      if (error.empty()) error = source + ": '" + key + "' must be a non-negative integer";
      return fallback;
    }
    return uint32_t(v.get<int64_t>());
  }
  bool flag(const char* key, bool fallback) {
    if (!present(key)) return fallback;
    if (!j.at(key).is_boolean()) {
      if (error.empty()) error = source + ": '" + key + "' must be true or false";
      return fallback;
    }
    return j.at(key).get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) {
    if (!present(key)) return fallback;
    if (!j.at(key).is_string()) {
      if (error.empty()) error = source + ": '" + key + "' must be a string";
      return fallback;
    }
    return j.at(key).get<std::string>();
  }
};

// Layer and head counts come from the checkpoint or --config and size the vectors and loops of the
// mappers, so they are bounded before anything is allocated (validate_description checks the rest
// at the end). Without this, "num_layers": 4000000000 in a checkpoint's linfer_config made
// layers.resize() throw std::bad_alloc out of linfer-convert (tests/fuzz/regressions/fuzz_convert).
std::string check_counts(const EncoderConfig& c) {
  if (c.num_layers > Limits::kMaxLayers)
    return "the configuration has " + std::to_string(c.num_layers) + " layers (at most " +
           std::to_string(Limits::kMaxLayers) + ")";
  if (c.num_heads > Limits::kMaxHeads)
    return "the configuration has " + std::to_string(c.num_heads) + " heads (at most " +
           std::to_string(Limits::kMaxHeads) + ")";
  return "";
}

// ---------------------------------------------------------------------------------------------
// linfer: the project's own layout (docs/converter.md)

std::string map_linfer(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  std::string text = config_json;
  if (text.empty()) {
    auto it = ck.metadata.find("linfer_config");
    if (it == ck.metadata.end())
      return "the checkpoint carries no linfer_config; pass --config CONFIG.json";
    text = it->second;
  }
  EncoderConfig config;
  std::string err = parse_linfer_config(text, &config);
  if (!err.empty()) return "configuration: " + err;
  if (!(err = check_counts(config)).empty()) return "configuration: " + err;
  EncoderDescription& d = out->desc;
  d.config = config;
  d.layers.resize(config.num_layers);
  Builder b(ck, out);
  for_each_weight(d, [&](const std::string& slot, WeightView& w) {
    const std::string key =
        slot == "token_embedding" || slot == "position_embedding" ? slot + ".weight" : slot;
    if (!b.has(key) || !b.error.empty()) return;
    Shape shape;
    for (int64_t s : ck.tensors.at(key).shape) shape.push_back(uint32_t(std::max<int64_t>(0, s)));
    w = b.load(key, shape);  // shapes are checked against the configuration by validation
  });
  if (!b.error.empty()) return b.error;
  return b.check_all_used("linfer");
}

// ---------------------------------------------------------------------------------------------
// lucidrains/linformer: LinformerLM and Linformer (checkpoint-formats.md section 1)

std::string map_lucidrains(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "lucidrains checkpoints do not record the number of heads: pass --config CONFIG.json "
           "with the constructor arguments (num_tokens, dim, seq_len, depth, k, heads, ...)";
  LibraryConfig lc;
  if (!lc.parse(config_json, {"num_tokens", "dim", "seq_len", "depth", "k", "heads", "dim_head",
                              "one_kv_head", "share_kv", "reversible", "dropout"},
                "--config"))
    return lc.error;
  const bool lm = ck.tensors.count("token_emb.weight") > 0;
  EncoderConfig& c = out->desc.config;
  c.dim = lc.u32("dim", 0, true);
  c.max_seq_len = lc.u32("seq_len", 0, true);
  c.num_layers = lc.u32("depth", 0, true);
  c.proj_len = lc.u32("k", 256);
  c.num_heads = lc.u32("heads", 8);
  c.vocab_size = lm ? lc.u32("num_tokens", 0, true) : 0;
  const bool one_kv_head = lc.flag("one_kv_head", false), share_kv = lc.flag("share_kv", false),
             reversible = lc.flag("reversible", false);
  if (!lc.error.empty()) return lc.error;
  if (c.num_heads == 0 || c.dim % c.num_heads != 0)
    return "--config: dim must be divisible by heads (lucidrains asserts it)";
  c.head_dim = lc.u32("dim_head", c.dim / c.num_heads);
  c.kv_heads = one_kv_head ? 1 : c.num_heads;
  c.ff_dim = 4 * c.dim;
  c.norm_placement = reversible ? NormPlacement::Reversible : NormPlacement::Pre;
  c.positions = lm ? PositionKind::Learned : PositionKind::None;
  c.projection_placement = ProjectionPlacement::After;
  c.projection_sharing = share_kv ? ProjectionSharing::KeyValue : ProjectionSharing::Headwise;
  c.activation = Activation::GeluErf;
  c.head = lm ? HeadKind::LmLogits : HeadKind::None;
  out->notes.push_back(std::string(lm ? "LinformerLM" : "Linformer (takes embeddings)") +
                       (reversible ? ", reversible" : "") + (share_kv ? ", share_kv" : "") +
                       (one_kv_head ? ", one_kv_head" : ""));

  if (const std::string e = check_counts(c); !e.empty()) return e;
  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, KV = c.kv_heads * c.head_dim,
                 n = c.max_seq_len, k = c.proj_len;
  const std::string root = lm ? "linformer.net." : "net.";
  if (lm) {
    d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
    d.position_embedding = b.load("pos_emb.weight", {n, D});
    d.head.out.weight = b.load("to_logits.weight", {c.vocab_size, D});
    d.head.out.bias = b.load("to_logits.bias", {c.vocab_size});
  }
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    const std::string a = reversible ? root + "blocks." + str(i) + ".f.net."
                                     : root + "layers." + str(i) + ".0.";
    const std::string f = reversible ? root + "blocks." + str(i) + ".g.net."
                                     : root + "layers." + str(i) + ".1.";
    l.q.weight = b.load(a + "fn.to_q.weight", {HD, D});
    l.k.weight = b.load(a + "fn.to_k.weight", {KV, D});
    // share_kv: values are the keys themselves (to_v and proj_v do not exist).
    l.v.weight = share_kv ? l.k.weight : b.load(a + "fn.to_v.weight", {KV, D});
    l.out.weight = b.load(a + "fn.to_out.weight", {D, HD});
    l.out.bias = b.load(a + "fn.to_out.bias", {D});
    l.proj_k = b.transpose(a + "fn.proj_k", n, k);  // stored [n, k]; E is [k, n]
    if (!share_kv) l.proj_v = b.transpose(a + "fn.proj_v", n, k);
    l.attention_norm.weight = b.load(a + "norm.weight", {D});
    l.attention_norm.bias = b.load(a + "norm.bias", {D});
    l.fc1.weight = b.load(f + "fn.w1.weight", {c.ff_dim, D});
    l.fc1.bias = b.load(f + "fn.w1.bias", {c.ff_dim});
    l.fc2.weight = b.load(f + "fn.w2.weight", {D, c.ff_dim});
    l.fc2.bias = b.load(f + "fn.w2.bias", {D});
    l.feed_forward_norm.weight = b.load(f + "norm.weight", {D});
    l.feed_forward_norm.bias = b.load(f + "norm.bias", {D});
  }
  if (!b.error.empty()) return b.error;
  return b.check_all_used("lucidrains");
}

// ---------------------------------------------------------------------------------------------
// fairseq linformer_roberta (checkpoint-formats.md section 2)

// Hyperparameters from "args" (argparse.Namespace) or "cfg"["model"] (dict or Namespace).
const Value* fairseq_args(const Checkpoint& ck) {
  if (!ck.root || !ck.root->is_dict()) return nullptr;
  const Value* args = ck.root->get("args");
  if (args && !args->is_none()) return args;
  const Value* cfg = ck.root->get("cfg");
  if (cfg && !cfg->is_none()) {
    const Value* model = cfg->get("model");
    if (model && !model->is_none()) return model;
  }
  return nullptr;
}

std::string map_fairseq(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (!config_json.empty())
    return "fairseq checkpoints carry their own hyperparameters (args or cfg); --config is not used";
  const Value* args = fairseq_args(ck);
  if (!args) return "the fairseq checkpoint has neither 'args' nor 'cfg.model'";
  std::string err;
  auto number = [&](const char* key, double fallback, bool required) {
    const Value* v = args->get(key);
    double x = fallback;
    if (!v || v->is_none()) {
      if (required && err.empty()) err = std::string("fairseq args: missing '") + key + "'";
      return fallback;
    }
    if (!v->as_number(&x) && err.empty()) err = std::string("fairseq args: '") + key + "' is not a number";
    return x;
  };
  auto text = [&](const char* key, const char* fallback) {
    const std::string* s = args->get_string(key);
    return s ? *s : std::string(fallback);
  };
  auto u32 = [&](const char* key, double fallback, bool required) {
    const double x = number(key, fallback, required);
    if ((x < 0 || x > 1e9 || x != std::floor(x)) && err.empty())
      err = std::string("fairseq args: '") + key + "' is not a size";
    return uint32_t(x >= 0 && x <= 1e9 ? x : 0);
  };
  EncoderConfig& c = out->desc.config;
  c.num_layers = u32("encoder_layers", 12, true);
  c.dim = u32("encoder_embed_dim", 768, true);
  c.ff_dim = u32("encoder_ffn_embed_dim", 3072, true);
  c.num_heads = u32("encoder_attention_heads", 12, true);
  c.max_seq_len = u32("max_positions", 512, true);
  const uint32_t compressed = u32("compressed", 4, false);
  const bool shared_kv = number("shared_kv_compressed", 0, false) != 0;
  const bool layerwise = number("shared_layer_kv_compressed", 0, false) != 0;
  const bool normalize_before = number("encoder_normalize_before", 0, false) != 0;
  const bool no_scale = number("no_scale_embedding", 1, false) != 0;
  const std::string act = text("activation_fn", "gelu");
  if (!err.empty()) return err;
  if (compressed == 0) return "fairseq args: 'compressed' must be at least 1";
  if (normalize_before)
    return "fairseq args: encoder_normalize_before = True (a pre-norm Linformer) is not supported; "
           "linformer_roberta is post-norm";
  if (c.num_heads == 0 || c.dim % c.num_heads) return "fairseq args: embed dim not divisible by heads";
  if (act != "gelu" && act != "relu" && act != "gelu_accurate")
    return "fairseq args: activation_fn '" + act + "' is not supported (gelu, gelu_accurate, relu)";
  c.head_dim = c.dim / c.num_heads;
  c.kv_heads = c.num_heads;
  c.proj_len = c.max_seq_len / compressed;
  c.activation = act == "relu" ? Activation::Relu : act == "gelu" ? Activation::GeluErf : Activation::GeluTanh;
  c.head_activation = c.activation;
  c.norm_placement = NormPlacement::Post;
  c.positions = PositionKind::Learned;
  c.position_offset = 2;  // make_positions: padding_idx (1) + 1, for inputs without padding
  c.embedding_scale = no_scale ? 1.0f : std::sqrt(float(c.dim));
  c.projection_placement = ProjectionPlacement::Before;
  c.projection_sharing = layerwise ? ProjectionSharing::Layerwise
                         : shared_kv ? ProjectionSharing::KeyValue
                                     : ProjectionSharing::Headwise;

  // Older checkpoints say decoder./emb_layer_norm (RobertaModel.upgrade_state_dict_named).
  std::string P = "encoder.sentence_encoder.";
  if (!ck.tensors.count(P + "embed_tokens.weight") && ck.tensors.count("decoder.sentence_encoder.embed_tokens.weight"))
    P = "decoder.sentence_encoder.";
  const std::string E = P.substr(0, P.find('.') + 1);  // "encoder." or "decoder."
  auto tok = ck.tensors.find(P + "embed_tokens.weight");
  if (tok == ck.tensors.end() || tok->second.shape.size() != 2)
    return "tensor '" + P + "embed_tokens.weight' is missing";
  c.vocab_size = uint32_t(std::max<int64_t>(0, tok->second.shape[0]));

  // The head: a classification head if there is exactly one, else the LM head.
  std::set<std::string> heads;
  for (const auto& [name, t] : ck.tensors)
    if (starts_with(name, "classification_heads.")) {
      const std::string rest = name.substr(strlen("classification_heads."));
      heads.insert(rest.substr(0, rest.find('.')));
    }
  if (heads.size() > 1) {
    std::string list;
    for (const std::string& h : heads) list += (list.empty() ? "" : ", ") + h;
    return "the checkpoint has several classification heads (" + list + "); linfer models have one";
  }
  const std::string cls = heads.empty() ? "" : "classification_heads." + *heads.begin() + ".";
  c.head = cls.empty() ? HeadKind::LmLogits : HeadKind::Classifier;
  if (!cls.empty()) {
    auto w = ck.tensors.find(cls + "out_proj.weight");
    if (w == ck.tensors.end() || w->second.shape.size() != 2) return "tensor '" + cls + "out_proj.weight' is missing";
    c.num_classes = uint32_t(std::max<int64_t>(0, w->second.shape[0]));
    c.pooling = Pooling::First;
    out->notes.push_back("classification head '" + *heads.begin() + "' (the LM head is dropped)");
  }
  const bool embedding_norm = ck.tensors.count(P + "layernorm_embedding.weight") ||
                              ck.tensors.count(P + "emb_layer_norm.weight");
  c.embedding_norm = embedding_norm;

  if (const std::string e = check_counts(c); !e.empty()) return e;
  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, n = c.max_seq_len, k = c.proj_len, F = c.ff_dim;
  d.token_embedding = b.load(P + "embed_tokens.weight", {c.vocab_size, D});
  {
    auto pos = ck.tensors.find(P + "embed_positions.weight");
    const uint32_t rows = pos != ck.tensors.end() && pos->second.shape.size() == 2
                              ? uint32_t(std::max<int64_t>(0, pos->second.shape[0])) : 0;
    if (rows < n + 2) return "tensor '" + P + "embed_positions.weight' needs at least max_positions + 2 rows";
    d.position_embedding = b.load(P + "embed_positions.weight", {rows, D});
  }
  if (embedding_norm) {
    const std::string ln = ck.tensors.count(P + "layernorm_embedding.weight") ? "layernorm_embedding" : "emb_layer_norm";
    d.embedding_norm.weight = b.load(P + ln + ".weight", {D});
    d.embedding_norm.bias = b.load(P + ln + ".bias", {D});
  }
  if (layerwise) {
    d.shared_proj = b.load(P + "compress_layer.weight", {k, n});
    b.ignore(P + "compress_layer.bias");  // fairseq applies the weight only (F.linear, no bias)
  }
  b.ignore(E + "version");
  b.ignore(P + "version");
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    const std::string p = P + "layers." + str(i) + ".";
    b.ignore(p + "version");
    auto linear = [&](LinearWeights& lw, const std::string& name, uint32_t o, uint32_t in) {
      lw = b.linear(p + name, o, in);
    };
    linear(l.q, "self_attn.q_proj", D, D);
    linear(l.k, "self_attn.k_proj", D, D);
    linear(l.v, "self_attn.v_proj", D, D);
    linear(l.out, "self_attn.out_proj", D, D);
    if (layerwise) {
      // Every layer's compress_k (and compress_v) is the shared layer: same storage.
      for (const char* which : {"self_attn.compress_k", "self_attn.compress_v"}) {
        const std::string name = p + which + ".weight";
        if (!b.has(name)) continue;
        if (b.identity(name) != b.identity(P + "compress_layer.weight"))
          return "'" + name + "' is not the shared compress_layer although shared_layer_kv_compressed is set";
        b.ignore(name);
        b.ignore(p + which + ".bias");
      }
    } else {
      l.proj_k = b.load(p + "self_attn.compress_k.weight", {k, n});
      if (!shared_kv) l.proj_v = b.load(p + "self_attn.compress_v.weight", {k, n});
    }
    l.attention_norm = b.norm(p + "self_attn_layer_norm", D);
    linear(l.fc1, "fc1", F, D);
    linear(l.fc2, "fc2", D, F);
    l.feed_forward_norm = b.norm(p + "final_layer_norm", D);
  }
  if (cls.empty()) {
    d.head.dense.weight = b.load(E + "lm_head.dense.weight", {D, D});
    d.head.dense.bias = b.load(E + "lm_head.dense.bias", {D});
    d.head.norm.weight = b.load(E + "lm_head.layer_norm.weight", {D});
    d.head.norm.bias = b.load(E + "lm_head.layer_norm.bias", {D});
    d.head.out.weight = b.load(E + "lm_head.weight", {c.vocab_size, D});
    d.head.out.bias = b.load(E + "lm_head.bias", {c.vocab_size});
  } else {
    d.head.dense.weight = b.load(cls + "dense.weight", {D, D});
    d.head.dense.bias = b.load(cls + "dense.bias", {D});
    d.head.out.weight = b.load(cls + "out_proj.weight", {c.num_classes, D});
    d.head.out.bias = b.load(cls + "out_proj.bias", {c.num_classes});
    for (const char* name : {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                             "lm_head.layer_norm.bias", "lm_head.weight", "lm_head.bias"})
      b.ignore(E + name);
  }
  if (!b.error.empty()) return b.error;
  out->notes.push_back("fairseq linformer_roberta: post-norm, positions offset 2 (inputs without padding), "
                       "compression before k_proj/v_proj, k = " + str(k));
  return b.check_all_used("fairseq");
}

// ---------------------------------------------------------------------------------------------
// tatp22/linformer-pytorch LinformerLM (checkpoint-formats.md section 3)

std::string map_tatp22(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "tatp22 checkpoints do not record the activation, causal or full_attention settings: "
           "pass --config CONFIG.json with the LinformerLM constructor arguments";
  LibraryConfig lc;
  if (!lc.parse(config_json, {"num_tokens", "input_size", "channels", "dim_k", "dim_ff", "dim_d",
                              "dropout_ff", "dropout_tokens", "nhead", "depth", "ff_intermediate",
                              "dropout", "activation", "checkpoint_level", "parameter_sharing",
                              "k_reduce_by_layer", "full_attention", "include_ff",
                              "w_o_intermediate_dim", "emb_dim", "return_emb", "decoder_mode",
                              "causal", "method"},
                "--config"))
    return lc.error;
  const std::string method = lc.text("method", "learnable");
  if (method == "convolution")
    return "tatp22 method 'convolution' projects with a strided convolution, which a Linformer E "
           "matrix cannot represent: refused";
  if (method == "no_params")
    return "tatp22 method 'no_params' uses random projections that are not saved in the "
           "checkpoint, so the model cannot be reproduced: refused";
  if (method != "learnable") return "tatp22 method '" + method + "' is unknown";
  if (lc.flag("causal", false) || lc.flag("decoder_mode", false))
    return "a causal tatp22 Linformer masks the projected scores in a way linfer does not reproduce: refused";
  if (lc.flag("full_attention", false))
    return "tatp22 full_attention = true is not supported yet (the E/F weights in the file are unused)";
  if (lc.u32("k_reduce_by_layer", 0) != 0) return "tatp22 k_reduce_by_layer != 0 is not supported";
  if (!lc.flag("include_ff", true)) return "tatp22 include_ff = false is not supported";
  if (lc.flag("return_emb", false)) return "tatp22 return_emb = true is not supported";
  for (const char* key : {"ff_intermediate", "w_o_intermediate_dim", "emb_dim"})
    if (lc.present(key)) return std::string("tatp22 ") + key + " must be null (the default) for linfer";
  EncoderConfig& c = out->desc.config;
  c.vocab_size = lc.u32("num_tokens", 0, true);
  c.max_seq_len = lc.u32("input_size", 0, true);
  c.dim = lc.u32("channels", 0, true);
  c.proj_len = lc.u32("dim_k", 64);
  c.ff_dim = lc.u32("dim_ff", 1024);
  c.num_heads = lc.u32("nhead", 4);
  c.num_layers = lc.u32("depth", 2);
  const std::string act = lc.text("activation", "gelu");
  const std::string sharing = lc.text("parameter_sharing", "layerwise");
  if (!lc.error.empty()) return lc.error;
  if (c.num_heads == 0) return "--config: nhead must be at least 1";
  c.head_dim = lc.u32("dim_d", c.dim / c.num_heads);
  if (act != "gelu" && act != "relu") return "--config: activation must be gelu or relu";
  c.activation = act == "relu" ? Activation::Relu : Activation::GeluErf;
  c.kv_heads = c.num_heads;
  c.norm_placement = NormPlacement::Post;
  c.positions = PositionKind::Sinusoidal;
  c.sinusoidal_base = 100000.0f;
  c.projection_placement = ProjectionPlacement::After;
  c.head = HeadKind::LmLogits;

  if (const std::string e = check_counts(c); !e.empty()) return e;
  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, H = c.num_heads, dh = c.head_dim, n = c.max_seq_len, k = c.proj_len;
  auto attn = [](uint32_t i) { return "linformer.seq." + str(2 * i) + "."; };
  auto ff = [](uint32_t i) { return "linformer.seq." + str(2 * i + 1) + "."; };
  auto proj = [&](uint32_t i, uint32_t h, const char* which) {
    return attn(i) + "fn.heads." + str(h) + "." + which + ".weight";
  };
  for (uint32_t i = 0; i < c.num_layers; ++i)
    for (uint32_t h = 0; h < H; ++h)
      for (const char* which : {"E", "F"})
        if (!b.has(proj(i, h, which))) return "tensor '" + proj(i, h, which) + "' is missing";

  // Sharing shows only as storage aliasing: find which E/F weights are the same memory.
  const std::string first = b.identity(proj(0, 0, "E"));
  bool all_same = true, per_layer_shared = true, kv_same = true;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string e0 = b.identity(proj(i, 0, "E")), f0 = b.identity(proj(i, 0, "F"));
    kv_same = kv_same && e0 == f0;
    for (uint32_t h = 0; h < H; ++h) {
      const std::string e = b.identity(proj(i, h, "E")), f = b.identity(proj(i, h, "F"));
      all_same = all_same && e == first && f == first;
      per_layer_shared = per_layer_shared && e == e0 && f == f0;
    }
  }
  ProjectionSharing found = all_same           ? ProjectionSharing::Layerwise
                            : !per_layer_shared ? ProjectionSharing::None
                            : kv_same           ? ProjectionSharing::KeyValue
                                                : ProjectionSharing::Headwise;
  const std::map<std::string, ProjectionSharing> modes = {
      {"none", ProjectionSharing::None}, {"headwise", ProjectionSharing::Headwise},
      {"kv", ProjectionSharing::KeyValue}, {"layerwise", ProjectionSharing::Layerwise}};
  auto declared = modes.find(sharing);
  if (declared == modes.end()) return "--config: unknown parameter_sharing '" + sharing + "'";
  // Some modes cannot be told apart by aliasing: with one layer, layerwise is kv; with one head,
  // headwise is none. Then the declared mode is the same model.
  const bool equivalent =
      (c.num_layers == 1 && found == ProjectionSharing::Layerwise &&
       declared->second == ProjectionSharing::KeyValue) ||
      (H == 1 && found == ProjectionSharing::Headwise && declared->second == ProjectionSharing::None);
  if (declared->second != found && !equivalent)
    return "--config says parameter_sharing '" + sharing +
           "' but the checkpoint's storage sharing is '" + to_string(found) + "'";
  c.projection_sharing = declared->second;
  const char* found_name = to_string(found);
  out->notes.push_back(std::string("sharing detected from storage aliasing: ") + found_name);

  d.token_embedding = b.load("to_token_emb.weight", {c.vocab_size, D});
  b.ignore("pos_emb.inv_freq");  // recomputed exactly from the formula
  d.head.out.weight = b.load("to_logits.weight", {c.vocab_size, D});
  d.head.out.bias = b.load("to_logits.bias", {c.vocab_size});
  auto bias_name = [&](uint32_t i, uint32_t h, const char* which) {
    return attn(i) + "fn.heads." + str(h) + "." + which + ".bias";
  };
  if (c.projection_sharing == ProjectionSharing::Layerwise) {
    d.shared_proj = b.load(proj(0, 0, "E"), {k, n});
    d.shared_proj_bias = b.load(bias_name(0, 0, "E"), {k});
  }
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    std::vector<std::string> q, kk, v, e, f, eb, fb;
    for (uint32_t h = 0; h < H; ++h) {
      q.push_back(attn(i) + "fn.to_q." + str(h) + ".weight");
      kk.push_back(attn(i) + "fn.to_k." + str(h) + ".weight");
      v.push_back(attn(i) + "fn.to_v." + str(h) + ".weight");
      e.push_back(proj(i, h, "E"));
      f.push_back(proj(i, h, "F"));
      eb.push_back(bias_name(i, h, "E"));
      fb.push_back(bias_name(i, h, "F"));
    }
    // Per-head [dh, C] weights stack into [H*dh, C], heads in order.
    l.q.weight = b.stack(q, {dh, D}, false);
    l.k.weight = b.stack(kk, {dh, D}, false);
    l.v.weight = b.stack(v, {dh, D}, false);
    l.out.weight = b.load(attn(i) + "fn.w_o.weight", {D, H * dh});
    l.out.bias = b.load(attn(i) + "fn.w_o.bias", {D});
    switch (c.projection_sharing) {
      case ProjectionSharing::None:
        l.proj_k = b.stack(e, {k, n}, true);
        l.proj_v = b.stack(f, {k, n}, true);
        l.proj_k_bias = b.stack(eb, {k}, true);
        l.proj_v_bias = b.stack(fb, {k}, true);
        break;
      case ProjectionSharing::Headwise:
        l.proj_k = b.load(e[0], {k, n});
        l.proj_v = b.load(f[0], {k, n});
        l.proj_k_bias = b.load(eb[0], {k});
        l.proj_v_bias = b.load(fb[0], {k});
        break;
      case ProjectionSharing::KeyValue:
        l.proj_k = b.load(e[0], {k, n});
        l.proj_k_bias = b.load(eb[0], {k});
        break;
      case ProjectionSharing::Layerwise: break;
    }
    // The other heads' E/F (and biases) are the same memory as the ones loaded above.
    if (c.projection_sharing != ProjectionSharing::None)
      for (uint32_t h = 0; h < H; ++h)
        for (const std::string& name : {e[h], f[h], eb[h], fb[h]}) b.ignore(name);
    l.attention_norm.weight = b.load(attn(i) + "norm.weight", {D});
    l.attention_norm.bias = b.load(attn(i) + "norm.bias", {D});
    l.fc1.weight = b.load(ff(i) + "fn.w_1.weight", {c.ff_dim, D});
    l.fc1.bias = b.load(ff(i) + "fn.w_1.bias", {c.ff_dim});
    l.fc2.weight = b.load(ff(i) + "fn.w_2.weight", {D, c.ff_dim});
    l.fc2.bias = b.load(ff(i) + "fn.w_2.bias", {D});
    l.feed_forward_norm.weight = b.load(ff(i) + "norm.weight", {D});
    l.feed_forward_norm.bias = b.load(ff(i) + "norm.bias", {D});
  }
  if (!b.error.empty()) return b.error;
  out->notes.push_back("tatp22: post-norm, sinusoidal positions (base 100000), E/F with bias after "
                       "to_k/to_v; inputs shorter than input_size use the first T columns of E and F "
                       "(upstream accepts only full-length inputs)");
  return b.check_all_used("tatp22");
}


// ---------------------------------------------------------------------------------------------
// lucidrains/performer-pytorch 1.1.4: PerformerLM and Performer (docs/converter.md, "performer")

std::string map_performer(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "performer-pytorch checkpoints do not record causal or generalized_attention: pass "
           "--config CONFIG.json with the PerformerLM or Performer constructor arguments";
  LibraryConfig lc;
  if (!lc.parse(config_json,
                {"num_tokens", "max_seq_len", "dim", "depth", "heads", "dim_head", "causal", "ff_mult",
                 "nb_features", "reversible", "generalized_attention", "tie_embed", "rotary_position_emb",
                 "axial_position_emb", "axial_position_shape", "qkv_bias", "attn_out_bias", "local_attn_heads",
                 "local_window_size", "use_scalenorm", "use_rezero", "ff_glu", "shift_tokens", "cross_attend",
                 "no_projection", "feature_redraw_interval", "ff_chunks", "emb_dropout", "ff_dropout",
                 "attn_dropout", "auto_check_redraw"},
                "--config"))
    return lc.error;
  // Options whose modules linfer does not have (each changes the forward pass).
  if (lc.present("local_attn_heads") && !(lc.j.at("local_attn_heads").is_number_integer() &&
                                          lc.j.at("local_attn_heads").get<int64_t>() == 0))
    return "performer-pytorch local_attn_heads (local attention heads) are not supported: refused";
  for (const char* key : {"use_scalenorm", "use_rezero", "ff_glu", "shift_tokens", "cross_attend",
                          "no_projection", "axial_position_emb"})
    if (lc.flag(key, false)) return std::string("performer-pytorch ") + key + " = true is not supported: refused";
  if (!lc.error.empty()) return lc.error;

  const bool lm = ck.tensors.count("token_emb.weight") > 0;
  const std::string P = lm ? "performer." : "";
  // The projection updater holds the same module as net, so every layer tensor has two names;
  // a file written without shared tensors (safetensors' save_model) may keep either one.
  auto net_key = [&](const std::string& rest) {
    const std::string a = P + "net." + rest, b = P + "proj_updater.instance." + rest;
    return ck.tensors.count(a) || !ck.tensors.count(b) ? a : b;
  };
  const bool reversible = ck.tensors.count(net_key("blocks.0.f.net.norm.weight")) > 0;
  if (lc.present("reversible") && lc.flag("reversible", false) != reversible)
    return std::string("--config says reversible = ") + (reversible ? "false" : "true") +
           " but the checkpoint's layers are " + (reversible ? "reversible blocks" : "sequential");
  auto attn = [&](uint32_t i) { return reversible ? "blocks." + str(i) + ".f.net." : "layers." + str(i) + ".0."; };
  auto ff = [&](uint32_t i) { return reversible ? "blocks." + str(i) + ".g.net." : "layers." + str(i) + ".1."; };

  EncoderConfig& c = out->desc.config;
  c.attention_kind = AttentionKind::Performer;
  c.dim = lc.u32("dim", 0, true);
  c.num_layers = lc.u32("depth", 0, true);
  c.num_heads = lc.u32("heads", 0, true);
  c.head_dim = lc.u32("dim_head", lm ? 64 : 0, !lm);  // Performer's dim_head is positional
  c.causal = lc.flag("causal", false) ? CausalMode::Causal : CausalMode::Bidirectional;
  c.ff_dim = c.dim * lc.u32("ff_mult", 4);
  const bool relu = lc.flag("generalized_attention", false);
  c.feature_map = relu ? FeatureMap::Relu : FeatureMap::Softmax;
  c.feature_eps = relu ? 1e-3f : 1e-4f;  // kernel_epsilon; softmax_kernel's eps
  // nb_features default: int(dim_head * ln(dim_head)), as FastAttention computes it
  // (bounded first: the product of an absurd dim_head would not fit the cast; validation refuses it)
  const bool sane_head = c.head_dim > 1 && c.head_dim <= Limits::kMaxDim;
  c.num_features = lc.u32("nb_features", sane_head ? uint32_t(c.head_dim * std::log(double(c.head_dim))) : 0);
  c.kv_heads = c.num_heads;
  c.max_seq_len = lc.u32("max_seq_len", 0, true);
  c.norm_placement = reversible ? NormPlacement::Reversible : NormPlacement::Pre;
  c.activation = Activation::GeluErf;
  const bool qkv_bias = lc.flag("qkv_bias", !lm), out_bias = lc.flag("attn_out_bias", !lm);
  bool rotary = false, tied = false;
  if (lm) {
    c.vocab_size = lc.u32("num_tokens", 0, true);
    c.head = HeadKind::LmLogits;
    c.final_norm = true;
    rotary = lc.flag("rotary_position_emb", true);
    tied = lc.flag("tie_embed", false);
    c.positions = PositionKind::Learned;
    c.rotary = rotary ? Rotary::AdjacentPairs : Rotary::None;
  } else {
    c.positions = PositionKind::None;  // Performer takes embeddings; positions are the caller's
  }
  if (!lc.error.empty()) return lc.error;
  if (c.num_heads == 0 || c.head_dim == 0) return "--config: heads and dim_head must be positive";
  if (const std::string e = check_counts(c); !e.empty()) return e;
  out->notes.push_back(std::string(lm ? "PerformerLM" : "Performer (takes embeddings)") +
                       (c.causal == CausalMode::Causal ? ", causal" : "") + (relu ? ", relu features" : ", softmax features") +
                       " (m = " + str(c.num_features) + ")" + (reversible ? ", reversible" : "") +
                       (lm ? rotary ? ", rotary positions" : ", learned positions" : "") + (tied ? ", tied embedding" : ""));
  if (c.causal == CausalMode::Causal && !relu) {
    // Upstream subtracts the maximum over all keys of the input, so with softmax features its rows
    // depend on later tokens (through the eps term): reproduced exactly, without token-by-token runs.
    c.key_stabiliser = KeyStabiliser::Sequence;
    out->notes.push_back("causal softmax features: keys stabilised by the maximum over the whole input, as "
                         "upstream (key_stabiliser 'sequence'); whole-input runs only, no token-by-token runs");
  }

  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, n = c.max_seq_len, F = c.ff_dim;
  if (lm) {
    d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
    if (rotary) {
      d.position_embedding = b.load("pos_emb.emb", {n, D});  // fixed sinusoids, added like a table
      d.rotary_table = b.load("layer_pos_emb.emb", {n, c.head_dim});
    } else {
      d.position_embedding = b.load(b.has("pos_emb.weight") ? "pos_emb.weight" : "pos_emb.emb.weight", {n, D});
    }
    d.final_norm.weight = b.load("norm.weight", {D});
    d.final_norm.bias = b.load("norm.bias", {D});
    if (tied) {
      d.head.out.weight = d.token_embedding;  // logits = x E^T, no bias
    } else {
      d.head.out.weight = b.load("to_out.weight", {c.vocab_size, D});
      d.head.out.bias = b.load("to_out.bias", {c.vocab_size});
    }
  }
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    const std::string a = attn(i), f = ff(i);
    l.attention_norm.weight = b.load(net_key(a + "norm.weight"), {D});
    l.attention_norm.bias = b.load(net_key(a + "norm.bias"), {D});
    LinearWeights* qkv[3] = {&l.q, &l.k, &l.v};
    const char* names[3] = {"to_q", "to_k", "to_v"};
    for (int j = 0; j < 3; ++j) {
      qkv[j]->weight = b.load(net_key(a + "fn." + names[j] + ".weight"), {HD, D});
      if (qkv_bias) qkv[j]->bias = b.load(net_key(a + "fn." + names[j] + ".bias"), {HD});
    }
    l.out.weight = b.load(net_key(a + "fn.to_out.weight"), {D, HD});
    if (out_bias) l.out.bias = b.load(net_key(a + "fn.to_out.bias"), {D});
    // projection_matrix [m, dim_head] (rows are the random directions); features = its transpose
    l.features = b.transpose(net_key(a + "fn.fast_attention.projection_matrix"), c.num_features, c.head_dim);
    l.feed_forward_norm.weight = b.load(net_key(f + "norm.weight"), {D});
    l.feed_forward_norm.bias = b.load(net_key(f + "norm.bias"), {D});
    l.fc1.weight = b.load(net_key(f + "fn.fn.w1.weight"), {F, D});
    l.fc1.bias = b.load(net_key(f + "fn.fn.w1.bias"), {F});
    l.fc2.weight = b.load(net_key(f + "fn.fn.w2.weight"), {D, F});
    l.fc2.bias = b.load(net_key(f + "fn.fn.w2.bias"), {D});
  }
  if (!b.error.empty()) return b.error;
  // The second name of every layer tensor, and the redraw counter (no redraw at inference).
  for (const auto& [name, t] : ck.tensors)
    if (starts_with(name, P + "proj_updater.")) b.ignore(name);
  return b.check_all_used("performer");
}


// ---------------------------------------------------------------------------------------------
// lucidrains/reformer-pytorch: ReformerLM and Reformer (docs/converter.md, "reformer")

// The rotations reformer-pytorch draws at every forward pass, drawn once here (docs/converter.md):
// splitmix64 from state rotation_seed * 2^32 + layer, each value sqrt(-2 ln u1) cos(2 pi u2) with
// u1 = (a + 1) 2^-53, u2 = b 2^-53 for the top 53 bits a, b of two successive outputs, rounded to
// float, in the order of [num_hashes, head_dim, half] (tools/python/upstream/reformer.py: the same).
std::vector<float> reformer_rotations(uint32_t seed, uint32_t layer, size_t count) {
  uint64_t state = (uint64_t(seed) << 32) + layer;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const double two_pi = 6.283185307179586, unit = 1.0 / 9007199254740992.0;  // 2^-53
  std::vector<float> out(count);
  for (float& v : out) {
    const double u1 = double((next() >> 11) + 1) * unit, u2 = double(next() >> 11) * unit;
    v = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
  }
  return out;
}

// [n, d] rows sin(t f_i) for the d/2 frequencies f, then cos, from a FixedPositionalEmbedding's
// inv_freq buffer, in float32 as upstream computes it.
std::vector<float> reformer_sinusoids(const float* inv_freq, uint32_t n, uint32_t d) {
  std::vector<float> out(size_t(n) * d);
  const uint32_t half = d / 2;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t i = 0; i < half; ++i) {
      const float a = float(t) * inv_freq[i];
      out[size_t(t) * d + i] = std::sin(a);
      out[size_t(t) * d + half + i] = std::cos(a);
    }
  return out;
}

std::string map_reformer(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "reformer-pytorch checkpoints do not record bucket_size, n_hashes or causal: pass --config "
           "CONFIG.json with the ReformerLM or Reformer constructor arguments";
  LibraryConfig lc;
  if (!lc.parse(config_json,
                {"num_tokens", "dim", "depth", "max_seq_len", "heads", "dim_head", "bucket_size", "n_hashes",
                 "ff_chunks", "attn_chunks", "causal", "weight_tie", "lsh_dropout", "ff_dropout", "ff_mult",
                 "ff_activation", "ff_glu", "post_attn_dropout", "layer_dropout", "random_rotations_per_head",
                 "use_scale_norm", "use_rezero", "use_full_attn", "full_attn_thres", "reverse_thres", "num_mem_kv",
                 "one_value_head", "emb_dim", "return_embeddings", "weight_tie_embedding", "fixed_position_emb",
                 "absolute_position_emb", "axial_position_emb", "axial_position_shape", "n_local_attn_heads",
                 "pkm_layers", "pkm_num_keys", "lsh_attend_across_buckets", "lsh_allow_duplicate_attention",
                 "rotation_seed"},
                "--config"))
    return lc.error;
  // Options whose modules or masks linfer does not have (each changes the forward pass).
  for (const char* key : {"use_full_attn", "ff_glu", "use_scale_norm", "use_rezero", "axial_position_emb",
                          "random_rotations_per_head"})
    if (lc.flag(key, false)) return std::string("reformer-pytorch ") + key + " = true is not supported: refused";
  for (const char* key : {"lsh_attend_across_buckets", "lsh_allow_duplicate_attention"})
    if (!lc.flag(key, true)) return std::string("reformer-pytorch ") + key + " = false is not supported: refused";
  for (const char* key : {"full_attn_thres", "num_mem_kv", "n_local_attn_heads"})
    if (lc.u32(key, 0) > 0)
      return std::string("reformer-pytorch ") + key + " > 0 is not supported (" +
             (std::string(key) == "full_attn_thres" ? "full attention for short inputs" :
              std::string(key) == "num_mem_kv" ? "memory key-values" : "local attention heads") + "): refused";
  if (lc.present("pkm_layers") && !(lc.j.at("pkm_layers").is_array() && lc.j.at("pkm_layers").empty()))
    return "reformer-pytorch pkm_layers (product-key memory layers) are not supported: refused";
  const std::string act = lc.text("ff_activation", "gelu");
  if (act != "gelu" && act != "relu")
    return "reformer-pytorch ff_activation '" + act + "' is not supported (null or \"gelu\" for nn.GELU, \"relu\" for "
           "nn.ReLU): refused";
  if (!lc.error.empty()) return lc.error;

  const bool lm = ck.tensors.count("token_emb.weight") > 0;
  const std::string P = lm ? "reformer.layers." : "layers.";
  // ReversibleSequence holds every block twice: blocks.{i}.f.net.* (the Deterministic wrapper) and
  // irrev_blocks.{i}.f.* (the same modules); a file written without shared tensors may keep either.
  std::vector<std::string> twins;  // the other name of each tensor read
  auto block_key = [&](uint32_t i, const char* branch, const std::string& rest) {
    const std::string a = P + "blocks." + str(i) + "." + branch + ".net." + rest,
                      b = P + "irrev_blocks." + str(i) + "." + branch + "." + rest;
    const bool first = ck.tensors.count(a) || !ck.tensors.count(b);
    twins.push_back(first ? b : a);
    return first ? a : b;
  };

  EncoderConfig& c = out->desc.config;
  c.attention_kind = AttentionKind::Lsh;
  c.dim = lc.u32("dim", 0, true);
  c.num_layers = lc.u32("depth", 0, true);
  c.num_heads = lc.u32("heads", 8);
  // ReformerLM's dim_head defaults to 64, Reformer's to dim / heads
  c.head_dim = lc.u32("dim_head", lm ? 64 : (c.num_heads ? c.dim / c.num_heads : 0));
  c.bucket_size = lc.u32("bucket_size", 64);
  c.num_hashes = lc.u32("n_hashes", lm ? 4 : 8);
  c.causal = lc.flag("causal", false) ? CausalMode::Causal : CausalMode::Bidirectional;
  c.ff_dim = c.dim * lc.u32("ff_mult", 4);
  c.max_seq_len = lc.u32("max_seq_len", 0, true);
  const bool one_value_head = lc.flag("one_value_head", false);
  c.kv_heads = one_value_head ? 1 : c.num_heads;
  c.norm_placement = NormPlacement::Reversible;
  c.reversible_merge = ReversibleMerge::Mean;  // torch.stack(x.chunk(2, dim=-1)).mean(dim=0)
  c.activation = act == "relu" ? Activation::Relu : Activation::GeluErf;
  c.positions = PositionKind::None;
  const uint32_t seed = lc.u32("rotation_seed", 0);
  if (lc.present("emb_dim") && lc.u32("emb_dim", 0) != c.dim)
    return "reformer-pytorch emb_dim != dim (the to_model_dim projection) is not supported: refused";
  bool absolute = false, fixed = false, tied = false, embeddings_out = false;
  if (lm) {
    c.vocab_size = lc.u32("num_tokens", 0, true);
    c.final_norm = true;
    absolute = lc.flag("absolute_position_emb", false);
    fixed = !absolute && lc.flag("fixed_position_emb", false);
    tied = lc.flag("weight_tie_embedding", false);
    embeddings_out = lc.flag("return_embeddings", false);
    c.head = embeddings_out ? HeadKind::None : HeadKind::LmLogits;
    if (absolute || fixed) c.positions = PositionKind::Learned;
    else c.rotary = Rotary::AdjacentPairs;  // layer_pos_emb: rotary positions on qk after hashing
  }
  if (!lc.error.empty()) return lc.error;
  if (c.num_heads == 0 || c.head_dim == 0) return "--config: heads and dim_head must be positive";
  if (c.bucket_size == 0 || c.bucket_size > Limits::kMaxBucketSize || c.num_hashes == 0 ||
      c.num_hashes > Limits::kMaxHashes)
    return "--config: bucket_size " + str(c.bucket_size) + " and n_hashes " + str(c.num_hashes) +
           " outside linfer's limits (1.." + str(Limits::kMaxBucketSize) + ", 1.." + str(Limits::kMaxHashes) +
           "): refused";
  if ((fixed && c.dim % 2) || (c.rotary != Rotary::None && c.head_dim % 2))
    return "--config: fixed sinusoidal positions need an even dim (dim_head for the rotary ones)";
  if (const std::string e = check_counts(c); !e.empty()) return e;
  out->notes.push_back(std::string(lm ? "ReformerLM" : "Reformer (takes embeddings)") +
                       (c.causal == CausalMode::Causal ? ", causal" : "") + ", bucket_size " + str(c.bucket_size) +
                       ", " + str(c.num_hashes) + " hashes" + (one_value_head ? ", one value head" : "") +
                       (lm ? absolute ? ", absolute positions" : fixed ? ", fixed sinusoidal positions" : ", rotary layer positions" : "") +
                       (tied ? ", tied (normalised) embedding" : "") + (embeddings_out ? ", returns embeddings" : "") +
                       (act == "relu" ? ", relu" : ""));
  out->notes.push_back("LSH rotations fixed at conversion (reformer-pytorch draws new ones at every forward "
                       "pass): splitmix64 normals, rotation_seed " + str(seed) + " + layer index");

  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, n = c.max_seq_len, F = c.ff_dim;
  if (lm) {
    d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
    if (absolute) {
      d.position_embedding = b.load("pos_emb.emb.weight", {n, D});
    } else if (fixed) {
      WeightView f = b.load("pos_emb.inv_freq", {D / 2});
      if (b.error.empty()) d.position_embedding = b.make({n, D}, reformer_sinusoids(static_cast<const float*>(f.data), n, D));
    }
    if (c.rotary != Rotary::None) {
      WeightView f = b.load("layer_pos_emb.inv_freq", {c.head_dim / 2});
      if (b.error.empty())
        d.rotary_table = b.make({n, c.head_dim}, reformer_sinusoids(static_cast<const float*>(f.data), n, c.head_dim));
    }
    d.final_norm.weight = b.load("norm.weight", {D});
    d.final_norm.bias = b.load("norm.bias", {D});
    if (c.head != HeadKind::None) {
      if (tied) {  // MatrixMultiply(token_emb.weight, transpose, normalize): rows of E / max(|row|, 1e-12)
        const float* e = static_cast<const float*>(d.token_embedding.data);
        std::vector<float> rows(e, e + (b.error.empty() ? size_t(c.vocab_size) * D : 0));
        for (size_t r = 0; r < rows.size() / std::max<size_t>(D, 1); ++r) {
          double s = 0.0;
          for (uint32_t j = 0; j < D; ++j) s += double(rows[r * D + j]) * rows[r * D + j];
          const float norm = std::max(float(std::sqrt(s)), 1e-12f);
          for (uint32_t j = 0; j < D; ++j) rows[r * D + j] /= norm;
        }
        if (b.error.empty()) d.head.out.weight = b.make({c.vocab_size, D}, std::move(rows));
        b.ignore("out.1.tensor");  // MatrixMultiply's reference to token_emb.weight (a second name)
      } else {
        d.head.out.weight = b.load("out.1.weight", {c.vocab_size, D});
        d.head.out.bias = b.load("out.1.bias", {c.vocab_size});
      }
    }
  }
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    l.attention_norm.weight = b.load(block_key(i, "f", "norm.weight"), {D});
    l.attention_norm.bias = b.load(block_key(i, "f", "norm.bias"), {D});
    l.q.weight = b.load(block_key(i, "f", "fn.toqk.weight"), {HD, D});
    l.v.weight = b.load(block_key(i, "f", "fn.tov.weight"), {c.kv_heads * c.head_dim, D});
    l.out.weight = b.load(block_key(i, "f", "fn.to_out.weight"), {D, HD});
    l.out.bias = b.load(block_key(i, "f", "fn.to_out.bias"), {D});
    l.feed_forward_norm.weight = b.load(block_key(i, "g", "norm.weight"), {D});
    l.feed_forward_norm.bias = b.load(block_key(i, "g", "norm.bias"), {D});
    l.fc1.weight = b.load(block_key(i, "g", "fn.fn.w1.weight"), {F, D});
    l.fc1.bias = b.load(block_key(i, "g", "fn.fn.w1.bias"), {F});
    l.fc2.weight = b.load(block_key(i, "g", "fn.fn.w2.weight"), {D, F});
    l.fc2.bias = b.load(block_key(i, "g", "fn.fn.w2.bias"), {D});
    const uint32_t half = uint32_t(lsh_half_buckets(c, n));
    l.rotations = b.make({c.num_hashes, c.head_dim, half},
                         reformer_rotations(seed, i, size_t(c.num_hashes) * c.head_dim * half));
  }
  if (!b.error.empty()) return b.error;
  for (const std::string& name : twins) b.ignore(name);  // (absent names are harmless)
  return b.check_all_used("reformer");
}

// ---------------------------------------------------------------------------------------------
// Hugging Face transformers BERT-family models (Longformer, BigBird): the same module names for the
// embeddings and the encoder layers, post-norm, an embedding LayerNorm, one sequence of token type 0.

std::vector<int64_t> tensor_shape(const Checkpoint& ck, const std::string& name) {
  auto it = ck.tensors.find(name);
  return it == ck.tensors.end() ? std::vector<int64_t>() : it->second.shape;
}

// The embedding tables' rows, read from the checkpoint (P: "longformer.", "bert." or "").
struct HfTables {
  uint64_t positions = 0;
  uint32_t types = 0;
};

// Reads what every BERT-family config.json says the same way (hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, layer_norm_eps, hidden_act with `default_act`) into c,
// and the vocabulary and table sizes from the checkpoint. Returns "" or a message.
std::string hf_bert_config(const Checkpoint& ck, LibraryConfig& lc, const std::string& P, const std::string& model,
                           const char* default_act, EncoderConfig& c, HfTables* t) {
  const auto words = tensor_shape(ck, P + "embeddings.word_embeddings.weight");
  const auto positions = tensor_shape(ck, P + "embeddings.position_embeddings.weight");
  const auto types = tensor_shape(ck, P + "embeddings.token_type_embeddings.weight");
  if (words.size() != 2) return "tensor '" + P + "embeddings.word_embeddings.weight' is missing";
  if (positions.size() != 2) return "tensor '" + P + "embeddings.position_embeddings.weight' is missing";
  if (types.size() != 2 || types[0] < 1) return "tensor '" + P + "embeddings.token_type_embeddings.weight' is missing";
  t->positions = uint64_t(std::clamp<int64_t>(positions[0], 0, UINT32_MAX));
  t->types = uint32_t(std::clamp<int64_t>(types[0], 0, UINT32_MAX));
  c.vocab_size = uint32_t(std::clamp<int64_t>(words[0], 0, UINT32_MAX));
  c.dim = lc.u32("hidden_size", 768);
  c.num_layers = lc.u32("num_hidden_layers", 12);
  c.num_heads = lc.u32("num_attention_heads", 12);
  c.ff_dim = lc.u32("intermediate_size", 3072);
  c.positions = PositionKind::Learned;
  c.embedding_norm = true;
  c.norm_placement = NormPlacement::Post;
  c.norm_eps = float(lc.present("layer_norm_eps") && lc.j.at("layer_norm_eps").is_number()
                         ? lc.j.at("layer_norm_eps").get<double>() : 1e-12);
  const std::string act = lc.text("hidden_act", default_act);
  if (act == "gelu") c.activation = Activation::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
  else if (act == "relu") c.activation = Activation::Relu;
  else return model + " hidden_act '" + act + "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)";
  if (!lc.error.empty()) return lc.error;
  if (c.num_heads == 0 || c.dim % c.num_heads) return "--config: hidden_size must be a multiple of num_attention_heads";
  c.head_dim = c.dim / c.num_heads;
  c.kv_heads = c.num_heads;
  return check_counts(c);
}

// The word embeddings; the position table with token type row 0 added to every row (token_type_ids
// are 0 for one sequence); the embedding LayerNorm.
void hf_bert_embeddings(Builder& b, const std::string& P, const HfTables& t, EncoderDescription& d) {
  const uint32_t D = d.config.dim, rows = uint32_t(t.positions);
  d.token_embedding = b.load(P + "embeddings.word_embeddings.weight", {d.config.vocab_size, D});
  WeightView pos = b.load(P + "embeddings.position_embeddings.weight", {rows, D});
  WeightView type = b.load(P + "embeddings.token_type_embeddings.weight", {t.types, D});
  if (!b.error.empty()) return;
  const float* p = static_cast<const float*>(pos.data);
  const float* t0 = static_cast<const float*>(type.data);
  std::vector<float> folded(p, p + size_t(rows) * D);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < D; ++i) folded[r * D + i] += t0[i];
  d.position_embedding = b.make({rows, D}, std::move(folded));
  d.embedding_norm = b.norm(P + "embeddings.LayerNorm", D);
  b.ignore(P + "embeddings.position_ids");  // buffers some versions save
  b.ignore(P + "embeddings.token_type_ids");
}

// One encoder layer (p ends with "encoder.layer.{i}."): attention.self.{query,key,value} (their
// biases when qkv_bias), attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}.
void hf_bert_layer(Builder& b, const std::string& p, uint32_t D, uint32_t F, bool qkv_bias, LayerWeights& l) {
  const std::pair<LinearWeights*, const char*> qkv[] = {{&l.q, "query"}, {&l.k, "key"}, {&l.v, "value"}};
  for (const auto& [lw, name] : qkv)
    *lw = qkv_bias ? b.linear(p + "attention.self." + name, D, D)
                   : LinearWeights{b.load(p + "attention.self." + name + ".weight", {D, D}), {}};
  l.out = b.linear(p + "attention.output.dense", D, D);
  l.attention_norm = b.norm(p + "attention.output.LayerNorm", D);
  l.fc1 = b.linear(p + "intermediate.dense", F, D);
  l.fc2 = b.linear(p + "output.dense", D, F);
  l.feed_forward_norm = b.norm(p + "output.LayerNorm", D);
}

// An LM head's output layer H + "decoder" (H: "lm_head." or "cls.predictions."): its weight is tied
// to the word embeddings and its bias is H + "bias", one parameter under two names; a file may keep
// either name or both. Returns "" or a message.
std::string hf_tied_decoder(Builder& b, const std::string& H, const std::string& model, EncoderDescription& d) {
  const uint32_t V = d.config.vocab_size, D = d.config.dim;
  d.head.out.weight = b.has(H + "decoder.weight") ? b.load(H + "decoder.weight", {V, D}) : d.token_embedding;
  const bool both = b.has(H + "bias") && b.has(H + "decoder.bias");
  if (both && b.identity(H + "bias") != b.identity(H + "decoder.bias"))
    return H + "bias and " + H + "decoder.bias are different tensors (they are one parameter in " + model + ")";
  d.head.out.bias = b.load(b.has(H + "bias") ? H + "bias" : H + "decoder.bias", {V});
  if (both) b.ignore(H + "decoder.bias");
  return "";
}

// ---------------------------------------------------------------------------------------------
// Hugging Face transformers Longformer: LongformerModel, LongformerForMaskedLM,
// LongformerForSequenceClassification (docs/converter.md, "longformer")

std::string map_longformer(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "Longformer checkpoints do not record heads, attention_window or layer_norm_eps: pass "
           "--config config.json (the model's Hugging Face configuration)";
  LibraryConfig lc;
  if (!lc.parse(config_json, {}, "--config")) return lc.error;
  if (lc.text("position_embedding_type", "absolute") != "absolute")
    return "Longformer position_embedding_type '" + lc.text("position_embedding_type", "") +
           "' is not supported (absolute)";
  const std::string P = ck.tensors.count("longformer.embeddings.word_embeddings.weight") ? "longformer." : "";
  EncoderConfig& c = out->desc.config;
  c.attention_kind = AttentionKind::SlidingWindow;
  HfTables tables;
  if (const std::string e = hf_bert_config(ck, lc, P, "Longformer", "gelu", c, &tables); !e.empty()) return e;
  const uint32_t pad = lc.u32("pad_token_id", 1);
  // Positions count from pad + 1 (create_position_ids_from_input_ids, inputs without padding).
  const uint64_t rows = tables.positions;
  if (rows < uint64_t(pad) + 2) return "Longformer position table has " + std::to_string(rows) + " rows, too few for pad_token_id " + str(pad);
  c.max_seq_len = uint32_t(rows - pad - 1);
  c.position_offset = pad + 1;
  c.head_activation = Activation::GeluErf;  // LongformerLMHead applies gelu whatever hidden_act says

  // attention_window: one even width for every layer (an int, or a list with one value per layer).
  std::vector<int64_t> windows;
  if (!lc.present("attention_window")) windows.assign(1, 512);
  else if (lc.j.at("attention_window").is_number_integer()) windows.assign(1, lc.j.at("attention_window").get<int64_t>());
  else if (lc.j.at("attention_window").is_array()) {
    for (const auto& w : lc.j.at("attention_window")) {
      if (!w.is_number_integer()) return "--config: attention_window must hold integers";
      windows.push_back(w.get<int64_t>());
    }
    if (windows.size() != c.num_layers)
      return "--config: attention_window has " + str(windows.size()) + " entries for " + str(c.num_layers) + " layers";
  } else {
    return "--config: attention_window must be an integer or a list of integers";
  }
  for (int64_t w : windows) {
    if (w != windows[0])
      return "--config: attention_window differs between layers (" + std::to_string(windows[0]) + " and " +
             std::to_string(w) + "); linfer models have one window for every layer";
    if (w <= 0 || w % 2 || w > 2 * int64_t(Limits::kMaxSeqLen))
      return "--config: attention_window " + std::to_string(w) + " must be even and positive";
  }
  c.window_radius = uint32_t(std::min<int64_t>(windows.empty() ? 0 : windows[0] / 2, c.max_seq_len));

  const bool classifier = ck.tensors.count("classifier.out_proj.weight") > 0;
  const bool lm = !classifier && (ck.tensors.count("lm_head.dense.weight") > 0);
  // Global rows: the first global_positions (a linfer key: HF takes a global_attention_mask per
  // call); LongformerForSequenceClassification's default is the first token.
  c.global_positions = lc.u32("global_positions", classifier ? 1 : 0);
  if (!lc.error.empty()) return lc.error;
  if (c.global_positions > c.max_seq_len)
    return "--config: global_positions " + str(c.global_positions) + " is more than the " + str(c.max_seq_len) + " positions";

  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, F = c.ff_dim;
  hf_bert_embeddings(b, P, tables, d);
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i) {
    LayerWeights& l = d.layers[i];
    const std::string p = P + "encoder.layer." + str(i) + ".";
    hf_bert_layer(b, p, D, F, true, l);
    if (c.global_positions) {
      l.q_global = b.linear(p + "attention.self.query_global", D, D);
      l.k_global = b.linear(p + "attention.self.key_global", D, D);
      l.v_global = b.linear(p + "attention.self.value_global", D, D);
    } else {  // no global rows: the global projections are never used
      for (const char* name : {"query_global", "key_global", "value_global"})
        for (const char* part : {".weight", ".bias"}) b.ignore(p + "attention.self." + name + part);
    }
  }
  std::string head_note = "hidden states";
  if (classifier) {
    c.head = HeadKind::Classifier;
    c.pooling = Pooling::First;
    auto w = tensor_shape(ck, "classifier.out_proj.weight");
    c.num_classes = w.size() == 2 ? uint32_t(std::clamp<int64_t>(w[0], 0, UINT32_MAX)) : 0;
    d.head.dense = b.linear("classifier.dense", D, D);
    d.head.out = b.linear("classifier.out_proj", c.num_classes, D);
    head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + tanh)";
  } else if (lm) {
    c.head = HeadKind::LmLogits;
    d.head.dense = b.linear("lm_head.dense", D, D);
    d.head.norm = b.norm("lm_head.layer_norm", D);
    if (const std::string e = hf_tied_decoder(b, "lm_head.", "Longformer", d); !e.empty()) return e;
    head_note = "masked-LM logits";
  } else {
    for (const char* name : {"pooler.dense.weight", "pooler.dense.bias"}) b.ignore(P + name);
    if (b.has(P + "pooler.dense.weight")) head_note += " (the pooler is dropped)";
  }
  if (!b.error.empty()) return b.error;
  out->notes.push_back("Longformer: post-norm, positions offset " + str(pad + 1) + " (inputs without padding), " +
                       "token type 0 folded into the position table, window radius " + str(c.window_radius) +
                       " (attention_window " + str(2 * c.window_radius) + "), global positions " +
                       str(c.global_positions) + (c.global_positions ? " with query/key/value_global" : "") +
                       ", " + head_note);
  return b.check_all_used("longformer");
}

// ---------------------------------------------------------------------------------------------
// Hugging Face transformers BigBird: BigBirdModel, BigBirdForMaskedLM, BigBirdForSequenceClassification
// (docs/converter.md, "bigbird")

std::string map_bigbird(const Checkpoint& ck, const std::string& config_json, MappedModel* out) {
  if (config_json.empty())
    return "BigBird checkpoints do not record heads, block_size or num_random_blocks: pass "
           "--config config.json (the model's Hugging Face configuration)";
  LibraryConfig lc;
  if (!lc.parse(config_json, {}, "--config")) return lc.error;
  if (const std::string type = lc.text("model_type", "big_bird"); type != "big_bird")
    return "--config: model_type '" + type + "' is not BigBird's (big_bird)";
  if (lc.flag("is_decoder", false) || lc.flag("add_cross_attention", false))
    return "--config: is_decoder / add_cross_attention (BigBirdForCausalLM, a decoder) are not supported: "
           "linfer's BigBird is a bidirectional encoder";
  const std::string type = lc.text("attention_type", "block_sparse");
  if (type != "block_sparse" && type != "original_full")
    return "--config: attention_type '" + type + "' is not supported (block_sparse, original_full)";
  const std::string P = ck.tensors.count("bert.embeddings.word_embeddings.weight") ? "bert." : "";
  EncoderConfig& c = out->desc.config;
  HfTables tables;
  if (const std::string e = hf_bert_config(ck, lc, P, "BigBird", "gelu_new", c, &tables); !e.empty()) return e;
  // Positions count from 0 (the position_ids buffer), whatever pad_token_id is.
  c.max_seq_len = uint32_t(tables.positions);
  c.position_offset = 0;
  c.head_activation = c.activation;  // BigBirdPredictionHeadTransform applies hidden_act
  if (lc.flag("rescale_embeddings", false)) c.embedding_scale = std::sqrt(float(c.dim));
  const bool qkv_bias = lc.flag("use_bias", true);
  const uint32_t block = lc.u32("block_size", 64), random = lc.u32("num_random_blocks", 3);
  if (!lc.error.empty()) return lc.error;

  // block_sparse: HF switches to full attention for inputs of at most (5 + 2 R) blocks, so a model
  // whose longest input is that short always runs full attention, and is converted as such.
  const uint64_t longest_blocks = block ? (uint64_t(c.max_seq_len) + block - 1) / block : 0;
  const bool sparse = type == "block_sparse" && longest_blocks > 5 + 2 * uint64_t(random);
  std::string attention_note = type == "original_full"
                                   ? "full attention (attention_type original_full)"
                                   : "full attention (block_sparse, but no input is longer than the " +
                                         str(size_t(5 + 2 * uint64_t(random)) * block) +
                                         " tokens up to which Hugging Face runs full attention)";
  if (type == "block_sparse" && block == 0) return "--config: block_size must be at least 1";
  if (sparse) {
    if (c.max_seq_len % block)
      return "the " + str(c.max_seq_len) + " positions (max_position_embeddings) are not a multiple of block_size " +
             str(block) + ": Hugging Face pads inputs to a multiple of block_size, so its longest inputs would not run";
    if (random > Limits::kMaxRandomBlocks)
      return "--config: num_random_blocks " + str(random) + " is more than linfer's " + str(Limits::kMaxRandomBlocks);
    c.attention_kind = AttentionKind::BlockSparse;
    c.block_size = block;
    c.global_blocks = 1;  // HF's first and last block
    c.num_random_blocks = random;
    attention_note = "block_sparse: blocks of " + str(block) + " rows, the first and last global, random blocks " +
                     str(random) + " per query block, all block 0 as in Hugging Face's eval mode; inputs up to " +
                     str(size_t(5 + 2 * random) * block) + " tokens run full attention";
  } else {
    c.attention_kind = AttentionKind::FullSoftmax;
  }

  EncoderDescription& d = out->desc;
  d.layers.resize(c.num_layers);
  Builder b(ck, out);
  const uint32_t D = c.dim, F = c.ff_dim;
  hf_bert_embeddings(b, P, tables, d);
  for (uint32_t i = 0; i < c.num_layers && b.error.empty(); ++i)
    hf_bert_layer(b, P + "encoder.layer." + str(i) + ".", D, F, qkv_bias, d.layers[i]);
  // The random blocks are drawn in training only: in eval mode every one is block 0 (transformers
  // >= 4.30), one table for every layer. (Its size is bounded by the position table's: the heads
  // and rows were checked against the checkpoint's tensors above.)
  if (sparse && random && b.error.empty()) {
    const WeightView zeros = b.make({c.num_heads, uint32_t(longest_blocks), random},
                                    std::vector<float>(size_t(c.num_heads) * longest_blocks * random, 0.0f));
    for (LayerWeights& l : d.layers) l.random_blocks = zeros;
  }
  std::string head_note = "hidden states";
  if (b.has("classifier.out_proj.weight")) {
    // BigBirdClassificationHead: the first token (CLS), dense, hidden_act (not tanh), out_proj.
    c.head = HeadKind::Classifier;
    c.pooling = Pooling::First;
    c.classifier_activation = c.activation;
    auto w = tensor_shape(ck, "classifier.out_proj.weight");
    c.num_classes = w.size() == 2 ? uint32_t(std::clamp<int64_t>(w[0], 0, UINT32_MAX)) : 0;
    d.head.dense = b.linear("classifier.dense", D, D);
    d.head.out = b.linear("classifier.out_proj", c.num_classes, D);
    head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + " +
                to_string(c.classifier_activation) + ")";
  } else if (b.has("cls.predictions.transform.dense.weight")) {
    c.head = HeadKind::LmLogits;
    d.head.dense = b.linear("cls.predictions.transform.dense", D, D);
    d.head.norm = b.norm("cls.predictions.transform.LayerNorm", D);
    if (const std::string e = hf_tied_decoder(b, "cls.predictions.", "BigBird", d); !e.empty()) return e;
    head_note = "masked-LM logits";
  }
  for (const char* name : {"pooler.weight", "pooler.bias"}) b.ignore(P + name);
  if (b.has(P + "pooler.weight")) head_note += " (the pooler is dropped)";
  if (!b.error.empty()) return b.error;
  out->notes.push_back("BigBird: post-norm, positions from 0, token type 0 folded into the position table, " +
                       attention_note + ", " + head_note);
  return b.check_all_used("bigbird");
}

}  // namespace

std::string detect_layout(const Checkpoint& ck) {
  int linfer = 0, lucidrains = 0, fairseq = 0, tatp22 = 0, performer = 0, longformer = 0, bigbird = 0, reformer = 0;
  for (const auto& [name, t] : ck.tensors) {
    if (name.find("attention.self.query_global.weight") != std::string::npos) ++longformer;
    if (name.find(".fn.toqk.weight") != std::string::npos) ++reformer;  // LSHSelfAttention's shared qk
    // BERT's names without Longformer's global projections (BigBird keeps BERT's module tree)
    if ((starts_with(name, "bert.encoder.layer.") || starts_with(name, "encoder.layer.")) &&
        name.find(".attention.self.query.weight") != std::string::npos)
      ++bigbird;
    if (starts_with(name, "layers.") || name == "token_embedding.weight") ++linfer;
    if (starts_with(name, "linformer.net.") || starts_with(name, "net.layers.") ||
        starts_with(name, "net.blocks.") || name == "token_emb.weight")
      ++lucidrains;
    if (starts_with(name, "encoder.sentence_encoder.") || starts_with(name, "decoder.sentence_encoder."))
      ++fairseq;
    if (starts_with(name, "linformer.seq.") || name == "to_token_emb.weight") ++tatp22;
    if (name.find("fast_attention.projection_matrix") != std::string::npos || starts_with(name, "performer.net.") ||
        starts_with(name, "performer.proj_updater."))
      ++performer;
  }
  // A PerformerLM also has token_emb (counted for lucidrains) and net.* keys: performer wins ties.
  if (performer > 0) return "performer";
  // A ReformerLM also has token_emb, a Reformer layers.* keys: reformer wins those ties too.
  if (reformer > 0) return "reformer";
  if (longformer > 0) return "longformer";
  if (bigbird > 0) return "bigbird";
  const int best = std::max(std::max(linfer, lucidrains), std::max(fairseq, tatp22));
  if (best == 0) return "";
  return best == linfer ? "linfer" : best == lucidrains ? "lucidrains" : best == fairseq ? "fairseq" : "tatp22";
}

std::string map_checkpoint(const std::string& layout, const Checkpoint& ck,
                           const std::string& config_json, MappedModel* out) {
  std::string err = layout == "linfer"       ? map_linfer(ck, config_json, out)
                    : layout == "lucidrains" ? map_lucidrains(ck, config_json, out)
                    : layout == "fairseq"    ? map_fairseq(ck, config_json, out)
                    : layout == "tatp22"     ? map_tatp22(ck, config_json, out)
                    : layout == "performer"  ? map_performer(ck, config_json, out)
                    : layout == "reformer"   ? map_reformer(ck, config_json, out)
                    : layout == "longformer" ? map_longformer(ck, config_json, out)
                    : layout == "bigbird"    ? map_bigbird(ck, config_json, out)
                                             : "unknown layout '" + layout + "'";
  if (!err.empty()) return err;
  return validate_description(out->desc);
}

}  // namespace linfer::convert
