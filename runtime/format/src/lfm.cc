// SPDX-License-Identifier: Apache-2.0
#include "linfer/format/lfm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <map>

#include "kinds/format_kind.h"
#include "linfer/types/aligned_alloc.h"
#include "linfer_generated.h"
#include "message.h"

namespace linfer {
namespace {

namespace fbs = linfer::fb;

// encoder.h mirrors the schema's enums by value: the reader casts one into the other.
#define LINFER_SAME_ENUM(E, V) static_assert(int(E::V) == int(fbs::E::V), #E "::" #V " differs from the schema")
LINFER_SAME_ENUM(DType, F32);
LINFER_SAME_ENUM(DType, F16);
LINFER_SAME_ENUM(DType, I8);
LINFER_SAME_ENUM(FeatureMap, Softmax);
LINFER_SAME_ENUM(FeatureMap, Relu);
LINFER_SAME_ENUM(NormPlacement, Pre);
LINFER_SAME_ENUM(NormPlacement, Post);
LINFER_SAME_ENUM(NormPlacement, Reversible);
LINFER_SAME_ENUM(PositionKind, None);
LINFER_SAME_ENUM(PositionKind, Learned);
LINFER_SAME_ENUM(PositionKind, Sinusoidal);
LINFER_SAME_ENUM(ProjectionPlacement, After);
LINFER_SAME_ENUM(ProjectionPlacement, Before);
LINFER_SAME_ENUM(ProjectionSharing, None);
LINFER_SAME_ENUM(ProjectionSharing, Headwise);
LINFER_SAME_ENUM(ProjectionSharing, KeyValue);
LINFER_SAME_ENUM(ProjectionSharing, Layerwise);
LINFER_SAME_ENUM(Activation, GeluErf);
LINFER_SAME_ENUM(Activation, GeluTanh);
LINFER_SAME_ENUM(Activation, Relu);
LINFER_SAME_ENUM(Activation, Tanh);
LINFER_SAME_ENUM(HeadKind, None);
LINFER_SAME_ENUM(HeadKind, LmLogits);
LINFER_SAME_ENUM(HeadKind, Classifier);
LINFER_SAME_ENUM(HeadKind, Pooled);
LINFER_SAME_ENUM(Pooling, First);
LINFER_SAME_ENUM(Pooling, Mean);
LINFER_SAME_ENUM(CausalMode, Bidirectional);
LINFER_SAME_ENUM(CausalMode, Causal);
LINFER_SAME_ENUM(Layout, RowMajor);
LINFER_SAME_ENUM(Layout, Panel16);
LINFER_SAME_ENUM(ReversibleMerge, Sum);
LINFER_SAME_ENUM(ReversibleMerge, Mean);
#undef LINFER_SAME_ENUM
// Each kind's enum value is the schema's (generated from the table of kinds).
#include "attention_kind_tables.inc"

// The configuration's fields every model has: in Config, in every version (a kind's own fields
// are its format file's, kinds/<kind>.cc).
#define LINFER_CONFIG_FIELD(name, VT) LINFER_CONFIG_FIELD_OF(Config, name, VT)
constexpr ConfigField kConfigFields[] = {
    LINFER_CONFIG_FIELD(attention_kind, VT_ATTENTION_KIND),
    LINFER_CONFIG_FIELD(causal, VT_CAUSAL),
    LINFER_CONFIG_FIELD(vocab_size, VT_VOCAB_SIZE),
    LINFER_CONFIG_FIELD(dim, VT_DIM),
    LINFER_CONFIG_FIELD(num_layers, VT_NUM_LAYERS),
    LINFER_CONFIG_FIELD(num_heads, VT_NUM_HEADS),
    LINFER_CONFIG_FIELD(head_dim, VT_HEAD_DIM),
    LINFER_CONFIG_FIELD(kv_heads, VT_KV_HEADS),
    LINFER_CONFIG_FIELD(ff_dim, VT_FF_DIM),
    LINFER_CONFIG_FIELD(max_seq_len, VT_MAX_SEQ_LEN),
    LINFER_CONFIG_FIELD(norm_placement, VT_NORM_PLACEMENT),
    LINFER_CONFIG_FIELD(embedding_norm, VT_EMBEDDING_NORM),
    LINFER_CONFIG_FIELD(final_norm, VT_FINAL_NORM),
    LINFER_CONFIG_FIELD(norm_eps, VT_NORM_EPS),
    LINFER_CONFIG_FIELD(positions, VT_POSITIONS),
    LINFER_CONFIG_FIELD(position_offset, VT_POSITION_OFFSET),
    LINFER_CONFIG_FIELD(sinusoidal_base, VT_SINUSOIDAL_BASE),
    LINFER_CONFIG_FIELD(embedding_scale, VT_EMBEDDING_SCALE),
    LINFER_CONFIG_FIELD(activation, VT_ACTIVATION),
    LINFER_CONFIG_FIELD(head, VT_HEAD),
    LINFER_CONFIG_FIELD(head_activation, VT_HEAD_ACTIVATION),
    LINFER_CONFIG_FIELD(pooling, VT_POOLING),
    LINFER_CONFIG_FIELD(num_classes, VT_NUM_CLASSES),
    LINFER_CONFIG_FIELD(rotary, VT_ROTARY),
    LINFER_CONFIG_FIELD(classifier_activation, VT_CLASSIFIER_ACTIVATION),
    LINFER_CONFIG_FIELD(reversible_merge, VT_REVERSIBLE_MERGE),
    LINFER_CONFIG_FIELD(normalize_output, VT_NORMALIZE_OUTPUT),
};
#undef LINFER_CONFIG_FIELD
static_assert(std::is_standard_layout_v<EncoderConfig> && sizeof(EncoderConfig) < 256, "offsets of one byte");
// The kinds' fields of versions 1 to 3 in Config (proj_len .. num_hashes): 15, and no more ever
// (a kind adds its fields to its own table).
constexpr size_t kLegacyKindConfigFields = 15;
static_assert(sizeof kConfigFields / sizeof kConfigFields[0] + kLegacyKindConfigFields ==
                  fbs::Config::VT_NORMALIZE_OUTPUT / 2 - 1,
              "every field of the schema's Config");

// ---------------------------------------------------------------------------------------------
// Writing

struct Writer {
  flatbuffers::FlatBufferBuilder fbb{1 << 16};
  std::vector<const WeightView*> blobs;  // in data-section order
  std::vector<uint64_t> blob_offsets;
  std::map<const void*, size_t> blob_index;  // shared data is stored once
  uint64_t data_size = 0;

  flatbuffers::Offset<fbs::Tensor> tensor(const WeightView& w) {
    if (!w.present()) return 0;
    size_t idx;
    auto it = blob_index.find(w.data);
    if (it != blob_index.end() && blobs[it->second]->bytes() == w.bytes()) {
      idx = it->second;
    } else {
      idx = blobs.size();
      blob_index[w.data] = idx;
      blobs.push_back(&w);
      data_size = (data_size + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
      blob_offsets.push_back(data_size);
      data_size += w.bytes();
    }
    auto shape = fbb.CreateVector(w.shape);
    flatbuffers::Offset<flatbuffers::Vector<float>> scales = 0;
    if (w.dtype == DType::I8 && w.scales) scales = fbb.CreateVector(w.scales, w.rows());
    flatbuffers::Offset<flatbuffers::Vector<int32_t>> sums = 0;
    if (w.channel_sums) sums = fbb.CreateVector(w.channel_sums, w.rows());
    flatbuffers::Offset<flatbuffers::Vector<float>> input_scales = 0;
    if (w.input_scales) input_scales = fbb.CreateVector(w.input_scales, w.shape.back());
    flatbuffers::Offset<flatbuffers::Vector<uint32_t>> f32_inputs = 0;
    flatbuffers::Offset<flatbuffers::Vector<float>> f32_input_weights = 0;
    if (w.f32_input_count) {
      f32_inputs = fbb.CreateVector(w.f32_inputs, w.f32_input_count);
      f32_input_weights = fbb.CreateVector(w.f32_input_weights, size_t(w.rows()) * w.f32_input_count);
    }
    return fbs::CreateTensor(fbb, fbs::DType(w.dtype), shape, blob_offsets[idx], w.bytes(), scales,
                             fbs::Layout(w.layout), w.panel_groups, sums, input_scales, f32_inputs, f32_input_weights);
  }
  flatbuffers::Offset<fbs::Linear> linear(const WeightView& weight, const WeightView& bias) {
    if (!weight.present() && !bias.present()) return 0;
    auto w = tensor(weight);
    auto b = tensor(bias);
    return fbs::CreateLinear(fbb, w, b);
  }
  flatbuffers::Offset<fbs::Linear> linear(const LinearWeights& l) { return linear(l.weight, l.bias); }
  flatbuffers::Offset<fbs::LayerNorm> norm(const NormWeights& n) {
    if (!n.weight.present() && !n.bias.present()) return 0;
    auto w = tensor(n.weight);
    auto b = tensor(n.bias);
    return fbs::CreateLayerNorm(fbb, w, b);
  }

  // Adds configuration fields to the table being built: at their version 4 places, or at their
  // Config places (`legacy`).
  void add_fields(const EncoderConfig& c, const ConfigField* f, size_t n, bool legacy) {
    for (; n; --n, ++f) {
      const uint8_t* from = reinterpret_cast<const uint8_t*>(&c) + f->offset;
      const flatbuffers::voffset_t at = legacy ? f->legacy_field : f->field;
      if (!at) continue;  // (none in versions 1 to 3: write_lfm refuses such a kind there)
      if (f->size() == 4) {
        uint32_t v;  // (a float's bits too)
        std::memcpy(&v, from, 4);
        fbb.AddElement<uint32_t>(at, v, 0);
      } else {
        fbb.AddElement<uint8_t>(at, *from, 0);
      }
    }
  }
  // A table's field and the offset of what it holds, written before the table is started.
  struct FieldOffset {
    flatbuffers::voffset_t field;
    flatbuffers::Offset<void> offset;
  };
  // Writes a kind's tensors of a layer (`layer`) or of the model, and lists them by their version
  // 4 fields or their legacy ones. `views` by Slot (kind_slot(i): the kind's tensor i). (A Linear:
  // its weight's slot and the next, its bias's.)
  void kind_tensors(const FormatKind& k, bool layer, const WeightView* const* views, bool legacy,
                    std::vector<FieldOffset>* out) {
    for (uint32_t i = 0; i < k.slot_count; ++i) {
      const KindSlot& s = k.slots[i];
      if (s.in_layer != layer || s.part == KindSlot::kBias || (legacy && !s.legacy_field)) continue;
      const WeightView& w = *views[size_t(kind_slot(i))];
      const flatbuffers::Offset<void> o =
          s.part == KindSlot::kTensor ? tensor(w).Union() : linear(w, *views[size_t(kind_slot(i + 1))]).Union();
      if (o.o) out->push_back({legacy ? s.legacy_field : s.field, o});
    }
  }
  void add_offsets(const std::vector<FieldOffset>& offsets) {
    for (const FieldOffset& f : offsets) fbb.AddOffset(f.field, f.offset);
  }
  // A kind's version 4 table: <Enum>Layer (`layer`), or <Enum>Kind with its configuration fields.
  flatbuffers::Offset<void> kind_table(const FormatKind& k, bool layer, const EncoderConfig& c,
                                       const WeightView* const* views) {
    std::vector<FieldOffset> offsets;
    kind_tensors(k, layer, views, /*legacy=*/false, &offsets);
    const flatbuffers::uoffset_t start = fbb.StartTable();
    if (!layer) add_fields(c, k.fields, k.field_count, /*legacy=*/false);
    add_offsets(offsets);
    return flatbuffers::Offset<void>(fbb.EndTable(start));
  }
};

}  // namespace

Status write_lfm(const EncoderDescription& d, const std::string& producer,
                 const std::vector<std::pair<std::string, std::string>>& metadata, std::vector<uint8_t>* out,
                 bool validate, uint32_t format_version) {
  if (validate)
    if (Status s = validate_description(d); !s.ok()) return s;
  if (format_version < 1 || format_version > kFormatVersion)
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "cannot write format version {}", format_version);
  Status refused;          // a weight the version asked for cannot hold
  std::string smoothed;    // the first weight with input scales: they need version 3
  std::string f32_inputs;  // the first weight with f32 input channels: they need version 5
  for_each_weight(d, [&](const std::string& name, const WeightView& w) {
    if (!w.present()) return;
    if (smoothed.empty() && w.input_scales) smoothed = name;
    if (f32_inputs.empty() && w.f32_input_count) f32_inputs = name;
    if (refused.ok() && format_version == 1 && w.layout != Layout::RowMajor)
      refused = err::failure(LINFER_ERROR_INVALID_ARGUMENT, "{} is in panel layout, which format version 1 cannot hold",
                             name);
  });
  if (!refused.ok()) return refused;
  if (!smoothed.empty() && format_version < 3)
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                        "{} carries input scales, which format version {} cannot hold (version 3 can)", smoothed,
                        format_version);
  if (!f32_inputs.empty() && format_version < 5)
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                        "{} keeps input channels in f32, which format version {} cannot hold (version 5 can)",
                        f32_inputs, format_version);
  // The oldest version that holds the description, of those at or below the one asked for, so
  // that older runtimes read what they can: 5 only for f32 input channels, else 4; asked for an
  // older one, 2 or 3 (input scales), or 1.
  const bool legacy = format_version < 4;
  if (format_version > 1 && legacy) format_version = smoothed.empty() ? 2 : 3;
  if (!legacy) format_version = f32_inputs.empty() ? 4 : 5;
  const EncoderConfig& c = d.config;
  const FormatKind* kind = kind_of(c);
  // The description's views by layer (0: the model's own) and slot (the kind's after the others).
  const size_t kSlots = size_t(Slot::Count) + (kind ? kind->slot_count : 0);
  std::vector<const WeightView*> views((d.layers.size() + 1) * kSlots);
  for_each_slot(d, [&](Slot slot, uint32_t layer, const std::string&, const WeightView& v) {
    const bool in_layer = is_kind_slot(slot) ? kind->slots[kind_slot_index(slot)].in_layer
                                             : slot >= Slot::QWeight && slot < Slot::FinalNormWeight;
    views[(in_layer ? layer + 1 : 0) * kSlots + size_t(slot)] = &v;
  });
  // (A kind newer than version 4 has fields or tensors versions 1 to 3 have no place for.)
  for (uint32_t i = 0; legacy && kind && i < kind->field_count + kind->slot_count; ++i)
    if (!(i < kind->field_count ? kind->fields[i].legacy_field : kind->slots[i - kind->field_count].legacy_field))
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "{} attention needs format version 4, not {}",
                          to_string(c.attention_kind), format_version);
  Writer w;
  auto& fbb = w.fbb;
  fbb.ForceDefaults(true);  // data_offset is patched after Finish, so it must be stored
  const flatbuffers::uoffset_t config_start = fbb.StartTable();
  w.add_fields(c, kConfigFields, sizeof kConfigFields / sizeof kConfigFields[0], /*legacy=*/false);
  if (legacy)  // (every kind's, as versions 1 to 3 held them: another kind's fields struct, its defaults)
    for (const FormatKind* const* k = kFormatKinds; *k; ++k) {
      EncoderConfig other;
      if (*k != kind && (*k)->defaults) set_attention_kind(other, (*k)->kind);
      w.add_fields(*k != kind && (*k)->defaults ? other : c, (*k)->fields, (*k)->field_count, true);
    }
  const flatbuffers::Offset<fbs::Config> config(fbb.EndTable(config_start));
  auto token_embedding = w.tensor(d.token_embedding);
  auto position_embedding = w.tensor(d.position_embedding);
  auto rotary_table = w.tensor(d.rotary_table);
  auto embedding_norm = w.norm(d.embedding_norm);
  // The kind's part of the model: its table (version 4), or fields of ModelFile (legacy_model).
  std::vector<Writer::FieldOffset> legacy_model;
  flatbuffers::Offset<void> kind_table = 0;
  if (legacy && kind)
    w.kind_tensors(*kind, false, views.data(), true, &legacy_model);
  else if (kind)
    kind_table = w.kind_table(*kind, false, c, views.data());
  std::vector<flatbuffers::Offset<fbs::Layer>> layers;
  for (size_t i = 0; i < d.layers.size(); ++i) {
    const LayerWeights& l = d.layers[i];
    const WeightView* const* layer_views = views.data() + (i + 1) * kSlots;
    auto q = w.linear(l.q), k = w.linear(l.k), v = w.linear(l.v), o = w.linear(l.out);
    std::vector<Writer::FieldOffset> legacy_attention;
    flatbuffers::Offset<void> layer_table = 0;
    if (legacy && kind)
      w.kind_tensors(*kind, true, layer_views, true, &legacy_attention);
    else if (kind)
      layer_table = w.kind_table(*kind, true, c, layer_views);
    fbs::AttentionBuilder ab(fbb);
    ab.add_q(q);
    ab.add_k(k);
    ab.add_v(v);
    ab.add_out(o);
    w.add_offsets(legacy_attention);
    ab.add_kind(flatbuffers::Offset<fbs::KindTable>(layer_table.o));
    auto attention = ab.Finish();
    auto an = w.norm(l.attention_norm);
    auto f1 = w.linear(l.fc1), f2 = w.linear(l.fc2);
    auto ff = fbs::CreateFeedForward(fbb, f1, f2);
    auto fn = w.norm(l.feed_forward_norm);
    layers.push_back(fbs::CreateLayer(fbb, attention, an, ff, fn));
  }
  auto layers_vec = fbb.CreateVector(layers);
  auto final_norm = w.norm(d.final_norm);
  flatbuffers::Offset<fbs::Head> head = 0;
  if (c.head != HeadKind::None) {
    auto dense = w.linear(d.head.dense);
    auto norm = w.norm(d.head.norm);
    auto o = w.linear(d.head.out);
    head = fbs::CreateHead(fbb, dense, norm, o);
  }
  std::vector<flatbuffers::Offset<fbs::KeyValue>> kvs;
  for (const auto& [key, value] : metadata)
    kvs.push_back(fbs::CreateKeyValue(fbb, fbb.CreateString(key), fbb.CreateString(value)));
  auto metadata_vec = fbb.CreateVector(kvs);
  auto producer_str = fbb.CreateString(producer);
  flatbuffers::Offset<fbs::Tokenizer> tokenizer = 0;
  if (const TokenizerView& t = d.tokenizer; t.present) {
    auto bytes = fbb.CreateVector(t.piece_bytes, t.piece_bytes_size);
    auto ends = fbb.CreateVector(t.piece_ends, t.num_pieces);
    flatbuffers::Offset<flatbuffers::Vector<uint32_t>> model_ids = 0;
    if (t.model_ids) model_ids = fbb.CreateVector(t.model_ids, t.num_pieces);
    auto merges = fbb.CreateVector(t.merges, 2 * size_t(t.num_merges));
    auto prefix = fbb.CreateVector(t.prefix), suffix = fbb.CreateVector(t.suffix);
    auto added = fbb.CreateVector(t.added);
    auto continuing = fbb.CreateString(t.continuing_prefix);
    flatbuffers::Offset<flatbuffers::Vector<float>> scores = 0;
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> types = 0, charsmap = 0;
    if (t.scores) scores = fbb.CreateVector(t.scores, t.num_pieces);
    if (t.piece_types) types = fbb.CreateVector(t.piece_types, t.num_pieces);
    if (t.charsmap) charsmap = fbb.CreateVector(t.charsmap, t.charsmap_size);
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> added_flags = 0;
    if (!t.added_flags.empty()) added_flags = fbb.CreateVector(t.added_flags);
    tokenizer =
        fbs::CreateTokenizer(fbb, fbs::TokenizerKind(t.kind), bytes, ends, model_ids, merges, t.unk_id, prefix, suffix,
                             added, t.clean_text, t.split_cjk, t.strip_accents, t.lowercase, continuing,
                             t.max_word_chars, scores, types, charsmap, t.add_dummy_prefix, t.remove_extra_whitespaces,
                             t.byte_fallback, added_flags, t.strip_right, t.space_runs, t.prepend_scheme);
  }
  fbs::ModelFileBuilder mb(fbb);
  mb.add_format_version(format_version);
  mb.add_producer(producer_str);
  mb.add_config(config);
  mb.add_data_offset(0);
  mb.add_data_size(w.data_size);
  mb.add_token_embedding(token_embedding);
  mb.add_position_embedding(position_embedding);
  mb.add_embedding_norm(embedding_norm);
  w.add_offsets(legacy_model);
  mb.add_layers(layers_vec);
  mb.add_final_norm(final_norm);
  mb.add_head(head);
  mb.add_metadata(metadata_vec);
  mb.add_rotary_table(rotary_table);
  mb.add_tokenizer(tokenizer);
  mb.add_kind(flatbuffers::Offset<fbs::KindTable>(kind_table.o));
  auto model = mb.Finish();
  fbs::FinishModelFileBuffer(fbb, model);

  const uint64_t data_offset = (fbb.GetSize() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  out->assign(data_offset + w.data_size, 0);
  std::memcpy(out->data(), fbb.GetBufferPointer(), fbb.GetSize());
  if (!fbs::GetMutableModelFile(out->data())->mutate_data_offset(data_offset))
    return err::internal_error("internal error: data_offset was not stored");
  for (size_t i = 0; i < w.blobs.size(); ++i)
    std::memcpy(out->data() + data_offset + w.blob_offsets[i], w.blobs[i]->data, w.blobs[i]->bytes());
  return {};
}

// ---------------------------------------------------------------------------------------------
// Reading

namespace {

// A generated table as the flatbuffers::Table it derives from (privately), to read its fields by
// their vtable offsets, as FlatBuffers' reflection does.
template <class T>
const flatbuffers::Table* as_table(const T* t) {
  return reinterpret_cast<const flatbuffers::Table*>(t);
}

// Where each slot is in the file: a field of the model, of a layer or its attention or
// feed-forward table, or of the head; a linear layer's or a norm's weight and bias are the fields
// of the Linear or LayerNorm table at that field. The slots every model has are listed here; a
// kind's slot is where its format file says (KindSlot): a field of its tables (version 4:
// kKindModel, kKindLayer) or of the model's or the attention's (versions 1 to 3). The reader goes
// through the slots with for_each_slot and this table.
struct SlotField {
  Slot slot;
  enum Table : uint8_t { kModel, kLayer, kAttention, kFeedForward, kHead, kKindModel, kKindLayer, kTables } table;
  uint8_t field;  // vtable offset
  enum Part : uint8_t { kTensor, kWeight, kBias } part;
};
static_assert(uint8_t(SlotField::kTensor) == uint8_t(KindSlot::kTensor) &&
                  uint8_t(SlotField::kWeight) == uint8_t(KindSlot::kWeight) &&
                  uint8_t(SlotField::kBias) == uint8_t(KindSlot::kBias),
              "a kind's slot's part is a SlotField's");
constexpr flatbuffers::voffset_t kWeightField = fbs::Linear::VT_WEIGHT, kBiasField = fbs::Linear::VT_BIAS;
static_assert(kWeightField == fbs::LayerNorm::VT_WEIGHT && kBiasField == fbs::LayerNorm::VT_BIAS,
              "a linear layer's and a norm's weight and bias at the same fields");
constexpr SlotField kSlotFields[] = {
    {Slot::TokenEmbedding, SlotField::kModel, fbs::ModelFile::VT_TOKEN_EMBEDDING, SlotField::kTensor},
    {Slot::PositionEmbedding, SlotField::kModel, fbs::ModelFile::VT_POSITION_EMBEDDING, SlotField::kTensor},
    {Slot::RotaryTable, SlotField::kModel, fbs::ModelFile::VT_ROTARY_TABLE, SlotField::kTensor},
    {Slot::EmbeddingNormWeight, SlotField::kModel, fbs::ModelFile::VT_EMBEDDING_NORM, SlotField::kWeight},
    {Slot::EmbeddingNormBias, SlotField::kModel, fbs::ModelFile::VT_EMBEDDING_NORM, SlotField::kBias},
    {Slot::QWeight, SlotField::kAttention, fbs::Attention::VT_Q, SlotField::kWeight},
    {Slot::QBias, SlotField::kAttention, fbs::Attention::VT_Q, SlotField::kBias},
    {Slot::KWeight, SlotField::kAttention, fbs::Attention::VT_K, SlotField::kWeight},
    {Slot::KBias, SlotField::kAttention, fbs::Attention::VT_K, SlotField::kBias},
    {Slot::VWeight, SlotField::kAttention, fbs::Attention::VT_V, SlotField::kWeight},
    {Slot::VBias, SlotField::kAttention, fbs::Attention::VT_V, SlotField::kBias},
    {Slot::OutWeight, SlotField::kAttention, fbs::Attention::VT_OUT, SlotField::kWeight},
    {Slot::OutBias, SlotField::kAttention, fbs::Attention::VT_OUT, SlotField::kBias},
    {Slot::AttentionNormWeight, SlotField::kLayer, fbs::Layer::VT_ATTENTION_NORM, SlotField::kWeight},
    {Slot::AttentionNormBias, SlotField::kLayer, fbs::Layer::VT_ATTENTION_NORM, SlotField::kBias},
    {Slot::Fc1Weight, SlotField::kFeedForward, fbs::FeedForward::VT_FC1, SlotField::kWeight},
    {Slot::Fc1Bias, SlotField::kFeedForward, fbs::FeedForward::VT_FC1, SlotField::kBias},
    {Slot::Fc2Weight, SlotField::kFeedForward, fbs::FeedForward::VT_FC2, SlotField::kWeight},
    {Slot::Fc2Bias, SlotField::kFeedForward, fbs::FeedForward::VT_FC2, SlotField::kBias},
    {Slot::FeedForwardNormWeight, SlotField::kLayer, fbs::Layer::VT_FEED_FORWARD_NORM, SlotField::kWeight},
    {Slot::FeedForwardNormBias, SlotField::kLayer, fbs::Layer::VT_FEED_FORWARD_NORM, SlotField::kBias},
    {Slot::FinalNormWeight, SlotField::kModel, fbs::ModelFile::VT_FINAL_NORM, SlotField::kWeight},
    {Slot::FinalNormBias, SlotField::kModel, fbs::ModelFile::VT_FINAL_NORM, SlotField::kBias},
    {Slot::HeadDenseWeight, SlotField::kHead, fbs::Head::VT_DENSE, SlotField::kWeight},
    {Slot::HeadDenseBias, SlotField::kHead, fbs::Head::VT_DENSE, SlotField::kBias},
    {Slot::HeadNormWeight, SlotField::kHead, fbs::Head::VT_NORM, SlotField::kWeight},
    {Slot::HeadNormBias, SlotField::kHead, fbs::Head::VT_NORM, SlotField::kBias},
    {Slot::HeadOutWeight, SlotField::kHead, fbs::Head::VT_OUT, SlotField::kWeight},
    {Slot::HeadOutBias, SlotField::kHead, fbs::Head::VT_OUT, SlotField::kBias},
};

// The place of a slot every model has (null: a kind's, or none).
const SlotField* shared_slot_field(Slot slot) {
  for (const SlotField& f : kSlotFields)
    if (f.slot == slot) return &f;
  return nullptr;
}

// The slot's tensor in the file, or null (absent, or its table is). `tables` by SlotField::Table.
const fbs::Tensor* file_tensor(const flatbuffers::Table* const* tables, const SlotField& f) {
  const flatbuffers::Table* holder = tables[f.table];
  if (holder && f.part != SlotField::kTensor) holder = holder->GetPointer<const flatbuffers::Table*>(f.field);
  if (!holder) return nullptr;
  return holder->GetPointer<const fbs::Tensor*>(f.part == SlotField::kTensor   ? f.field
                                                : f.part == SlotField::kWeight ? kWeightField
                                                                               : kBiasField);
}

// The place of a kind's tensor: a field of its own table (version 4), or of Attention or
// ModelFile (versions 1 to 3: `legacy`).
SlotField kind_slot_field(const KindSlot& s, bool legacy) {
  SlotField f{};
  f.table = legacy ? (s.in_layer ? SlotField::kAttention : SlotField::kModel)
                   : (s.in_layer ? SlotField::kKindLayer : SlotField::kKindModel);
  f.field = legacy ? s.legacy_field : s.field;
  f.part = SlotField::Part(s.part);
  return f;
}

// Versions 1 to 3 have a place for every kind's tensors (fields of ModelFile and Attention): one
// of another kind than `kind`, the model's, is refused.
Status other_kinds_tensor(const fbs::ModelFile* m, const FormatKind& kind) {
  const flatbuffers::Table* tables[SlotField::kTables] = {};
  tables[SlotField::kModel] = as_table(m);
  for (const FormatKind* const* k = kFormatKinds; *k; ++k)
    for (uint32_t i = 0; *k != &kind && i < (*k)->slot_count; ++i) {
      const KindSlot& s = (*k)->slots[i];
      if (!s.legacy_field) continue;
      const SlotField f = kind_slot_field(s, /*legacy=*/true);
      if (!s.in_layer && file_tensor(tables, f))
        return invalid_model("{} is present but the configuration does not use it", s.name);
      for (uint32_t l = 0; s.in_layer && l < m->layers()->size(); ++l) {
        const fbs::Layer* fl = m->layers()->Get(l);
        tables[SlotField::kAttention] = fl ? as_table(fl->attention()) : nullptr;
        if (file_tensor(tables, f))
          return invalid_model("{}.{} is present but the configuration does not use it", layer_name(l), s.name);
      }
    }
  return {};
}

constexpr const char* kCorrupt = "model file is corrupt: the FlatBuffers verifier rejected it (truncated or damaged)";

// Verifies a kind's version 4 table (ModelFile.kind, `layer` false, or Attention.kind), which the
// schema types as the empty KindTable: its fields as the kind's own table has them, as the
// FlatBuffers verifier would (the table itself it has verified). One loop for every kind: the
// schema's verifiers of every kind's tables were 1.2 KB of a microcontroller's code.
bool verify_kind_table(flatbuffers::Verifier& v, const flatbuffers::Table* t, const FormatKind& k, bool layer) {
  for (uint32_t i = 0; !layer && i < k.field_count; ++i) {
    const ConfigField& f = k.fields[i];
    const size_t size = f.size();
    if (!(size == 4 ? t->VerifyField<uint32_t>(v, f.field, 4) : t->VerifyField<uint8_t>(v, f.field, 1))) return false;
  }
  for (uint32_t i = 0; i < k.slot_count; ++i) {
    const KindSlot& s = k.slots[i];
    if (s.in_layer != layer || s.part == KindSlot::kBias) continue;
    if (!t->VerifyOffset(v, s.field)) return false;
    if (!(s.part == KindSlot::kTensor ? v.VerifyTable(t->GetPointer<const fbs::Tensor*>(s.field))
                                      : v.VerifyTable(t->GetPointer<const fbs::Linear*>(s.field))))
      return false;
  }
  return true;
}

// Reads configuration fields from `table`: at their version 4 places, or their Config places
// (`legacy`).
void read_fields(const flatbuffers::Table* table, const ConfigField* f, size_t n, bool legacy, EncoderConfig* cfg) {
  for (; n; --n, ++f)
    if (const flatbuffers::voffset_t at = legacy ? f->legacy_field : f->field; !at) {
      continue;                                               // (a field versions 1 to 3 do not have)
    } else if (const uint8_t* p = table->GetAddressOf(at)) {  // (absent: the default)
      uint8_t* to = reinterpret_cast<uint8_t*>(cfg) + f->offset;
      if (f->size() == 4) {
        const uint32_t v = flatbuffers::ReadScalar<uint32_t>(p);  // (a float's bits too)
        std::memcpy(to, &v, 4);
      } else {
        *to = f->kind == ConfigField::kBool ? *p != 0 : *p;
      }
    }
}

// The name of the slot `view` is (the reader's messages name their tensor only when one fails).
std::string slot_name(const EncoderDescription& d, const WeightView* view) {
  std::string name;
  for_each_weight(d, [&](const std::string& slot, const WeightView& w) {
    if (&w == view) name = slot;
  });
  return name;
}

struct Reader {
  uint32_t format_version;
  const uint8_t* data_section;
  uint64_t data_size;
  // The first failure: the view that failed, and what is wrong ("" when nothing failed yet).
  const WeightView* failed = nullptr;
  std::string err;
  // Where each tensor's bytes are, for the overlap check (check_aliasing).
  struct Extent {
    uint64_t offset, size;
    const fbs::Tensor* t;
    const WeightView* view;
  };
  std::vector<Extent> extents;

  void fail(const WeightView& w, std::string what) {
    failed = &w;
    err = std::move(what);
  }
  // Converts one tensor into `w` (a slot of the description being read), checking rank, dims, byte
  // size, offset and scales. Absent: w stays empty.
  void tensor(const fbs::Tensor* t, WeightView& w) {
    if (!t || !err.empty()) return;
    const auto* shape = t->shape();
    if (!shape || shape->size() == 0 || shape->size() > 4) return fail(w, ": tensor rank must be 1 to 4");
    const uint8_t dtype = uint8_t(t->dtype());
    if (dtype > uint8_t(DType::I8))
      return fail(w, message(LINFER_DETAILED(": unknown dtype {}", ": unknown dtype"), dtype));
    w.dtype = DType(dtype);
    w.shape.assign(shape->begin(), shape->end());
    const uint8_t layout = uint8_t(t->layout());
    if (layout > uint8_t(Layout::Panel16))
      return fail(w, message(LINFER_DETAILED(": unknown layout {}", ": unknown layout"), layout));
    w.layout = Layout(layout);
    w.panel_groups = t->panel_groups();
    if (w.layout == Layout::Panel16) {
      if (format_version < 2)
        return fail(w, message(LINFER_DETAILED(": panel layout needs format version 2, the file says {}",
                                               ": panel layout needs format version 2"),
                               format_version));
      if (w.shape.size() != 2 || w.panel_groups == 0 || w.shape[0] % w.panel_groups != 0)
        return fail(w, message(LINFER_DETAILED(": a panel-layout tensor needs 2 dimensions and panel groups that "
                                               "divide its rows (shape {}, {} groups)",
                                               ": a panel-layout tensor needs 2 dimensions and panel groups that "
                                               "divide its rows"),
                               w.shape, w.panel_groups));
    }
    for (uint32_t s : w.shape)
      if (s == 0)
        return fail(
            w, message(LINFER_DETAILED(": shape {} has a zero dimension", ": shape has a zero dimension"), w.shape));
    const uint64_t elements = w.elements();
    if (elements > Limits::kMaxTensorElements)
      return fail(w, message(LINFER_DETAILED(": shape {} is too large", ": shape is too large"), w.shape));
    const uint64_t bytes = w.bytes();
    if (t->size() != bytes)
      return fail(w, message(LINFER_DETAILED(": byte size {} does not match {} {} in {} layout ({} bytes)",
                                             ": byte size does not match its dtype, shape and layout"),
                             t->size(), to_string(w.dtype), w.shape, to_string(w.layout), bytes));
    if (t->offset() % kDataAlignment != 0)
      return fail(
          w, message(LINFER_DETAILED(": data offset {} is not 64-byte aligned", ": data offset is not 64-byte aligned"),
                     t->offset()));
    if (t->offset() > data_size || bytes > data_size - t->offset())
      return fail(w, message(LINFER_DETAILED(": data [{}, +{}) lies outside the data section ({} bytes)",
                                             ": data lies outside the data section"),
                             t->offset(), bytes, data_size));
    w.data = data_section + t->offset();
    extents.push_back({t->offset(), bytes, t, &w});
    if (const auto* sums = t->channel_sums(); sums && sums->size() > 0) {
      if (w.layout != Layout::Panel16 || w.dtype != DType::I8 || sums->size() != w.rows())
        return fail(w, message(LINFER_DETAILED(": channel sums belong to int8 panel-layout tensors, one per row "
                                               "({}), found {}",
                                               ": channel sums belong to int8 panel-layout tensors, one per row"),
                               w.rows(), sums->size()));
      w.channel_sums = sums->data();
    }
    if (w.dtype == DType::I8) {
      const auto* scales = t->scales();
      if (!scales || scales->size() != w.rows())
        return fail(w, message(LINFER_DETAILED(": int8 tensor needs {} scales, has {}",
                                               ": int8 tensor needs one scale per row"),
                               w.rows(), scales ? scales->size() : 0));
      // (The row, not the value: newlib-nano's printf, which std::to_string(float) uses, has no
      // floating point.)
      for (uint32_t i = 0; i < scales->size(); ++i)
        if (const float s = scales->Get(i); !std::isfinite(s) || s < 0.0f)
          return fail(w, message(LINFER_DETAILED(": the int8 scale of row {}{}", ": an int8 scale{}"), i,
                                 std::isfinite(s) ? " is negative" : " is not finite"));
      w.scales = scales->data();
    } else if (t->scales() && t->scales()->size() > 0) {
      return fail(w, ": only int8 tensors carry scales");
    }
    if (const auto* in = t->input_scales(); in && in->size() > 0) {
#if LINFER_BARE_METAL  // (code size: a microcontroller's models are converted without --calibrate)
      return fail(w, ": input scales (--calibrate) are not built into a bare-metal runtime");
#else
      if (format_version < 3)
        return fail(w, message(LINFER_DETAILED(": input scales need format version 3, the file says {}",
                                               ": input scales need format version 3"),
                               format_version));
      if (w.dtype != DType::I8 || w.shape.size() != 2)
        return fail(
            w, message(": input scales belong to 2-D int8 tensors, this one is {} {}", to_string(w.dtype), w.shape));
      if (in->size() != w.shape[1])
        return fail(w, message(LINFER_DETAILED(": needs one input scale per column ({}), has {}",
                                               ": needs one input scale per column"),
                               w.shape[1], in->size()));
      for (uint32_t i = 0; i < in->size(); ++i)
        if (const float s = in->Get(i); !(std::isfinite(s) && s > 0.0f))
          return fail(w, message(LINFER_DETAILED(": the input scale of column {}{}", ": an input scale{}"), i,
                                 std::isfinite(s) ? " is not positive" : " is not finite"));
      w.input_scales = in->data();
#endif
    }
    // (A bare-metal reader reads versions 1 to 4: f32 inputs come with --calibrate, like input scales.)
    if (!LINFER_BARE_METAL && t->f32_inputs() && t->f32_inputs()->size() > 0) {
      const auto* in = t->f32_inputs();
      const auto* columns = t->f32_input_weights();
      if (format_version < 5)
        return fail(w, message(": f32 input channels need format version 5, the file says {}", format_version));
      if (w.dtype != DType::I8 || w.shape.size() != 2)
        return fail(w, message(": f32 input channels belong to 2-D int8 tensors, this one is {} {}", to_string(w.dtype),
                               w.shape));
      if (in->size() > Limits::kMaxF32Inputs)
        return fail(w, message(": {} f32 input channels, at most {} are allowed", in->size(), Limits::kMaxF32Inputs));
      for (uint32_t i = 0; i < in->size(); ++i) {
        if (in->Get(i) >= w.shape[1])
          return fail(w, message(": f32 input channel {} is not below the column count {}", in->Get(i), w.shape[1]));
        for (uint32_t j = 0; j < i; ++j)
          if (in->Get(j) == in->Get(i)) return fail(w, message(": f32 input channel {} is listed twice", in->Get(i)));
      }
      if (!columns || columns->size() != w.rows() * in->size())
        return fail(w, message(": needs {} f32 input weights ({} columns of {} rows), has {}", w.rows() * in->size(),
                               in->size(), w.rows(), columns ? columns->size() : 0));
      for (uint32_t i = 0; i < columns->size(); ++i)
        if (!std::isfinite(columns->Get(i))) return fail(w, message(": f32 input weight {} is not finite", i));
      w.f32_inputs = in->data();
      w.f32_input_count = in->size();
      w.f32_input_weights = columns->data();
    } else if (!LINFER_BARE_METAL && t->f32_input_weights() && t->f32_input_weights()->size() > 0) {
      return fail(w, ": f32 input weights without f32 input channels");
    }
  }
  // Tensors may share bytes only as exact aliases (the writer stores shared weights once): same
  // offset, size and dtype, and for int8 the same scales. The loader widens f16/int8 data once
  // per offset, so a partial overlap or an alias with another dtype, size or scales would hand one
  // tensor a copy made for another (a heap overflow when it is smaller; found by fuzzing), and
  // allowing overlaps would let a small file describe far more distinct weight bytes than it has.
  // A failure names both tensors.
  Status check_aliasing(const EncoderDescription& d) {
    std::vector<const Extent*> order;
    for (const Extent& e : extents) order.push_back(&e);
    // By offset and size, then in reading order (a heap sort: std::stable_sort's merging is 1.5 KB
    // of a microcontroller's code).
    auto before = [](const Extent* a, const Extent* b) {
      return a->offset != b->offset ? a->offset < b->offset : a->size != b->size ? a->size < b->size : a < b;
    };
    std::make_heap(order.begin(), order.end(), before);
    std::sort_heap(order.begin(), order.end(), before);
    const Extent* group = nullptr;  // the first tensor at the start of the current byte range
    for (const Extent* e : order) {
      if (group && e->offset < group->offset + group->size) {
        auto same = [](const auto* a, const auto* b) {
          const size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
          return na == nb && (na == 0 || std::memcmp(a->data(), b->data(), na * sizeof(*a->data())) == 0);
        };
        const WeightView &v = *e->view, &g = *group->view;
        const bool same_scales = v.dtype != DType::I8 || (same(e->t->scales(), group->t->scales()) && e->t->scales());
        if (e->offset != group->offset || e->size != group->size || v.dtype != g.dtype || v.layout != g.layout ||
            v.panel_groups != g.panel_groups || !same(e->t->channel_sums(), group->t->channel_sums()) ||
            (!LINFER_BARE_METAL && (!same(e->t->input_scales(), group->t->input_scales()) ||
                                    !same(e->t->f32_inputs(), group->t->f32_inputs()) ||
                                    !same(e->t->f32_input_weights(), group->t->f32_input_weights()))) ||
            !same_scales)
          return invalid_model(
              LINFER_DETAILED("{}: data [{}, +{}) overlaps {} [{}, +{}) without being the same {} "
                              "tensor (shared weights must have the same offset, size, dtype, layout "
                              "and scales)",
                              "{}: data overlaps {} without being the same tensor (shared weights must "
                              "have the same offset, size, dtype, layout and scales)"),
              slot_name(d, e->view), e->offset, e->size, slot_name(d, group->view), group->offset, group->size,
              to_string(g.dtype));
        continue;
      }
      group = e;
    }
    return {};
  }
};

}  // namespace

Status parse_lfm(const uint8_t* data, size_t size, EncoderDescription* desc, LfmInfo* info) {
  if (size < 8)
    return invalid_model(
        LINFER_DETAILED("file is too small to be a linfer model ({} bytes)", "file is too small to be a linfer model"),
        size);
  if (!fbs::ModelFileBufferHasIdentifier(data)) {
    char id[5] = {0};
    std::memcpy(id, data + 4, 4);
    for (char& ch : id)
      if (ch && (ch < 32 || ch > 126)) ch = '?';
    return invalid_model("not a linfer model: file identifier is '{}', expected 'LFM1'", id);
  }
  // The Verifier bounds every table, vector and string read below to the buffer it is given.
  const size_t verify_size = size < FLATBUFFERS_MAX_BUFFER_SIZE ? size : FLATBUFFERS_MAX_BUFFER_SIZE - 1;
  flatbuffers::Verifier verifier(data, verify_size, /*max_depth=*/64, /*max_tables=*/1u << 20);
  if (!fbs::VerifyModelFileBuffer(verifier)) return invalid_model(kCorrupt);
  const fbs::ModelFile* m = fbs::GetModelFile(data);
  // (A bare-metal runtime reads versions 1 to 4: version 5's f32 input channels, like input
  // scales, come from calibration, which a microcontroller's models are converted without.)
  constexpr uint32_t kNewestRead = LINFER_BARE_METAL ? 4 : kFormatVersion;
  if (m->format_version() < 1 || m->format_version() > kNewestRead)
    return invalid_model(LINFER_DETAILED("unsupported format version {} (this runtime reads versions 1 to {})",
                                         "unsupported format version (this runtime reads versions 1 to 4)"),
                         m->format_version(), kNewestRead);
  const uint64_t data_offset = m->data_offset(), data_size = m->data_size();
  if (data_offset % kDataAlignment != 0)
    return invalid_model(
        LINFER_DETAILED("data section offset {} is not 64-byte aligned", "data section offset is not 64-byte aligned"),
        data_offset);
  if (data_offset > size || data_size > size - data_offset)
    return invalid_model(LINFER_DETAILED("data section [{}, +{}) extends past the end of the file ({} bytes)",
                                         "data section extends past the end of the file"),
                         data_offset, data_size, size);
  const fbs::Config* c = m->config();
  if (!c) return invalid_model("model has no configuration table");
  if (!m->layers()) return invalid_model("model has no layers");

  EncoderDescription& d = *desc;  // (filled in place: moving a whole description in was 0.6 KB of code)
  EncoderConfig& cfg = d.config;
  const flatbuffers::Table* config_table = as_table(c);
  read_fields(config_table, kConfigFields, sizeof kConfigFields / sizeof kConfigFields[0], false, &cfg);
  // The kind's fields: in its table (version 4), or (versions 1 to 3, the one legacy path) every
  // kind's in Config, so that a field of another kind is refused as before (another kind's fields
  // struct: read into a configuration of that kind, whose check says).
  const bool legacy = m->format_version() < 4;
  const FormatKind* kind = kind_of(cfg);
  reset_kind_fields(cfg);
  const flatbuffers::Table* kind_table = nullptr;  // version 4: the model's kind's <Enum>Kind table
  if (legacy) {
    for (const FormatKind* const* k = kFormatKinds; *k; ++k) {
      if (*k == kind || !(*k)->defaults) {
        read_fields(config_table, (*k)->fields, (*k)->field_count, true, &cfg);
        continue;
      }
      EncoderConfig other;
      set_attention_kind(other, (*k)->kind);
      read_fields(config_table, (*k)->fields, (*k)->field_count, true, &other);
      if (kind && (*k)->check_config)
        if (Status e = (*k)->check_config(other, false); !e.ok()) return std::move(e).within("invalid configuration: ");
    }
  } else if (kind && (kind_table = as_table(m->kind()))) {
    if (!verify_kind_table(verifier, kind_table, *kind, /*layer=*/false)) return invalid_model(kCorrupt);
    read_fields(kind_table, kind->fields, kind->field_count, false, &cfg);
  }
  if (m->layers()->size() != cfg.num_layers)
    return invalid_model(LINFER_DETAILED("the model has {} layers, the configuration says {}",
                                         "the model's layers are not as many as the configuration says"),
                         m->layers()->size(), cfg.num_layers);
  if (cfg.num_layers > Limits::kMaxLayers)
    return invalid_model(LINFER_DETAILED("invalid configuration: num_layers = {} is too large",
                                         "invalid configuration: num_layers is too large"),
                         cfg.num_layers);

#if !defined(__cpp_exceptions)
  // Without exceptions nothing catches a failed allocation: the layers' count comes from the file.
  if (!heap_has_room(uint64_t(cfg.num_layers) * sizeof(LayerWeights)))
    return err::failure(LINFER_ERROR_OUT_OF_MEMORY,
                        LINFER_DETAILED("out of memory allocating {} bytes for the description of {} layers",
                                        "out of memory allocating the description of the layers"),
                        uint64_t(cfg.num_layers) * sizeof(LayerWeights), cfg.num_layers);
#endif
  d.layers = std::vector<LayerWeights>(cfg.num_layers);  // (resize would compile a move of LayerWeights too)
  Reader r{m->format_version(), data + data_offset, data_size, nullptr, "", {}};
  // Every slot, in the slot list's order (the order of the reading's messages too).
  const flatbuffers::Table* tables[SlotField::kTables] = {as_table(m),         nullptr,    nullptr, nullptr,
                                                          as_table(m->head()), kind_table, nullptr};
  Status missing;  // a layer without its attention or feed-forward table, or with another kind's
  for_each_slot(d, [&](Slot slot, uint32_t layer, const std::string&, WeightView& w) {
    if (!r.err.empty() || !missing.ok()) return;
    if (slot == Slot::QWeight) {  // a layer's first slot: its tables
      const fbs::Layer* fl = m->layers()->Get(layer);
      if (!fl || !fl->attention() || !fl->feed_forward()) {
        missing = invalid_model("{}.attention or feed_forward is missing", layer_name(layer));
        return;
      }
      tables[SlotField::kLayer] = as_table(fl);
      tables[SlotField::kAttention] = as_table(fl->attention());
      tables[SlotField::kFeedForward] = as_table(fl->feed_forward());
      tables[SlotField::kKindLayer] = nullptr;
      if (const flatbuffers::Table* t = as_table(fl->attention()->kind()); !legacy && kind && t) {
        if (!verify_kind_table(verifier, t, *kind, /*layer=*/true)) {
          missing = invalid_model(kCorrupt);
          return;
        }
        tables[SlotField::kKindLayer] = t;
      }
    }
    SlotField f{};
    if (!is_kind_slot(slot)) {
      f = *shared_slot_field(slot);
    } else {  // (the model's kind's: visited only when this build's format has the kind)
      const KindSlot& ks = kind->slots[kind_slot_index(slot)];
      if (legacy && !ks.legacy_field) return;
      f = kind_slot_field(ks, legacy);
    }
    r.tensor(file_tensor(tables, f), w);
  });
  if (!missing.ok()) return missing;
  if (!r.err.empty()) return invalid_model(slot_name(d, r.failed) + r.err);
  if (legacy && kind)
    if (Status s = other_kinds_tensor(m, *kind); !s.ok()) return s;
  if (Status s = r.check_aliasing(d); !s.ok()) return s;
  if (const fbs::Tokenizer* t = m->tokenizer()) {
    TokenizerView& v = d.tokenizer;
    v.present = true;
#if LINFER_BARE_METAL && !LINFER_TOKENIZERS
    // A bare-metal build without tokenizers neither reads nor checks it (validate_description):
    // nothing uses it, linfer_tokenize refuses (3 KB of a microcontroller's code).
    (void)t;
#else
    v.kind = TokenizerKind(t->kind());
    if (!t->piece_bytes() || !t->piece_ends()) return invalid_model("tokenizer: no pieces");
    v.piece_bytes = t->piece_bytes()->data();
    v.piece_bytes_size = t->piece_bytes()->size();
    v.piece_ends = t->piece_ends()->data();
    v.num_pieces = t->piece_ends()->size();
    if (t->model_ids()) {
      if (t->model_ids()->size() != v.num_pieces)
        return invalid_model("tokenizer: {} model ids for {} pieces", t->model_ids()->size(), v.num_pieces);
      v.model_ids = t->model_ids()->data();
    }
    if (t->merges()) {
      if (t->merges()->size() % 2) return invalid_model("tokenizer: an odd number of merge ids");
      v.merges = t->merges()->data();
      v.num_merges = t->merges()->size() / 2;
    }
    v.unk_id = t->unk_id();
    if (t->prefix()) v.prefix.assign(t->prefix()->begin(), t->prefix()->end());
    if (t->suffix()) v.suffix.assign(t->suffix()->begin(), t->suffix()->end());
    if (t->added()) v.added.assign(t->added()->begin(), t->added()->end());
    v.clean_text = t->clean_text();
    v.split_cjk = t->split_cjk();
    v.strip_accents = t->strip_accents();
    v.lowercase = t->lowercase();
    if (t->continuing_prefix()) v.continuing_prefix = t->continuing_prefix()->str();
    v.max_word_chars = t->max_word_chars();
    if (t->scores()) {
      if (t->scores()->size() != v.num_pieces) return invalid_model("tokenizer: the scores are not one per piece");
      v.scores = t->scores()->data();
    }
    if (t->piece_types()) {
      if (t->piece_types()->size() != v.num_pieces)
        return invalid_model("tokenizer: the piece types are not one per piece");
      v.piece_types = t->piece_types()->data();
    }
    if (t->charsmap()) {
      v.charsmap = t->charsmap()->data();
      v.charsmap_size = t->charsmap()->size();
    }
    v.add_dummy_prefix = t->add_dummy_prefix();
    v.remove_extra_whitespaces = t->remove_extra_whitespaces();
    v.byte_fallback = t->byte_fallback();
    if (t->added_flags()) v.added_flags.assign(t->added_flags()->begin(), t->added_flags()->end());
    v.strip_right = t->strip_right();
    v.space_runs = t->space_runs();
    v.prepend_scheme = t->prepend_scheme();
#endif
  }
  if (Status s = validate_description(d); !s.ok()) return s;

  if (info) {
    info->format_version = m->format_version();
    info->data_offset = data_offset;
    info->data_size = data_size;
  }
  return {};
}

}  // namespace linfer
