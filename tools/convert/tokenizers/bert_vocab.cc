// SPDX-License-Identifier: Apache-2.0
// BERT's vocab.txt: one piece a line, the id its line number. It says nothing of the normalizer:
// linfer takes Hugging Face's BertTokenizerFast defaults for an uncased model (lower case, accents
// stripped, CJK split, "##" continuations, words of at most 100 characters), the template
// [CLS] ... [SEP] and the special tokens matched in the text; a cased model needs its
// tokenizer.json.
#include <sstream>

#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {

err::Result<TokenizerData> read_bert_vocab(const std::string& vocab_txt) {
  TokenizerData out;
  std::istringstream lines(vocab_txt);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) return err::invalid_model("line {} is empty", out.pieces.size() + 1);
    out.pieces.push_back(line);
  }
  TokenizerView& s = out.settings;
  s.kind = TokenizerKind::WordPiece;
  s.lowercase = s.strip_accents = true;
  s.continuing_prefix = "##";
  const int32_t unk = out.find("[UNK]"), cls = out.find("[CLS]"), sep = out.find("[SEP]");
  if (unk < 0 || cls < 0 || sep < 0) return err::invalid_model("a BERT vocabulary needs [UNK], [CLS] and [SEP]");
  s.unk_id = unk;
  s.prefix = {uint32_t(cls)};
  s.suffix = {uint32_t(sep)};
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    if (const int32_t id = out.find(special); id >= 0) s.added.push_back(uint32_t(id));
  return out;
}

}  // namespace linfer::convert
