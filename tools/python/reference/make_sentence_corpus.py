# SPDX-License-Identifier: Apache-2.0
"""Writes the sentence-embedding parity corpus, made here from templates (no outside text):

  tests/hf/sentences.txt  1,000 sentences: everyday topics from templates, then stress lines
                          (accents, combining marks, CJK, emoji, rare punctuation, numbers, and
                          lines longer than the model's 256 tokens, which are cut)
  tests/hf/queries.txt    one query per sentence: some of its words dropped and shuffled, the
                          retrieval set (each query's nearest sentence, by cosine)

    python3 tools/python/reference/make_sentence_corpus.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "..", "tests", "hf")

SUBJECTS = ["The old fisherman", "My neighbour", "A young engineer", "The city council", "Our team", "The chef",
            "A small startup", "The museum guide", "Her grandmother", "The pilot", "A local farmer", "The librarian",
            "The new teacher", "A tired nurse", "The orchestra", "Two students", "The mayor", "A street artist",
            "The research group", "My cousin", "The bakery owner", "A retired sailor", "The football coach",
            "The night guard", "A curious child", "The software team", "The tour operator", "A weather forecaster"]
VERBS = ["repaired", "painted", "described", "sold", "planned", "explained", "cooked", "measured", "photographed",
         "cleaned", "built", "studied", "borrowed", "delivered", "forgot", "discovered", "ordered", "tested",
         "recorded", "translated", "carried", "designed", "counted", "printed"]
OBJECTS = ["a wooden boat", "the broken bicycle", "an apple pie", "the quarterly report", "a new bridge",
           "the ancient map", "a bowl of soup", "the solar panels", "a jazz album", "the garden fence",
           "a mountain trail", "the train timetable", "a pair of boots", "the database schema", "a chess puzzle",
           "the wedding cake", "a vintage camera", "the river dam", "a cup of green tea", "the school library",
           "a mobile app", "the concert tickets", "an old violin", "the hospital wing", "a paper kite",
           "the election results", "a recipe for bread", "the telescope lens", "a basket of tomatoes"]
PLACES = ["in the harbour", "near the station", "at the market", "in the mountains", "on the roof",
          "at the university", "in a quiet village", "behind the stadium", "in the kitchen", "at the airport",
          "by the lake", "in the city centre", "on a rainy island", "at the factory", "in the desert"]
TIMES = ["yesterday", "last winter", "this morning", "after lunch", "before the storm", "on Sunday",
         "during the festival", "in 1998", "at midnight", "every spring", "two weeks ago", "late at night"]
REASONS = ["because the weather was perfect", "to raise money for charity", "although nobody asked",
           "so that the children could learn", "while everyone else was asleep", "for a television show",
           "to win a bet", "after reading a long article", "since the old one was lost", "despite the cost"]
QUESTIONS = ["How do I {v} {o} {p}?", "Why would anyone want {o} {t}?", "Where can I find {o} {p}?",
             "Is it expensive to buy {o}?", "What is the best way to keep {o} clean?",
             "Who {v} {o} {t}?", "Can you recommend {o} for a beginner?"]
FACTS = ["Water boils at 100 degrees Celsius at sea level.", "The heart pumps blood through the body.",
         "Photosynthesis turns sunlight into chemical energy.", "Mount Everest is the highest mountain on Earth.",
         "The Pacific is the largest ocean.", "Light travels faster than sound.", "Bees help to pollinate flowers.",
         "A leap year has 366 days.", "Copper conducts electricity well.", "The moon orbits the Earth.",
         "Vaccines train the immune system.", "Salt lowers the freezing point of water.",
         "Interest rates affect the price of loans.", "Regular exercise improves sleep.",
         "A compiler translates source code into machine code.", "Rainforests hold many species of plants."]

STRESS = [
    "Café au lait, crème brûlée and a piñata at the jalapeño fiesta.",
    "Ångström, Øresund, Łódź, Ñandú, Ærø, Þórshöfn and İstanbul are hard to type.",
    "e\u0301te\u0301 and cafe\u0301 are written here with combining acute accents.",
    "Vietnamese: Tiếng Việt có dấu thanh như ả, ẫ, ặ, ờ và ự.",
    "東京は日本の首都です。 北京是中国的首都。",
    "한국어 문장도 섞여 있습니다: 서울, 부산, 제주.",
    "Ελληνικά: Η Αθήνα είναι πρωτεύουσα. Русский: Москва — столица.",
    "Arabic and Hebrew: مرحبا بالعالم and שלום עולם in one line.",
    "Devanagari and Thai: नमस्ते दुनिया, สวัสดีชาวโลก.",
    "Emoji everywhere 😀🚀🌍 and a family 👨‍👩‍👧 plus a flag 🇫🇷.",
    "Rare punctuation: ‹guillemets›, «quotes», „low quotes“, ‽ and ⁂ and § ¶ † ‡.",
    "Dashes – — ‒ ― and ellipsis … and middle dot · and bullet •.",
    "Math: ∀x ∈ ℝ, x² ≥ 0; ∑ᵢ aᵢ ≈ ∫ f(x) dx ≠ ∞ ± ε.",
    "Currency: €42.50, £13, ¥1000, ₹250, ₿0.01 and $7.99.",
    "Numbers 3.14159, 2,718,281, 1e-12, 0x7fff, 42nd and 1/3.",
    "URLs and mail: see example.com/path?q=1&lang=en or write to someone@example.org.",
    "Code: for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "ALL CAPS SHOUTING IN A SENTENCE ABOUT THE WEATHER!!!",
    "mIxEd CaSe wOrDs LiKe ThIs ArE sTiLl WoRdS.",
    "Tabs\tand  double  spaces   between words.",
    "Zero\u200bwidth space and soft\u00adhyphen and non\u00a0breaking space.",
    "Full-width ＡＢＣ ａｂｃ １２３ and half-width ｶﾀｶﾅ.",
    "Ligatures ﬁ ﬂ ﬀ and the German ß and ẞ.",
    "Superscripts ¹²³ and fractions ½ ¼ ¾ and roman numerals Ⅻ.",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "a",
    "?",
    "...",
    "I I I I I I I I I I I I the the the the.",
]


def long_line(rng, words):
    return " ".join(rng.choice(words) for _ in range(words_count(rng)))


def words_count(rng):
    return rng.randint(260, 420)


def main():
    rng = random.Random(50)
    sentences = set()
    out = []

    def add(s):
        if s not in sentences:
            sentences.add(s)
            out.append(s)

    vocabulary = " ".join(SUBJECTS + VERBS + OBJECTS + PLACES + TIMES + REASONS + FACTS).replace(".", "").split()
    while len(out) < 1000 - len(STRESS) - 6:
        kind = rng.random()
        v, o, p, t = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(PLACES), rng.choice(TIMES)
        if kind < 0.55:
            s = f"{rng.choice(SUBJECTS)} {v} {o} {p} {t}."
            if rng.random() < 0.4:
                s = s[:-1] + f" {rng.choice(REASONS)}."
        elif kind < 0.75:
            s = rng.choice(QUESTIONS).format(v=v, o=o, p=p, t=t)
        elif kind < 0.85:
            s = rng.choice(FACTS)
            if rng.random() < 0.7:
                s = s[:-1] + f", as {rng.choice(SUBJECTS).lower()} {rng.choice(['said', 'wrote', 'noticed'])} {t}."
        else:
            s = f"{rng.choice(SUBJECTS)} {v} {o} {t}, and then {rng.choice(SUBJECTS).lower()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {p}."
        add(s)
    for s in STRESS:
        add(s)
    for _ in range(6):  # longer than the model's 256 tokens: cut, keeping [SEP]
        add(long_line(rng, vocabulary).capitalize() + ".")
    assert len(out) == 1000, len(out)
    rng.shuffle(out)

    queries = []
    for s in out:
        words = s.split()
        if len(words) > 3:
            keep = [w for w in words if rng.random() < 0.7] or words[:2]
            if rng.random() < 0.5:
                rng.shuffle(keep)
            q = " ".join(keep)
        else:
            q = s.lower()
        queries.append(q)

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "sentences.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    with open(os.path.join(OUT, "queries.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(queries) + "\n")


if __name__ == "__main__":
    main()
