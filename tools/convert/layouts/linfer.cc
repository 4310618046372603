// SPDX-License-Identifier: Apache-2.0
// linfer: the project's own layout (docs/converter.md): the canonical slot names as keys, the
// configuration from --config or the checkpoint's linfer_config metadata.
#include <algorithm>

#include "config_json.h"
#include "layout.h"

namespace linfer::convert {
namespace {

class LinferMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    std::string text = lc.raw;
    if (text.empty()) {
      auto it = ck.metadata.find("linfer_config");
      if (it == ck.metadata.end())
        return err::invalid_argument("the checkpoint carries no linfer_config; pass --config CONFIG.json");
      text = it->second;
    }
    err::Result<EncoderConfig> config = parse_linfer_config(text);
    if (!config.ok()) return err::Status(config.status()).within("configuration: ");
    if (err::Status s = check_counts(config.value()); !s.ok()) return std::move(s).within("configuration: ");
    out->desc.config = config.value();
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    for_each_weight(out->desc, [&](const std::string& slot, WeightView& w) {
      const std::string key = slot == "token_embedding" || slot == "position_embedding" ? slot + ".weight" : slot;
      if (!b.has(key) || !b.ok()) return;
      Shape shape;
      for (int64_t s : ck.tensors.at(key).shape) shape.push_back(uint32_t(std::max<int64_t>(0, s)));
      w = b.load(key, shape);  // shapes are checked against the configuration by validation
    });
    return {};
  }
};

bool linfer_owns_key(const std::string& name) {
  return starts_with(name, "layers.") || name == "token_embedding.weight";
}

}  // namespace

extern const Layout kLinferLayout = {"linfer", linfer_owns_key,          false, ConfigUse::Optional, nullptr,
                                     {},       make_mapper<LinferMapper>};

}  // namespace linfer::convert
