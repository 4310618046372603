// SPDX-License-Identifier: Apache-2.0
#include "model_options.h"
#include "linfer/format/kinds/linformer.h"

#include "kernels.h"

namespace linfer::rt {
bool projections_of(const EncoderDescription& d, DType dtype) {
  if (d.config.attention_kind != AttentionKind::Linformer) return false;
  using T = LinformerTensors;
  const WeightView& shared = d.kind_tensors[T::kSharedProj];
  bool any = shared.present() && shared.dtype == dtype;
  for (const LayerWeights& l : d.layers)
    for (const WeightView* w : {&l.kind_tensors[T::kProjK], &l.kind_tensors[T::kProjV]})
      any = any || (w->present() && w->dtype == dtype);
  return any;
}

bool int8_compression(const EncoderDescription& d, uint64_t max_len) {
  return projections_of(d, DType::I8) && !projections_of(d, DType::F16) && !projections_of(d, DType::F32) &&
         max_len <= 65536 && kernels::dense_dtype_built(DType::I8);
}

Status model_options_built(const EncoderDescription& d) {
  const EncoderConfig& c = d.config;
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  // The activations the dense layers apply: the feed-forward's, and the head's dense layer's.
  const bool head_dense = c.head != HeadKind::None && d.head.dense.weight.present();
  const Activation head = c.head == HeadKind::LmLogits ? c.head_activation : c.classifier_activation;
  auto uses = [&](Activation a) { return c.activation == a || (head_dense && head == a); };
  const char* option = nullptr;
  if (!kFloatProjectionsBuilt && linformer && !int8_compression(d, c.max_seq_len))
    option = "float_projections (Linformer projections not all int8, or n above 65536)";
  else if (!kPerHeadProjectionsBuilt && linformer_projection_groups(c) > 1)
    option = "per_head_projections (Linformer projection sharing none)";
  else if (!kSinusoidalBuilt && c.positions == PositionKind::Sinusoidal)
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
  if (!option) return {};
  return unsupported(std::string("model option ") + option +
                     " is not in this build (configure with -DLINFER_MODEL_OPTIONS including it)");
}

}  // namespace linfer::rt
