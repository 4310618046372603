// SPDX-License-Identifier: Apache-2.0
// The steps every layout shares: the Builder, --config, the count bound, detection and
// map_checkpoint's frame around a layout's own steps.
#include "layout.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "json_document.h"

namespace linfer::convert {

using json = nlohmann::json;

Builder::Builder(const Checkpoint& ck, MappedModel* out) : ck_(ck), out_(out) {
  // What the mapper may materialize as f32: an honest checkpoint needs each stored value once,
  // plus the mapper's own copies (transposes, stacked heads), so 4x the storages as f32 and a
  // little slack is ample; views that overlap many times (a small hostile file) are refused
  // before they are copied.
  uint64_t stored = 0;
  for (const auto& [key, st] : ck.storages) stored += st.bytes / std::max<size_t>(1, dtype_size(st.dtype));
  budget_bytes_ = 4 * stored * sizeof(float) + (uint64_t(64) << 20);
}

std::string Builder::identity(const std::string& name) const {
  const SourceTensor& t = ck_.tensors.at(name);
  std::string id = t.storage_key + "@" + std::to_string(t.storage_offset);
  for (size_t i = 0; i < t.shape.size(); ++i)
    id += ":" + std::to_string(t.shape[i]) + "/" + std::to_string(t.strides[i]);
  return id;
}

WeightView Builder::load(const std::string& name, const Shape& shape) {
  if (!ok()) return {};
  auto it = ck_.tensors.find(name);
  if (it == ck_.tensors.end()) {
    status_ = err::invalid_model("tensor '{}' is missing", name);
    return {};
  }
  used_.insert(name);
  const SourceTensor& t = it->second;
  Shape got;
  for (int64_t s : t.shape) got.push_back(s >= 0 && s <= int64_t(UINT32_MAX) ? uint32_t(s) : 0);
  if (got != shape) {
    status_ = err::invalid_model("tensor '{}' has shape {}, expected {}", name, got, shape);
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
  err::Result<std::vector<float>> values = tensor_to_f32(ck_, t);
  if (!values.ok()) {
    status_ = err::Status(values.status()).within("tensor '" + name + "': ");
    return {};
  }
  auto data = std::make_unique<std::vector<float>>(std::move(values.value()));
  w.data = data->data();
  out_->parameters += data->size();
  by_identity_[id] = {w.data, name};
  out_->storage.push_back(std::move(data));
  return w;
}

LinearWeights Builder::linear(const std::string& name, uint32_t out, uint32_t in) {
  LinearWeights lw;
  lw.weight = load(name + ".weight", {out, in});
  lw.bias = load(name + ".bias", {out});
  return lw;
}

NormWeights Builder::norm(const std::string& name, uint32_t dim) {
  NormWeights nw;
  nw.weight = load(name + ".weight", {dim});
  nw.bias = load(name + ".bias", {dim});
  return nw;
}

WeightView Builder::make(const Shape& shape, std::vector<float> values) {
  if (!charge(values.size(), "a tensor built from the checkpoint")) return {};
  auto data = std::make_unique<std::vector<float>>(std::move(values));
  WeightView w;
  w.shape = shape;
  w.data = data->data();
  out_->storage.push_back(std::move(data));
  return w;
}

WeightView Builder::stack(const std::vector<std::string>& names, const Shape& each, bool new_axis) {
  std::vector<float> all;
  for (const std::string& n : names) {
    WeightView w = load(n, each);
    if (!ok()) return {};
    const float* p = static_cast<const float*>(w.data);
    all.insert(all.end(), p, p + w.elements());
  }
  Shape shape = each;
  if (new_axis)
    shape.insert(shape.begin(), uint32_t(names.size()));
  else
    shape[0] *= uint32_t(names.size());
  return make(shape, std::move(all));
}

WeightView Builder::transpose(const std::string& name, uint32_t rows, uint32_t cols) {
  WeightView w = load(name, {rows, cols});
  if (!ok()) return {};
  const float* p = static_cast<const float*>(w.data);
  std::vector<float> t(size_t(rows) * cols);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) t[c * rows + r] = p[r * cols + c];
  return make({cols, rows}, std::move(t));
}

err::Status Builder::check_all_used(const std::string& layout) const {
  for (const auto& [name, t] : ck_.tensors)
    if (!used_.count(name))
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "checkpoint tensor '{}' has no place in the {} layout with this configuration", name, layout);
  return {};
}

bool Builder::charge(uint64_t elements, const std::string& what) {
  materialized_bytes_ += elements * sizeof(float);
  if (materialized_bytes_ <= budget_bytes_) return true;
  status_ = err::invalid_model(
      "{}: the checkpoint's tensors would take more than {} MiB as f32, over 4 times its stored values (tensors "
      "overlapping the same storage many times); refused",
      what, budget_bytes_ >> 20);
  return false;
}

LibraryConfig::LibraryConfig() : j_(std::make_unique<json>(json::object())) {}
LibraryConfig::~LibraryConfig() = default;

bool LibraryConfig::present(const char* key) const { return j_->contains(key) && !j_->at(key).is_null(); }

err::Status LibraryConfig::parse(const std::string& text, const std::set<std::string>& known, const std::string& src) {
  source = src;
  raw = text;
  *j_ = parse_json(text);
  const json& j = *j_;
  if (j.is_discarded() || !j.is_object()) return status_ = err::invalid_model("{} is not a JSON object", source);
  for (const auto& item : j.items())
    if (!known.empty() && !known.count(item.key()))
      return status_ = err::invalid_model("{}: unknown key '{}'", source, item.key());
  return {};
}

void LibraryConfig::refuse(const char* key, const char* what) {
  if (ok()) status_ = err::invalid_model("{}: '{}' {}", source, key, what);
}

uint32_t LibraryConfig::u32(const char* key, uint32_t fallback, bool required) {
  if (!present(key)) {
    if (required && ok()) status_ = err::invalid_model("{}: missing '{}'", source, key);
    return fallback;
  }
  const json& v = j_->at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t(UINT32_MAX)) {
    refuse(key, "must be a non-negative integer");
    return fallback;
  }
  return uint32_t(v.get<int64_t>());
}

bool LibraryConfig::flag(const char* key, bool fallback) {
  if (!present(key)) return fallback;
  if (!j_->at(key).is_boolean()) {
    refuse(key, "must be true or false");
    return fallback;
  }
  return j_->at(key).get<bool>();
}

std::string LibraryConfig::text(const char* key, const std::string& fallback) {
  if (!present(key)) return fallback;
  if (!j_->at(key).is_string()) {
    refuse(key, "must be a string");
    return fallback;
  }
  return j_->at(key).get<std::string>();
}

// Without this bound, "num_layers": 4000000000 in a checkpoint's linfer_config made
// layers.resize() throw std::bad_alloc out of linfer-convert (tests/fuzz/regressions/fuzz_convert).
err::Status check_counts(const EncoderConfig& c) {
  if (c.num_layers > Limits::kMaxLayers)
    return err::invalid_model("the configuration has {} layers (at most {})", c.num_layers, Limits::kMaxLayers);
  if (c.num_heads > Limits::kMaxHeads)
    return err::invalid_model("the configuration has {} heads (at most {})", c.num_heads, Limits::kMaxHeads);
  return {};
}

int Layout::detect(const Checkpoint& ck) const {
  int owned = 0;
  for (const auto& [name, t] : ck.tensors) owned += owns_key(name) ? 1 : 0;
  return owned;
}

const Layout* find_layout(const std::string& name) {
  for (const Layout* layout : registered_layouts())
    if (name == layout->name) return layout;
  return nullptr;
}

// A decisive layout with any key of its own wins (the first in registry order); otherwise the one
// owning the most keys (ties: the first in registry order).
err::Result<std::string> detect_layout(const Checkpoint& ck, const std::string& config_json) {
  if (!config_json.empty()) {
    const json j = parse_json(config_json);
    if (j.is_object() && j.contains("model_type") && j["model_type"].is_string()) {
      static const std::map<std::string, const char*> kByModelType = {
          {"bert", "bert"},       {"roberta", "bert"},     {"xlm-roberta", "bert"},     {"camembert", "bert"},
          {"distilbert", "bert"}, {"big_bird", "bigbird"}, {"longformer", "longformer"}};
      auto it = kByModelType.find(j["model_type"].get<std::string>());
      if (it != kByModelType.end()) return std::string(it->second);
    }
  }
  const Layout* best = nullptr;
  int best_count = 0;
  for (const Layout* layout : registered_layouts()) {
    const int count = layout->detect(ck);
    if (layout->decisive && count > 0) return std::string(layout->name);
    if (!layout->decisive && count > best_count) best = layout, best_count = count;
  }
  if (!best) return err::unsupported("cannot detect the layout from the key names; pass --layout");
  return std::string(best->name);
}

err::Result<MappedModel> map_checkpoint(const std::string& layout_name, const Checkpoint& ck,
                                        const std::string& config_json) {
  const Layout* layout = find_layout(layout_name);
  if (!layout) return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "unknown layout '{}'", layout_name);
  LibraryConfig lc;
  lc.raw = config_json;
  switch (layout->config_use) {
    case ConfigUse::Library:
      if (config_json.empty()) return err::invalid_argument(layout->config_message);
      if (err::Status s = lc.parse(config_json, layout->config_keys, "--config"); !s.ok()) return s;
      break;
    case ConfigUse::Refused:
      if (!config_json.empty()) return err::invalid_argument(layout->config_message);
      break;
    case ConfigUse::Optional:
      break;
  }
  MappedModel out;
  std::unique_ptr<LayoutMapper> mapper = layout->make_mapper();
  if (err::Status s = mapper->configure(ck, lc, &out); !s.ok()) return s;
  if (err::Status s = check_counts(out.desc.config); !s.ok()) return s;
  out.desc.layers.resize(out.desc.config.num_layers);
  Builder b(ck, &out);
  if (err::Status s = mapper->map_tensors(ck, b, &out); !s.ok()) return s;
  if (!b.ok()) return b.status();
  if (err::Status s = b.check_all_used(layout->name); !s.ok()) return s;
  if (err::Status s = validate_description(out.desc); !s.ok()) return s;
  return out;
}

}  // namespace linfer::convert
