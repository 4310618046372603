// SPDX-License-Identifier: Apache-2.0
// GPT-2's encoder.json (piece -> id) and vocab.bpe (merges by rank, after a "#version" line),
// as Hugging Face's GPT2Tokenizer reads them: byte-level BPE, <|endoftext|> matched in the text.
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "json_document.h"
#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {

err::Result<TokenizerData> read_gpt2_files(const std::string& encoder_json, const std::string& vocab_bpe) {
  nlohmann::json j = parse_json(encoder_json);
  if (j.is_discarded() || !j.is_object()) return err::invalid_model("encoder.json is not a JSON object");
  std::map<uint32_t, std::string> by_id;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_unsigned()) return err::invalid_model("encoder.json: '{}' has no id", it.key());
    const std::optional<std::string> bytes = byte_level_bytes(it.key());
    if (!bytes) return err::invalid_model("encoder.json: piece '{}' is not in GPT-2's byte-to-unicode map", it.key());
    if (!by_id.emplace(it.value().get<uint32_t>(), *bytes).second)
      return err::invalid_model("encoder.json: an id names two pieces");
  }
  TokenizerData out;
  uint32_t expect = 0;
  for (const auto& [id, piece] : by_id) {
    if (id != expect++) return err::invalid_model("encoder.json: the ids are not 0 to {}", by_id.size() - 1);
    out.pieces.push_back(piece);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  std::istringstream lines(vocab_bpe);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) return err::invalid_model("vocab.bpe: line '{}' is not two pieces", line);
    const std::optional<std::string> a = byte_level_bytes(line.substr(0, space)),
                                     b = byte_level_bytes(line.substr(space + 1));
    if (!a || !b) return err::invalid_model("vocab.bpe: merge '{}' is not in GPT-2's byte-to-unicode map", line);
    pairs.emplace_back(*a, *b);
  }
  out.settings.kind = TokenizerKind::ByteLevelBpe;
  if (err::Status s = merges_from_strings(pairs, &out); !s.ok()) return std::move(s).within("vocab.bpe: ");
  if (const int32_t eot = out.find("<|endoftext|>"); eot >= 0) out.settings.added = {uint32_t(eot)};
  return out;
}

}  // namespace linfer::convert
