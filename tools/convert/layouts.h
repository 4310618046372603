// SPDX-License-Identifier: Apache-2.0
// Layout mappers: a checkpoint's tensors (by the source library's key names) -> the canonical
// encoder description. One mapper per source library (layouts/<name>.cc, listed in
// layouts/registry.cc); each fills EncoderConfig from the library's own hyperparameters and fetches
// every tensor with its expected shape, converting layouts (transposes, per-head stacking) on the
// way. layouts/layout.h is the interface they implement.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "linfer/format/encoder.h"
#include "linfer/types/status.h"

namespace linfer::convert {

struct MappedModel {
  EncoderDescription desc;
  std::vector<std::unique_ptr<std::vector<float>>> storage;  // owns the f32 data of the views
  uint64_t parameters = 0;
  std::vector<std::string> shared;  // "a = b": tensors that are one tensor in the model
  std::vector<std::string> notes;   // what the mapper decided, printed by the converter
};

// Guesses the layout from the key names: "linfer", "lucidrains", "fairseq", "tatp22", "performer", "reformer",
// "longformer", "bigbird" or "bert", or LINFER_ERROR_UNSUPPORTED when no layout owns a key. A Hugging
// Face config.json's model_type (config_json, "" if none) decides first: BERT's and BigBird's key
// names are the same.
err::Result<std::string> detect_layout(const Checkpoint& ck, const std::string& config_json = "");

// config_json: the --config file's text ("" if none). The model, or a one-line failure:
// LINFER_ERROR_INVALID_ARGUMENT (the layout's name, --config missing or refused),
// LINFER_ERROR_INVALID_MODEL (the checkpoint or its configuration), LINFER_ERROR_UNSUPPORTED (a
// variant linfer does not run).
err::Result<MappedModel> map_checkpoint(const std::string& layout, const Checkpoint& ck,
                                        const std::string& config_json);

}  // namespace linfer::convert
