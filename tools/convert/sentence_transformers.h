// SPDX-License-Identifier: Apache-2.0
// A sentence-transformers model folder beside config.json: modules.json lists the modules after the
// transformer (Pooling, Normalize), 1_Pooling/config.json says which pooling, and
// sentence_bert_config.json the longest input. linfer runs them as a pooled head (HeadKind::Pooled).
#pragma once

#include <string>

#include "linfer/format/encoder.h"
#include "linfer/types/status.h"

namespace linfer::convert {

struct SentencePooling {
  bool present = false;  // modules.json was found
  Pooling pooling = Pooling::Mean;
  bool normalize = false;
  uint32_t max_seq_length = 0;  // 0: not given
  std::string note;             // what was read, for the converter's summary
};

// Reads the sentence-transformers files in `dir` (the folder of config.json). No modules.json:
// present is false. A module or pooling mode linfer does not run is refused
// (LINFER_ERROR_UNSUPPORTED), naming the file and the key.
err::Result<SentencePooling> read_sentence_transformers(const std::string& dir);

// Makes the description's output the pooled vector (its head must be none: hidden states), and
// caps max_seq_len at max_seq_length.
err::Status apply_pooling(const SentencePooling& p, EncoderDescription* desc);

}  // namespace linfer::convert
