// SPDX-License-Identifier: Apache-2.0
// What every layout mapper shares (tools/convert/layouts/<name>.cc, one file per source library):
// the Layout interface the registry lists, the Builder that fetches checkpoint tensors, the reader
// of a library's --config, and the bound on layer and head counts. map_checkpoint (layout.cc) runs
// the steps every layout has in common around a layout's own two steps.
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint.h"
#include "layouts.h"
#include "linfer/format/encoder.h"
#include "linfer/types/status.h"

namespace linfer::convert {

using Shape = std::vector<uint32_t>;

inline bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
inline std::string str(size_t i) { return std::to_string(i); }

// Fetches checkpoint tensors as f32 views with checked shapes, keeps one copy per storage view
// (so tensors that alias in the checkpoint alias in the model) and records which keys were used.
// The first fetch that fails (a missing tensor, a wrong shape) is its status; the fetches after it
// return empty views, so that a mapper fetches a layer's tensors in a row and looks once.
class Builder {
 public:
  Builder(const Checkpoint& ck, MappedModel* out);

  bool has(const std::string& name) const { return ck_.tensors.count(name) > 0; }
  bool ok() const { return status_.ok(); }
  const err::Status& status() const { return status_; }

  // The identity of the memory behind `name`: equal for tensors that are the same view.
  std::string identity(const std::string& name) const;

  // `name` with exactly `shape`, or an error. Returns an empty view on error.
  WeightView load(const std::string& name, const Shape& shape);
  WeightView load_optional(const std::string& name, const Shape& shape) {
    return has(name) ? load(name, shape) : WeightView();
  }
  // A linear layer with its bias: NAME.weight [out, in] and NAME.bias [out].
  LinearWeights linear(const std::string& name, uint32_t out, uint32_t in);
  // A layer norm: NAME.weight and NAME.bias, both [dim].
  NormWeights norm(const std::string& name, uint32_t dim);
  // Marks a key as deliberately ignored (buffers, unused biases).
  void ignore(const std::string& name) { used_.insert(name); }

  // A new tensor made by the mapper (a transpose, a stack of heads).
  WeightView make(const Shape& shape, std::vector<float> values);
  // Rows of several [r x c] tensors stacked into one [sum r x c] tensor (or [count, r, c]).
  WeightView stack(const std::vector<std::string>& names, const Shape& each, bool new_axis);
  WeightView transpose(const std::string& name, uint32_t rows, uint32_t cols);

  // Every checkpoint tensor must have been used or ignored: anything else means a variant the
  // mapper does not understand, which must not be dropped silently.
  err::Status check_all_used(const std::string& layout) const;

 private:
  // Counts `elements` f32 values against the budget; false (and the builder's status) past it.
  bool charge(uint64_t elements, const std::string& what);

  const Checkpoint& ck_;
  err::Status status_;
  uint64_t budget_bytes_ = 0, materialized_bytes_ = 0;
  MappedModel* out_;
  std::set<std::string> used_;
  std::map<std::string, std::pair<const void*, std::string>> by_identity_;
};

// A library's constructor arguments from --config, refusing keys it does not know. The first key
// read that is bad is its status (the readers then return their fallbacks), checked once after a
// group of reads.
// Only the forward declaration of nlohmann::json here: its full header costs seconds of compile time
// in every file that includes it, and only the layouts that read structured values include it.
struct LibraryConfig {
  LibraryConfig();
  ~LibraryConfig();
  // The parsed object (an empty object until parse succeeds); needs <nlohmann/json.hpp>.
  const nlohmann::json& values() const { return *j_; }
  bool ok() const { return status_.ok(); }
  const err::Status& status() const { return status_; }
  std::string source;
  std::string raw;  // the text as given ("" if none)

  // known empty: every key is accepted (a Hugging Face config.json holds many that do not matter).
  err::Status parse(const std::string& text, const std::set<std::string>& known, const std::string& src);
  bool present(const char* key) const;
  uint32_t u32(const char* key, uint32_t fallback, bool required = false);
  bool flag(const char* key, bool fallback);
  std::string text(const char* key, const std::string& fallback);

 private:
  // The first bad key's failure (later ones keep it).
  void refuse(const char* key, const char* what);

  std::unique_ptr<nlohmann::json> j_;
  err::Status status_;
};

// Layer and head counts come from the checkpoint or --config and size the vectors and loops of the
// mappers, so they are bounded before anything is allocated (validate_description checks the rest
// at the end).
err::Status check_counts(const EncoderConfig& c);

// One source library's mapping, in the two steps map_checkpoint runs around the shared ones.
// Members carry what configure decided (key prefixes, options) on to map_tensors.
class LayoutMapper {
 public:
  virtual ~LayoutMapper() = default;
  // Fills out->desc.config (and notes) from the configuration and the checkpoint's key names.
  // lc is --config, parsed when the layout reads a library's constructor arguments.
  virtual err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) = 0;
  // Then, with the counts checked and out->desc.layers sized: fetches every tensor through b.
  // Fails with a failure of its own; b's status and the every-tensor-used check come after.
  virtual err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) = 0;
};

// How a layout takes --config.
enum class ConfigUse {
  Library,   // required: the library's constructor arguments (config_keys; empty: any key)
  Optional,  // its own, when given (lc.raw); the layout knows where else to look
  Refused,   // the checkpoint carries its own; --config is an error
};

// A checkpoint layout as the registry lists it.
struct Layout {
  const char* name;
  // Whether a checkpoint key is one of this layout's (detect_layout counts them).
  bool (*owns_key)(const std::string& key);
  // Its keys also look like other layouts' (a PerformerLM's token_emb is lucidrains' too): one
  // owned key decides, before any count is compared (in registry order).
  bool decisive;
  ConfigUse config_use;
  // Library: the message when --config is missing; Refused: the message when it is given (both
  // LINFER_ERROR_INVALID_ARGUMENT).
  const char* config_message;
  std::set<std::string> config_keys;
  std::unique_ptr<LayoutMapper> (*make_mapper)();

  // How many of the checkpoint's keys are this layout's.
  int detect(const Checkpoint& ck) const;
};

// Layout::make_mapper for a mapper class.
template <class Mapper>
std::unique_ptr<LayoutMapper> make_mapper() {
  return std::make_unique<Mapper>();
}

// Every layout, in detection order (registry.cc).
const std::vector<const Layout*>& registered_layouts();
// The layout called `name`, or nullptr.
const Layout* find_layout(const std::string& name);

}  // namespace linfer::convert
