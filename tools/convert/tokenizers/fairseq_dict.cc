// SPDX-License-Identifier: Apache-2.0
// fairseq's dict.txt beside GPT-2's files (fairseq's RoBERTa models): each line "TOKEN COUNT
// [#fairseq:overwrite]", TOKEN a GPT-2 BPE id in decimal; the model's id of line i is 4 + i, after
// <s> 0, <pad> 1, </s> 2, <unk> 3. A BPE id the dict lacks becomes <unk>, and the text is wrapped
// in <s> ... </s>, as fairseq's RoBERTa hub encode() does; <|endoftext|> is not special there.
#include <sstream>

#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {

err::Status apply_fairseq_dict(const std::string& dict_txt, TokenizerData* out) {
  constexpr uint32_t kBos = 0, kEos = 2, kUnk = 3, kFirst = 4;
  out->model_ids.assign(out->pieces.size(), kUnk);
  std::istringstream lines(dict_txt);
  std::string line;
  for (uint32_t index = kFirst; std::getline(lines, line); ++index) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream fields(line);
    std::string token, count, flag;
    if (!(fields >> token >> count) || ((fields >> flag) && flag != "#fairseq:overwrite"))
      return err::invalid_model("dict.txt line {} is not 'TOKEN COUNT'", index - kFirst + 1);
    if (token.find_first_not_of("0123456789") != std::string::npos || token.size() > 9) continue;  // madeupword, <mask>
    const unsigned long id = std::stoul(token);
    if (id >= out->pieces.size())
      return err::invalid_model("dict.txt line {} names BPE id {} of {}", index - kFirst + 1, token,
                                out->pieces.size());
    if (out->model_ids[id] == kUnk) out->model_ids[id] = index;
  }
  out->settings.prefix = {kBos};
  out->settings.suffix = {kEos};
  out->settings.added.clear();
  return {};
}

}  // namespace linfer::convert
