// SPDX-License-Identifier: Apache-2.0
// GiveTake's part of the format: p learned global tokens, and an optional depthwise convolution
// per layer.
#include "format_kind.h"
#include "linfer/format/kinds/give_take.h"

namespace linfer {
namespace {

Status check_config(const EncoderConfig& c, bool own) {
  if (!own)
    return c.num_global_tokens == 0 ? Status() : invalid_model("num_global_tokens applies to givetake attention only");
  Status e;
  out_of_range(&e, "num_global_tokens", c.num_global_tokens, 1, Limits::kMaxGlobalTokens);
  return e;
}

const ConfigField kFields[] = {LINFER_CONFIG_FIELD_OF(GiveTakeKind, num_global_tokens, VT_NUM_GLOBAL_TOKENS)};

using T = GiveTakeTensors;
constexpr KindSlot kSlots[] = {
    LINFER_MODEL_SLOT("global_tokens", T::kGlobalTokens, GiveTakeKind, VT_GLOBAL_TOKENS, kMatrix),
    LINFER_LAYER_SLOT("conv_weight", T::kConvWeight, GiveTakeLayer, VT_CONV_WEIGHT, kTensor, kF32),
    LINFER_LAYER_SLOT("conv_bias", T::kConvBias, GiveTakeLayer, VT_CONV_BIAS, kTensor, kF32),
};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

Expect expected(const EncoderConfig& c, const LayerWeights*, const KindSlot& slot) {
  Expect e;
  if (!slot.in_layer) {  // the global tokens
    e.dims[0] = c.num_global_tokens;
    e.dims[1] = c.dim;
    e.rank = 2;
  }
  return e;
}

// The convolution, optional: [dim, kernel] (odd kernel) and [dim], f32. (Bounds, not one shape.)
bool check_slot(const EncoderConfig& c, const KindSlot& slot, const std::string& name, const WeightView& w,
                Status* err) {
  if (!slot.in_layer) return false;
  const uint32_t D = c.dim;
  *err = {};
  if (!w.present()) return true;
  if (slot.index == T::kConvWeight &&
      (w.shape.size() != 2 || w.shape[0] != D || w.shape[1] % 2 == 0 || w.shape[1] > Limits::kMaxConvKernel))
    *err = invalid_model(
        LINFER_DETAILED("{} has shape {}, expected [{}, odd kernel <= {}]", "{} is not [dim, odd kernel <= 1023]"),
        name, w.shape, D, Limits::kMaxConvKernel);
  else if (slot.index == T::kConvBias && (w.shape.size() != 1 || w.shape[0] != D))
    *err = invalid_model(LINFER_DETAILED("{} has shape {}, expected [{}]", "{} is not [dim]"), name, w.shape, D);
  else if (w.dtype != DType::F32)
    *err = invalid_model("{} must be f32", name);
  return true;
}

}  // namespace

extern const FormatKind kGiveTakeFormat = {
    AttentionKind::GiveTake,
    /*causal=*/false,
    /*rotary=*/false,
    /*queries_are_keys=*/false,
    /*fields=*/kFields,
    /*field_count=*/sizeof kFields / sizeof kFields[0],
    /*defaults=*/nullptr,
    /*defaults_size=*/0,
    /*check_config=*/check_config,
    /*slots=*/kSlots,
    /*slot_count=*/sizeof kSlots / sizeof kSlots[0],
    /*expected=*/expected,
    /*check_slot=*/check_slot,
    /*check_layers=*/nullptr,
    /*check_values=*/nullptr,
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(nullptr),
};

}  // namespace linfer
