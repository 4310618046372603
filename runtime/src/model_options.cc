// SPDX-License-Identifier: Apache-2.0
#include "model_options.h"

#include "attention/attention_kind.h"

namespace linfer::rt {
Status model_options_built(const EncoderDescription& d) {
  const EncoderConfig& c = d.config;
  if (const AttentionKindInfo* kind = attention_kind_info(c.attention_kind); kind && kind->options_built)
    if (Status s = kind->options_built(d); !s.ok()) return s;
  // The activations the dense layers apply: the feed-forward's, and the head's dense layer's.
  const bool head_dense = c.head != HeadKind::None && d.head.dense.weight.present();
  const Activation head = c.head == HeadKind::LmLogits ? c.head_activation : c.classifier_activation;
  auto uses = [&](Activation a) { return c.activation == a || (head_dense && head == a); };
  const char* option = nullptr;
  if (!kSinusoidalBuilt && c.positions == PositionKind::Sinusoidal)
    option = "sinusoidal (sinusoidal positions)";
  else if (!kRotaryBuilt && c.rotary != Rotary::None)
    option = "rotary (rotary positions)";
  else if (!kPostNormBuilt && c.norm_placement == NormPlacement::Post)
    option = "post_norm (norm placement post)";
  else if (!kReversibleBuilt && c.norm_placement == NormPlacement::Reversible)
    option = "reversible (norm placement reversible)";
  else if (!kGeluTanhBuilt && uses(Activation::GeluTanh))
    option = "gelu_tanh (activation gelu_tanh)";
  else if (!kTanhBuilt && uses(Activation::Tanh))
    option = "tanh (activation tanh)";
  return option ? option_not_built(option) : Status();
}

Status option_not_built(const char* option) {
  return unsupported("model option {} is not in this build (configure with -DLINFER_MODEL_OPTIONS including it)",
                     option);
}

}  // namespace linfer::rt
