// SPDX-License-Identifier: Apache-2.0
// The tokenizer a model carries, through the C API: known ids for WordPiece and byte-level BPE,
// the size query and a short buffer, detokenize, and random and ill-formed UTF-8 (each input in a
// heap block of its exact size, so that the ASan build catches a read past it).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"
#include "test_tokenizers.h"
#include "test_util.h"
#include "tool_util.h"

using namespace linfer;

namespace {

struct Loaded {
  linfer_model* model = nullptr;
  explicit Loaded(const std::vector<uint8_t>& bytes) {
    REQUIRE(linfer_model_load_from_memory(bytes.data(), bytes.size(), &model) == LINFER_OK);
  }
  ~Loaded() { linfer_model_free(model); }
  std::vector<int32_t> ids(const std::string& text) const {
    size_t count = 0;
    REQUIRE(linfer_tokenize(model, text.data(), text.size(), nullptr, 0, &count) == LINFER_OK);
    std::vector<int32_t> out(count + 1, -7);
    size_t filled = 0;
    REQUIRE(linfer_tokenize(model, text.data(), text.size(), out.data(), out.size(), &filled) == LINFER_OK);
    CHECK(filled == count);
    CHECK(out[count] == -7);  // nothing written past the ids
    out.resize(count);
    return out;
  }
  std::string text(const std::vector<int32_t>& ids) const {
    size_t length = 0;
    REQUIRE(linfer_detokenize(model, ids.data(), ids.size(), nullptr, 0, &length) == LINFER_OK);
    std::string out(length, '\0');
    REQUIRE(linfer_detokenize(model, ids.data(), ids.size(), out.data(), out.size(), &length) == LINFER_OK);
    return out;
  }
};

using Ids = std::vector<int32_t>;

}  // namespace

TEST_CASE("WordPiece: normalizer, punctuation, continuations, [UNK], added tokens and the template") {
  auto t = testing::wordpiece_tokenizer();
  Loaded m(testing::model_with_tokenizer(t));
  CHECK(linfer_model_has_tokenizer(m.model) == 1);
  CHECK(m.ids("Unaffable, Caf\xC3\xA9!") == Ids{2, 5, 6, 7, 9, 11, 10, 3});
  CHECK(m.ids("hello [MASK] xyz") == Ids{2, 8, 4, 1, 3});
  CHECK(m.ids("\xE4\xB8\xAD\xE4\xB8\xAD") == Ids{2, 12, 12, 3});  // CJK characters set apart
  CHECK(m.ids("  \t\x01 hello\xE2\x80\x8B ") == Ids{2, 8, 3});    // control and format characters dropped
  CHECK(m.ids(std::string(101, 'a')) == Ids{2, 1, 3});            // longer than 100 characters
  CHECK(m.ids("") == Ids{2, 3});
  CHECK(m.text({2, 5, 6, 7, 9, 11, 3}) == "unaffable , cafe");
}

TEST_CASE("byte-level BPE: merges by rank, GPT-2's pattern, the added token") {
  auto t = testing::byte_bpe_tokenizer();
  Loaded m(testing::model_with_tokenizer(t));
  CHECK(m.ids("hello world") == Ids{259, 260, 'o', 'r', 'l', 'd'});
  CHECK(m.ids("<|endoftext|>hell's") == Ids{261, 258, '\'', 's'});
  CHECK(m.ids("a  \n") == Ids{'a', ' ', ' ', '\n'});  // a whitespace run at the end stays one piece: "  \n"
  CHECK(m.ids("\x80") == Ids{0xEF, 0xBF, 0xBD});      // ill-formed: U+FFFD's bytes
  CHECK(m.text({259, 260, 'o'}) == "hello wo");
}

TEST_CASE("SentencePiece unigram: whitespace, Viterbi, one [unk] per run") {
  auto t = testing::sentencepiece_tokenizer();
  Loaded m(testing::model_with_tokenizer(t));
  CHECK(m.ids("  ab   ab ") == Ids{6, 6});      // "▁ab▁ab": spaces squeezed, a dummy prefix
  CHECK(m.ids("aab") == Ids{3, 4, 4, 5});       // "▁aab": no "▁a", so ▁ a a b
  CHECK(m.ids("ab xyz c") == Ids{6, 3, 0, 7});  // x y z unknown: one [unk]
  CHECK(m.ids("   ") == Ids{});
  CHECK(m.ids(" \t ") == Ids{3, 0});  // no character map: a tab is not a space but an unknown character
  CHECK(m.text({6, 3, 0, 7, 1}) == "ab  \xE2\x81\x87  c");
}

TEST_CASE("Unigram (Hugging Face's): Strip, space runs, normalized <mask> with lstrip, Metaspace words") {
  auto t = testing::unigram_tokenizer();
  Loaded m(testing::model_with_tokenizer(t));
  CHECK(m.ids("ab  ab ") == Ids{0, 7, 7, 2});          // "ab▁ab": the run of spaces one "▁", the last one stripped
  CHECK(m.ids("ab <mask>") == Ids{0, 7, 9, 2});        // <mask> takes the space before it
  CHECK(m.ids("ab  <mask>") == Ids{0, 7, 4, 9, 2});    // but not the "▁" two spaces became
  CHECK(m.ids("<mask>ab") == Ids{0, 9, 7, 2});         // each side of it gets its own "▁"
  CHECK(m.ids("<s>x<pad>") == Ids{0, 0, 4, 3, 1, 2});  // raw added pieces; x unknown
  CHECK(m.ids("xy ab") == Ids{0, 4, 3, 7, 2});         // one [unk] for x y
  CHECK(m.ids("   ") == Ids{0, 2});
  CHECK(m.text({0, 7, 9, 7, 2}) == "ab ab");
}

TEST_CASE("tokenize: size query, short buffer, no tokenizer, bad arguments") {
  auto t = testing::wordpiece_tokenizer();
  Loaded m(testing::model_with_tokenizer(t));
  int32_t ids[2];
  size_t count = 0;
  CHECK(linfer_tokenize(m.model, "hello hello", 11, ids, 2, &count) == LINFER_ERROR_BUFFER_TOO_SMALL);
  CHECK(count == 4);
  CHECK(std::string(linfer_last_error()) == "the text has 4 tokens, the buffer room for 2");
  CHECK(linfer_tokenize(m.model, nullptr, 3, ids, 2, &count) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "model, out_count, utf8 or ids is null");
  CHECK(linfer_detokenize(m.model, Ids{99}.data(), 1, nullptr, 0, &count) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "id 99 at position 0 is not a piece of the tokenizer");
  CHECK(linfer_detokenize(m.model, Ids{2, -1}.data(), 2, nullptr, 0, &count) == LINFER_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(linfer_last_error()) == "id -1 at position 1 is not a piece of the tokenizer");
  Loaded plain(testing::model_bytes(testing::make_model(testing::small_config()).desc));
  CHECK(linfer_model_has_tokenizer(plain.model) == 0);
  CHECK(linfer_tokenize(plain.model, "a", 1, nullptr, 0, &count) == LINFER_ERROR_UNSUPPORTED);
  CHECK(std::string(linfer_last_error()) == "the model file carries no tokenizer");
}

TEST_CASE("tokenize never fails, crashes or reads past its input on random and ill-formed UTF-8") {
  auto wp = testing::wordpiece_tokenizer();
  auto bpe = testing::byte_bpe_tokenizer();
  auto sp = testing::sentencepiece_tokenizer();
  auto unigram = testing::unigram_tokenizer();
  // The fuzz corpus's SentencePiece model: nmt_nfkc's character map, byte fallback.
  const std::string corpus = std::string(LINFER_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_lfm/";
  const std::vector<uint8_t> seed = testing::required(tools::read_file(corpus + "tokenizer_sentencepiece_f32.lfm"));
  // and its Unigram tokenizer.json: the same character map, Hugging Face's pipeline, <mask>.
  const std::vector<uint8_t> unigram_seed = testing::required(tools::read_file(corpus + "tokenizer_unigram_f32.lfm"));
  Loaded models[] = {Loaded(testing::model_with_tokenizer(wp)),
                     Loaded(testing::model_with_tokenizer(bpe)),
                     Loaded(testing::model_with_tokenizer(sp)),
                     Loaded(testing::model_with_tokenizer(unigram)),
                     Loaded(seed),
                     Loaded(unigram_seed)};
  std::mt19937 rng(36);
  // Bytes biased towards UTF-8's lead and continuation bytes, spaces and ASCII.
  const uint8_t pool[] = {0x00, 0x20, 0x09, 'a',  'b',  'h',  'e',  'l',  'o',  '\'', ',',  '[',  0x80,
                          0xBD, 0xEF, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE4, 0xED, 0xEF, 0xF0, 0xF4, 0xF5,
                          0xFF, 0xA0, 0x9F, 0x8F, 0xB8, 0xAD, '<',  '>',  'm',  0xE2, 0x96, 0x81, 0xCC};
  for (int i = 0; i < 4000; ++i) {
    const size_t n = rng() % 64;
    std::unique_ptr<char[]> text(new char[n ? n : 1]);  // exactly n bytes: ASan sees a read past them
    for (size_t k = 0; k < n; ++k) text[k] = char(rng() % 4 ? pool[rng() % sizeof pool] : uint8_t(rng()));
    for (const Loaded& m : models) {
      size_t count = 0, filled = 0;
      REQUIRE(linfer_tokenize(m.model, text.get(), n, nullptr, 0, &count) == LINFER_OK);
      std::vector<int32_t> ids(count);
      REQUIRE(linfer_tokenize(m.model, text.get(), n, ids.data(), ids.size(), &filled) == LINFER_OK);
      REQUIRE(filled == count);
      for (int32_t id : ids) REQUIRE((id >= 0 && id < 400));
    }
  }
}
