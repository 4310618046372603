#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_corpus.py OUT [LINES]: a reproducible multilingual test corpus, one sample a line: Latin
with accents, Cyrillic, Greek, Arabic and Hebrew, Devanagari, Thai, CJK, Korean, combining marks,
emoji with ZWJ sequences, control characters, long words, runs of whitespace, numbers,
punctuation, contractions, the special tokens, 400 stress lines first (random characters of
Unicode 3.2: combining marks, CJK and its compatibility ideographs, rare punctuation, symbols,
full-width forms), a few lines of ill-formed UTF-8 (which the
references see as U+FFFD per maximal subpart, as linfer reads it). Characters come from Unicode
blocks older than 9.0, so that the references' and linfer's Unicode tables agree. Last, 450
grapheme lines for SentencePiece's character map as Hugging Face applies it (one grapheme cluster
at a time): letters followed by combining marks, conjoining Hangul jamo, emoji with modifiers and
ZWJ, regional indicators, U+2581 and runs of whitespace, XLM-RoBERTa's special tokens as they are
and in full-width forms (which the map makes ASCII)."""
import random
import sys

out, lines = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12000
rng = random.Random(36)

WORDS = {
    "latin": "the quick brown fox jumps over lazy dog naïve café résumé façade Ångström straße "
             "Zürich coöperate jalapeño piñata São Paulo Kraków Łódź garçon œuvre Æsir İstanbul "
             "ﬁnance ǅemal ΣΊΣΥΦΟΣ".split(),
    "cyrillic": "Привет мир съешь ещё этих мягких французских булок да выпей же чаю Ёлка ЯНДЕКС".split(),
    "greek": "Γειά σου κόσμε ξεσκεπάζω την ψυχοφθόρα βδελυγμία ΟΔΥΣΣΕΥΣ ἀρχή".split(),
    "arabic": "مرحبا بالعالم اللغة العربية جميلة كتاب مَكْتَبَة ١٢٣٤".split(),
    "hebrew": "שלום עולם עִבְרִית ספר בְּרֵאשִׁית".split(),
    "devanagari": "नमस्ते दुनिया हिन्दी भाषा क्षत्रिय ज्ञान १२३".split(),
    "thai": "สวัสดีชาวโลก ภาษาไทย กรุงเทพมหานคร".split(),
    "cjk": "你好世界 中文分词 漢字 日本語のテキスト カタカナ ひらがな 東京 北京大学".split(),
    "korean": "안녕하세요 세계 한국어 텍스트 서울특별시".split(),
    "emoji": ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇩🇪", "✌🏿", "🙂🙃", "⌚", "☕"],
    "numbers": ["0", "42", "3.14159", "1,000,000", "2024-01-01", "½", "²", "Ⅻ", "٣", "१०"],
    "punct": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["…", "—", "«", "»", "¿", "¡", "“", "”", "„", "·", "§"],
    "contractions": ["don't", "it's", "we're", "they've", "I'm", "you'll", "he'd", "O'Neil", "'S", "''"],
    "special": ["[CLS]", "[SEP]", "[MASK]", "<|endoftext|>", "[UNK]"],
}
SPACES = [" ", "  ", "   ", "\t", " \t ", "\u00a0", "\u3000", "\u2003", "      "]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\u200b", "\u200d", "\u200e", "\ufeff", "\r", "\x0b", "\x0c"]
MARKS = ["\u0301", "\u0308", "\u0323", "\u0327", "\u20dd", "\u0951"]


def word():
    kind = rng.choice(list(WORDS))
    w = rng.choice(WORDS[kind])
    r = rng.random()
    if r < 0.05:
        w += rng.choice(MARKS)
    elif r < 0.08:
        w = w.upper()
    elif r < 0.1:
        w += rng.choice(CONTROLS)
    return w


def line(i):
    kind = i % 50
    if kind == 0:  # a long word: letters of one script without a break
        alphabet = rng.choice(["abcdefghijklmnopqrstuvwxyz", "абвгдежзийклмнопрстуфхцчшщъыьэюя",
                               "กขคงจฉชซญดตถทนบปผพฟภมยรลวศสหอ", "あいうえおかきくけこ"])
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(100, 900)))
    if kind == 1:  # whitespace runs
        return "".join(rng.choice(SPACES) + word() for _ in range(rng.randint(1, 6))) + rng.choice(SPACES)
    if kind == 2:  # random code points from assigned, established blocks
        blocks = [(0x20, 0x7E), (0xA1, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF), (0x600, 0x6FF),
                  (0x900, 0x97F), (0xE00, 0xE7F), (0x3040, 0x30FF), (0x4E00, 0x9FCC), (0xAC00, 0xD7A3), (0x2000, 0x206F)]
        out = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(blocks)
            c = chr(rng.randint(lo, hi))
            import unicodedata
            if unicodedata.category(c) != "Cn":
                out.append(c)
        return "".join(out)
    n = rng.randint(1, 25)
    parts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            parts.append(word())
        elif r < 0.8:
            parts.append(rng.choice(WORDS["punct"]))
        elif r < 0.85:
            parts.append(rng.choice(WORDS["special"]))
        else:
            parts.append(rng.choice(WORDS["numbers"]))
        parts.append(rng.choice(SPACES) if rng.random() < 0.2 else (" " if rng.random() < 0.8 else ""))
    return "".join(parts).replace("\n", " ")


# Stress lines: random characters of the blocks where normalizers differ most (combining marks,
# CJK with its compatibility ideographs, which NFD maps to unified ones, rare punctuation,
# symbols, full-width forms), only characters Unicode 3.2 already had (so that every Unicode table
# agrees); their own generator, so the lines above stay as they were.
STRESS_BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF),
                 (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x2070, 0x20CF),
                 (0x20D0, 0x20FF), (0x2100, 0x218F), (0x2190, 0x23FF), (0x2500, 0x27BF), (0x2E80, 0x2FDF), (0x3000, 0x30FF),
                 (0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFE30, 0xFE6F), (0xFF00, 0xFFEF),
                 (0x1D400, 0x1D7FF), (0x20000, 0x2A6D6), (0x2F800, 0x2FA1D)]


def stress_line(srng):
    import unicodedata
    out = []
    while len(out) < srng.randint(1, 30):
        lo, hi = srng.choice(STRESS_BLOCKS)
        c = chr(srng.randint(lo, hi))
        if unicodedata.ucd_3_2_0.category(c) in ("Cn", "Cs", "Co", "Cc") or c in "\n\r":
            continue
        out.append(c)
        if srng.random() < 0.3:
            out.append(" ")
    return "".join(out)


STRESS_LINES = 400

with open(out, "wb") as f:
    srng = random.Random(50)
    for _ in range(STRESS_LINES):
        f.write(stress_line(srng).encode("utf-8") + b"\n")
    for i in range(lines):
        text = line(i).replace("\r", " ")  # a line ends at \n; \r before it is dropped by the reader
        data = text.encode("utf-8")
        if i % 97 == 3:  # ill-formed UTF-8: a lone continuation, a truncated sequence, an overlong, a surrogate
            cut = rng.randint(0, len(data))
            data = data[:cut] + rng.choice([b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xff", b"\xf0\x9f\x98"]) + data[cut:]
        f.write(data + b"\n")

# Grapheme lines: their own generator, after the rest, so the lines above stay as they were.
GRAPHEME_FIXED = [
    "<mask>", "a <mask> b", "a   <mask>", " <mask>", "<mask> x", "a\t<mask>", "\uff1cmask\uff1e", "a \uff1cmask\uff1e b",
    "<s> hi </s>", "<unk>", "\uff1cunk\uff1e", "\uff1cs\uff1e x", "<pad>", "x<mask>y", "a\u3000<mask>", "<mask><mask>",
    "<mas", "\u2581", "\u2581\u2581a", "a\u2581b", "a \u2581 b", "  a  ", "a ", " ", "\t", "\u3000a\u3000", "a\u2028b",
    "e\u0301", "e\u0301\u0301", "\uff21\u0301", "A\u0301\u0323", "\ufb01\u0301", "\u1100\u1161", "\u1100\u1161\u11a8",
    "\uac00\u11a8", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467",
    "\U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EA", "\U0001F1EB", "\u2764\ufe0f", "\u0600a", "\u0600\u0661", "a\u0903",
    "\u0915\u093e", "x <mask>  y  <mask>", "<s><mask></s>", "\u00e9<mask>", " <unk> <s>", "a\u00a0<mask>",
    "\u3000\u3000<mask>", "k\u0301 \u2581 <mask>\u2581"]
GRAPHEME_MARKS = [chr(c) for c in list(range(0x300, 0x370)) + [0x483, 0x484, 0x93C, 0x903, 0x94D, 0x20D0, 0x20E3, 0x3099,
                                                              0x309A, 0xFE20, 0x200D, 0xFE0F, 0x1F3FB]]
GRAPHEME_BASES = ([chr(c) for c in range(0x21, 0x7F)] + [chr(c) for c in range(0xC0, 0x250)] +
                  [chr(c) for c in range(0xFF01, 0xFF5F)] + [chr(c) for c in range(0x1100, 0x1200)] +
                  [chr(c) for c in (0xF900, 0xFA0A, 0x2F800, 0x3042, 0x30AB, 0x915, 0x627, 0x1F600, 0x1F1EB, 0x1F1F7, 0x2764)])
GRAPHEME_SPACES = [" ", "  ", "\t", "\u3000", "\u00a0", "\u2581", " \u2581"]
GRAPHEME_SPECIAL = ["<mask>", "<s>", "</s>", "<unk>", "<pad>", "\uff1cmask\uff1e"]


def grapheme_line(grng):
    parts = []
    for _ in range(grng.randint(1, 12)):
        r = grng.random()
        if r < 0.75:
            marks = grng.choice([0, 0, 1, 1, 2, 3])
            parts.append(grng.choice(GRAPHEME_BASES) + "".join(grng.choice(GRAPHEME_MARKS) for _ in range(marks)))
        elif r < 0.9:
            parts.append(grng.choice(GRAPHEME_SPACES))
        else:
            parts.append(grng.choice(GRAPHEME_SPECIAL))
    return "".join(parts)


with open(out, "ab") as f:
    grng = random.Random(5)
    for text in GRAPHEME_FIXED + [grapheme_line(grng) for _ in range(400)]:
        f.write(text.encode("utf-8") + b"\n")
