# SPDX-License-Identifier: Apache-2.0
"""Data for the language-identification example (train.py, eval_accuracy.py).

Task: which language is a piece of a manual page written in? The texts are the roff sources of
Debian's manual-page packages: English from `manpages`, the translations from the manpages-l10n
packages (manpages-cs, -de, -es, -fr, -it, -nl, -pl, -pt-br, -ru). Only the files a package owns
(`dpkg -L`) are read, so pages installed by other packages never enter the data.

    ensure_packages()                 # apt-get install -y --no-install-recommends the missing ones
    docs = load_documents()           # {lang: [(page, text bytes)]}, every page of every package
    split_of("ls.1")                  # "train" | "val" | "test", from a hash of the page name
    samples = make_samples(docs, pages, per_lang=50, seed=...)   # fixed test/val samples

The split is by page name ("ls.1", "passwd.5"), never by sample: all pieces of a page, and the page
in every language, fall on one side. The hash is sha256("linfer-langid-v1:" + page): bucket
value % 100 < 20 is test, < 25 validation, the rest train.
"""

import gzip
import hashlib
import os
import random
import re
import subprocess

# class index order = this order (examples/models/langid.labels.txt)
LANGS = [
    ("en", "manpages", "English"),
    ("cs", "manpages-cs", "Czech"),
    ("de", "manpages-de", "German"),
    ("es", "manpages-es", "Spanish"),
    ("fr", "manpages-fr", "French"),
    ("it", "manpages-it", "Italian"),
    ("nl", "manpages-nl", "Dutch"),
    ("pl", "manpages-pl", "Polish"),
    ("pt_BR", "manpages-pt-br", "Brazilian Portuguese"),
    ("ru", "manpages-ru", "Russian"),
]
LABELS = [lang for lang, _, _ in LANGS]
PACKAGES = [pkg for _, pkg, _ in LANGS]

SPLIT_SALT = "linfer-langid-v1:"
TEST_BUCKETS = 20  # of 100
VAL_BUCKETS = 5
SAMPLE_BYTES = 1024  # n
MIN_SAMPLE_BYTES = 100  # a page's last piece is kept if at least this long

# the translators' credits that close every manpages-l10n page: the same boilerplate on every page
# of a language, so it is dropped (it would put near-identical text on both sides of the split)
TRANSLATION_HEADINGS = {
    "TRANSLATION", "PŘEKLAD", "ÜBERSETZUNG", "TRADUCCIÓN", "TRADUCTION", "TRADUZIONE", "VERTALING",
    "TŁUMACZENIE", "TRADUÇÃO", "ПЕРЕВОД",
}


# ---------------------------------------------------------------------------------------------
# packages


def package_versions():
    """{package: version} as dpkg-query reports it ("" when not installed)."""
    out = {}
    for pkg in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", pkg],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        status, _, version = r.stdout.partition("\t")
        out[pkg] = version if r.returncode == 0 and status.endswith(" installed") else ""
    return out


def ensure_packages():
    """Installs the packages that are missing (Debian archive, apt-get); returns their versions."""
    missing = [p for p, v in package_versions().items() if not v]
    if missing:
        cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + missing
        print("installing:", " ".join(missing), flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(cmd, env=env).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, check=True)
            subprocess.run(cmd, env=env, check=True)
    versions = package_versions()
    missing = [p for p, v in versions.items() if not v]
    if missing:
        raise SystemExit("packages still missing: " + " ".join(missing))
    return versions


def package_pages(lang, pkg):
    """[(page name, path)] of the gzipped manual pages pkg owns for lang (symlinks skipped)."""
    listing = subprocess.run(["dpkg", "-L", pkg], stdout=subprocess.PIPE, check=True, text=True).stdout
    prefix = "/usr/share/man/" if lang == "en" else "/usr/share/man/%s/" % lang
    pat = re.compile(re.escape(prefix) + r"man[1-9][a-z]*/([^/]+)\.gz$")
    pages = []
    for path in listing.splitlines():
        m = pat.match(path)
        if m and os.path.isfile(path) and not os.path.islink(path):
            pages.append((m.group(1), path))
    return sorted(pages)


# ---------------------------------------------------------------------------------------------
# untranslated paragraphs
#
# manpages-l10n ships a page when most of it is translated; the rest stays in English (po4a keeps
# the original of every untranslated paragraph). Those paragraphs are English text under another
# label, so they are dropped from the translated pages: a paragraph goes when it holds at least
# two English function words and more of them than function words of the page's language. Words
# that are function words in both (Dutch "is", Polish "to", Spanish "a", ...) count for neither.

_EN_WORDS = set("""the of and to is that for are be with this by or not as it from which can will
when has have was were been an if on these then than into also may must should only such any each
other all its their there a in used you your does see""".split())
_WORDS = {
    "cs": """a je se v na ze z s k do pro to o jako nebo který která které jsou být by není pokud tak
             při jeho jen už také lze této tento tato po od za ve i""",
    "de": """der die das und ist nicht mit von den dem des ein eine einer zu für auf im wird werden oder
             sich es als bei wenn kann sind aus auch nur an in wie diese""",
    "es": """el la los las de del que y en un una es por para con no se al o su sus lo como más si
             este esta puede son a""",
    "fr": """le la les de des du et est un une en que qui dans pour par pas sur ne au aux ce cette il
             sont avec ou si être peut a on se""",
    "it": """il lo la i gli le di del della che e è un una in per con non da si sono come al o se
             questo questa può a nel""",
    "nl": """de het een en van is in dat die te op voor met niet zijn wordt worden of als door aan bij
             er kan deze naar om ook""",
    "pl": """i w z na się nie do że jest to jak o a od po przez dla lub oraz jego są może być jeśli tak
             czy ze we które który która""",
    "pt_BR": """o a os as de do da dos das e é um uma em no na que para por com não se ao ou como são
                pode este esta seu sua""",
    "ru": """и в не на что с по для это как из к или если от при а же только быть может его он она то
             также будет все этот""",
}
_SHARED = {"de": {"will", "also", "was", "see"}, "nl": {"was", "been"}, "fr": {"as", "an"}}
_FUNCTION_WORDS = {lang: set(words.split()) for lang, words in _WORDS.items()}
_ENGLISH_ONLY = {lang: _EN_WORDS - ws - _SHARED.get(lang, set()) for lang, ws in _FUNCTION_WORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")


def untranslated(paragraph, lang):
    """True when a paragraph (str) of a page translated into lang reads as English."""
    words = _WORD.findall(paragraph.lower())
    en = sum(w in _ENGLISH_ONLY[lang] for w in words)
    own = sum(w in _FUNCTION_WORDS[lang] for w in words)
    return en >= 2 and en > own


def drop_untranslated(text, lang):
    """text (str) without its English paragraphs (lang "en": unchanged)."""
    if lang == "en":
        return text
    paras = text.split("\n\n")
    return "\n\n".join(p for p in paras if not untranslated(p, lang))


# ---------------------------------------------------------------------------------------------
# roff -> plain text

_SPECIAL = {
    "em": "\u2014", "en": "\u2013", "aq": "'", "dq": '"', "lq": "\u201c", "rq": "\u201d",
    "oq": "\u2018", "cq": "\u2019", "bu": "\u2022", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122",
    "hy": "-", "mi": "-", "pl": "+", "eq": "=", "ti": "~", "ha": "^", "rs": "\\", "sl": "/",
    "Fo": "\u00ab", "Fc": "\u00bb", "fo": "\u2039", "fc": "\u203a", "ss": "\u00df", "de": "\u00b0",
    "mu": "\u00d7", "di": "\u00f7", "<=": "\u2264", ">=": "\u2265", "!=": "\u2260", "->": "\u2192",
    "<-": "\u2190", "ga": "`", "aa": "\u00b4", "at": "@", "sh": "#", "Do": "$", "ba": "|", "br": "|",
    "pd": "\u2202", "ua": "\u2191", "da": "\u2193", "cs": "", "tf": "", "BU": "\u2022",
}
_TEXT_MACROS = re.compile(r"^[.'][ \t]*(SH|SS|Sh|Ss|B|I|BR|IR|RB|RI|BI|IB|SM|SB)(?:[ \t]+(.*))?$")
_BLOCK_START = {"EX": "EE", "TS": "TE", "EQ": "EN", "PS": "PE", "de": "..", "ig": ".."}


def _special(name):
    if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
        return chr(int(name[1:], 16))
    if name.startswith("char") and name[4:].isdigit():
        return chr(int(name[4:]))
    return _SPECIAL.get(name, "")


def _escapes(s):
    """Inline roff escapes -> text (a small subset; anything unknown is dropped)."""
    s = re.sub(r'\\".*$', "", s)  # comment
    s = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", s)  # fonts
    s = re.sub(r"\\s[+-]?(\d|\(\d\d|\[\d+\])", "", s)  # sizes
    s = re.sub(r"\\[*](\[[^\]]*\]|\(..|.)", lambda m: {"R": "\u00ae", "(Tm": "\u2122", "(lq": "\u201c",
                                                      "(rq": "\u201d"}.get(m.group(1), ""), s)  # strings
    s = re.sub(r"\\\[([^\]]*)\]", lambda m: _special(m.group(1)), s)
    s = re.sub(r"\\\((..)", lambda m: _special(m.group(1)), s)
    s = re.sub(r"\\[kmnzgVYwhvlLxXNDoboHSRZ]('[^']*'|\[[^\]]*\]|\(..|.)", "", s)  # drawing, registers
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\~", " ").replace("\\ ", " ")
    s = s.replace("\\0", " ").replace("\\:", "")
    s = re.sub(r"\\[&|^,/%)cdrtupa{}!]", "", s)
    s = re.sub(r"\\(.)", r"\1", s)
    return s


def clean_roff(src):
    """Plain text of a man page source (str): macro lines dropped except the text of headings and
    font macros, example/table/equation blocks dropped, escapes resolved, the translators'
    credits section dropped. Lines stay lines; runs of blank lines collapse."""
    out = []
    block_end = None
    skip_section = False
    for raw in src.split("\n"):
        line = raw.rstrip()
        if block_end is not None:
            # a block ends at its closing request, or at the latest at the next section heading
            if block_end == ".." and line.strip() == "..":
                block_end = None
                continue
            if block_end != ".." and re.match(r"^[.'][ \t]*" + block_end + r"\b", line):
                block_end = None
                continue
            if not re.match(r"^[.'][ \t]*(SH|Sh)\b", line):
                continue
            block_end = None
        m = re.match(r"^[.'][ \t]*(\w+)", line)
        if m and m.group(1) in _BLOCK_START:
            block_end = _BLOCK_START[m.group(1)]
            continue
        if line.startswith(".") or line.startswith("'"):
            tm = _TEXT_MACROS.match(line)
            if tm is None:
                if re.match(r"^[.'][ \t]*(PP|P|LP|TP|IP|HP|sp|br|Pp|Lp|It|Bl|El|Bd|Ed)\b", line):
                    out.append("")  # paragraph break
                continue
            macro, args = tm.group(1), (tm.group(2) or "")
            if macro in ("SH", "SS", "Sh", "Ss"):
                heading = _escapes(args).replace('"', "").strip()
                skip_section = macro in ("SH", "Sh") and heading.upper() in TRANSLATION_HEADINGS
                if not skip_section:
                    out.extend(["", heading])
                continue
            line = args.replace('"', "")
        if skip_section:
            continue
        text = re.sub(r"[ \t]+", " ", _escapes(line)).strip()
        out.append(text)
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def read_page(path, lang):
    """Plain text (UTF-8 bytes) of a gzipped page, untranslated paragraphs dropped."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    text = drop_untranslated(clean_roff(data.decode("utf-8", errors="replace")), lang)
    return (text.strip() + "\n").encode("utf-8")


def load_documents(min_bytes=MIN_SAMPLE_BYTES):
    """{lang: [(page, text bytes)]} for every page (pages that are only a `.so` link, or shorter
    than min_bytes after cleaning, are left out)."""
    docs = {}
    for lang, pkg, _ in LANGS:
        docs[lang] = []
        for page, path in package_pages(lang, pkg):
            text = read_page(path, lang)
            if len(text) >= min_bytes:
                docs[lang].append((page, text))
    return docs


# ---------------------------------------------------------------------------------------------
# split and samples


def split_of(page):
    h = int.from_bytes(hashlib.sha256((SPLIT_SALT + page).encode("utf-8")).digest()[:8], "little")
    b = h % 100
    return "test" if b < TEST_BUCKETS else "val" if b < TEST_BUCKETS + VAL_BUCKETS else "train"


def _char_start(data, i):
    """Moves i back to the first byte of a UTF-8 character."""
    while 0 < i < len(data) and (data[i] & 0xC0) == 0x80:
        i -= 1
    return i


def pieces(text, n=SAMPLE_BYTES, min_bytes=MIN_SAMPLE_BYTES):
    """Cuts a document into consecutive pieces of at most n bytes, each ending at a whitespace (or
    at least a character boundary) when one lies in the last 64 bytes; drops a last piece shorter
    than min_bytes. Every piece is valid UTF-8 when the text is."""
    out = []
    i = 0
    while i < len(text):
        end = min(i + n, len(text))
        if end < len(text):
            ws = max(text.rfind(b" ", i, end), text.rfind(b"\n", i, end))
            end = ws + 1 if ws >= end - 64 and ws > i else _char_start(text, end)
        if end - i >= min_bytes:
            out.append(text[i:end])
        i = end
    return out


def make_samples(docs, pages, per_lang, seed, per_page=4):
    """A fixed sample set from the given pages, balanced over the classes as far as the pages
    allow. For each language: the pieces of every page in `pages`, at most per_page per page first
    (a seeded choice), the page's other pieces only to fill up; per_lang of them (fewer if the
    pages hold fewer). Returns [(label index, lang, page, piece index, bytes)], per language in
    page order."""
    pages = set(pages)
    out = []
    for ci, (lang, _, _) in enumerate(LANGS):
        rng = random.Random("%s:%s" % (seed, lang))
        first, rest = [], []
        for page, text in docs[lang]:
            if page not in pages:
                continue
            ps = [(ci, lang, page, j, p) for j, p in enumerate(pieces(text))]
            rng.shuffle(ps)
            first.extend(ps[:per_page])
            rest.extend(ps[per_page:])
        rng.shuffle(first)
        rng.shuffle(rest)
        chosen = (first + rest)[:per_lang]
        out.extend(sorted(chosen, key=lambda s: (s[2], s[3])))
    return out


# ---------------------------------------------------------------------------------------------
# short inputs: single sentences or lines of prose
#
# The short test set (examples/data/langid_short_test.tsv) and the sentence windows of the
# training are cut by prose_units(): a page's text is split into paragraphs at blank lines, each
# paragraph's lines are joined with single spaces (a roff source line is not a line of the text),
# and the paragraph is cut into sentences after ". ", "! ", "? ", ": " or "; " when the next
# character is an upper-case letter (or an opening quote or bracket). A paragraph without such a
# cut is one unit (a line, a heading, a list item). A unit is kept when it is 40-200 bytes of UTF-8
# and reads as prose: at least 5 words of letters, letters at least 75% of its non-space
# characters, none of the characters \ { } [ ] < > | $ = _ @ # ~ ` * (roff and markup leftovers,
# code, paths with variables), no word that starts with "-" or contains "/" (options, paths), and
# it does not start with a digit or a punctuation mark. In a translated page a unit is dropped when
# it reads as English by the paragraph rule above (untranslated(); po4a leaves single untranslated
# sentences inside translated paragraphs too).

SHORT_MIN_BYTES = 40
SHORT_MAX_BYTES = 200
_UNIT_BAD = set("\\{}[]<>|$=_@#~`*")
_SENTENCE_CUT = re.compile(r"(?<=[.!?:;])\s+(?=[\"'«„“(¿¡]?[^\W\d_])")


def _is_prose(unit):
    if any(c in _UNIT_BAD for c in unit):
        return False
    words = unit.split()
    if len([w for w in words if _WORD.fullmatch(w.strip(".,;:!?()\"'«»„“”’"))]) < 5:
        return False
    if any(w.startswith("-") or "/" in w for w in words):
        return False
    chars = [c for c in unit if not c.isspace()]
    letters = sum(c.isalpha() for c in chars)
    if letters < 0.75 * len(chars):
        return False
    first = unit[0]
    return first.isalpha() or first in "\"'«„“(¿¡"


def _sentences(paragraph):
    """The sentences of a paragraph (str, lines joined): cut after . ! ? : ; before a letter that
    is upper case (or a quote or bracket before it)."""
    out, start = [], 0
    for m in _SENTENCE_CUT.finditer(paragraph):
        nxt = paragraph[m.end():m.end() + 2].lstrip("\"'«„“(¿¡")
        if nxt[:1].isupper():
            out.append(paragraph[start:m.start()])
            start = m.end()
    out.append(paragraph[start:])
    return [s.strip() for s in out if s.strip()]


def _joined_lines(paragraph):
    """The lines of a paragraph, a line joined to the one before it unless it starts with an
    upper-case letter or the one before it looks like a heading or tag."""
    out = []
    for line in paragraph.split("\n"):
        line = line.strip()
        if not line:
            continue
        prev = out[-1] if out else None
        if prev is not None and not line[0].isupper() and not (
                prev[-1] not in ".,;:!?" and len(prev.split()) <= 4):
            out[-1] = prev + " " + line
        else:
            out.append(line)
    return out


def prose_units(text, lang="en", min_bytes=SHORT_MIN_BYTES, max_bytes=SHORT_MAX_BYTES):
    """The sentences and lines of prose of a page (text bytes) of min_bytes..max_bytes, in page
    order, as UTF-8 bytes without newlines (see the comment above for the exact rule)."""
    out = []
    for para in text.decode("utf-8", errors="replace").split("\n\n"):
        for s in (s for line in _joined_lines(para) for s in _sentences(line)):
            b = s.encode("utf-8")
            if min_bytes <= len(b) <= max_bytes and _is_prose(s) and (
                    lang == "en" or not untranslated(s, lang)):
                out.append(b)
    return out


def make_short_samples(docs, pages, per_lang, seed, per_page=3):
    """A fixed set of short inputs from the given pages: per language, the prose units of every
    page in `pages` (prose_units), at most per_page per page first (a seeded choice), the page's
    other units only to fill up; per_lang of them (fewer if the pages hold fewer); a unit that
    occurs twice in a language is taken once. Returns [(label index, lang, page, unit index,
    bytes)], per language in page order."""
    pages = set(pages)
    out = []
    for ci, (lang, _, _) in enumerate(LANGS):
        rng = random.Random("%s:%s" % (seed, lang))
        first, rest, seen = [], [], set()
        for page, text in docs[lang]:
            if page not in pages:
                continue
            us = []
            for j, u in enumerate(prose_units(text, lang)):
                if u not in seen:
                    seen.add(u)
                    us.append((ci, lang, page, j, u))
            rng.shuffle(us)
            first.extend(us[:per_page])
            rest.extend(us[per_page:])
        rng.shuffle(first)
        rng.shuffle(rest)
        chosen = (first + rest)[:per_lang]
        out.extend(sorted(chosen, key=lambda s: (s[2], s[3])))
    return out


# ---------------------------------------------------------------------------------------------
# extra training text: Debian's package-description translations (DDTP)
#
# The small packages have little manual-page text (it, cs about 0.23 MB, pt_BR, nl under 0.4 MB).
# A second source of prose in every language is the Debian Description Translation Project:
# apt's Translation-XX index files (deb822: Package, Description-md5, Description-XX = a one-line
# synopsis, then a long description in lines that start with a space, " ." for a blank line).
# They are TRAINING text only (never validation or test), deduplicated against the test sets.

DDTP_LANGS = ["en", "cs", "de", "es", "fr", "it", "nl", "pl", "pt_BR", "ru"]
APT_LISTS = "/var/lib/apt/lists"
DDTP_MAX_BYTES = 3_000_000  # per language, a seeded choice of descriptions (Italian has 27 MB)
_BULLET = re.compile(r"^\s*(?:[-*+•·o]|\d{1,2}[.)])\s+")


def _translation_file(lang):
    import glob
    code = lang.replace("_", "%5f")
    for pat in ("*_i18n_Translation-%s" % code, "*_i18n_Translation-%s.*" % code):
        hits = sorted(p for p in glob.glob(os.path.join(APT_LISTS, pat)) if "bookworm_main" in p)
        if hits:
            return hits[0]
    return None


def ensure_ddtp(langs=DDTP_LANGS):
    """{lang: path of apt's Translation-lang index}; runs `apt-get update -o Acquire::Languages=...`
    when one is missing (this image's apt configuration fetches no translations by default)."""
    paths = {l: _translation_file(l) for l in langs}
    if any(p is None for p in paths.values()):
        print("fetching Debian's description translations (apt-get update)", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-o", "Acquire::Languages=" + ",".join(DDTP_LANGS)], env=env,
                       check=True)
        paths = {l: _translation_file(l) for l in langs}
        missing = [l for l, p in paths.items() if p is None]
        if missing:
            raise SystemExit("no Translation index for: " + " ".join(missing))
    return paths


def _read_index(path):
    if path.endswith(".lz4"):
        import shutil
        if shutil.which("lz4") is None:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "lz4"], env=env, check=True)
        data_ = subprocess.run(["lz4", "-dc", path], stdout=subprocess.PIPE, check=True).stdout
    elif path.endswith(".gz"):
        data_ = gzip.open(path, "rb").read()
    elif path.endswith(".xz"):
        import lzma
        data_ = lzma.open(path, "rb").read()
    elif path.endswith(".bz2"):
        import bz2
        data_ = bz2.open(path, "rb").read()
    else:
        with open(path, "rb") as f:
            data_ = f.read()
    return data_.decode("utf-8", errors="replace")


def ddtp_descriptions(path, lang):
    """[(package, [paragraphs])] of a Translation index: the synopsis, then the long description's
    paragraphs with their continuation lines unwrapped, " ." markers dropped, a list item's bullet
    marker dropped (each item a paragraph of its own)."""
    out = []
    field = "Description-%s:" % lang
    for stanza in _read_index(path).split("\n\n"):
        pkg, paras, cur, in_desc = "", [], [], False
        for line in stanza.split("\n"):
            if line.startswith("Package:"):
                pkg = line[8:].strip()
                in_desc = False
            elif line.startswith(field):
                in_desc = True
                paras.append(line[len(field):].strip())
            elif in_desc and line.startswith(" "):
                body = line[1:]
                if body.strip() == ".":
                    if cur:
                        paras.append(" ".join(cur))
                    cur = []
                elif _BULLET.match(body):
                    if cur:
                        paras.append(" ".join(cur))
                    cur = [_BULLET.sub("", body).strip()]
                else:
                    cur.append(body.strip())
            else:
                in_desc = False
        if cur:
            paras.append(" ".join(cur))
        paras = [" ".join(p.split()) for p in paras if p.strip()]
        if pkg and paras:
            out.append((pkg, paras))
    return out


def _norm(s):
    return " ".join(s.split())


def ddtp_text(docs, short_test_path, langs=DDTP_LANGS, max_bytes=DDTP_MAX_BYTES, seed="linfer-ddtp-v1"):
    """Training text from the description translations, per language:
    {lang: (text bytes, paragraphs separated by blank lines), ...}, and statistics.
    - a description whose paragraphs read as English (untranslated()) is skipped whole, a single
      untranslated paragraph is dropped;
    - the same paragraph twice in a language is taken once (descriptions share paragraphs);
    - a sentence (the cut of prose_units) that occurs verbatim, whitespace normalised, in the short
      test set or inside the text of a test-split page of any language is dropped;
    - at most max_bytes per language, descriptions in a seeded random order."""
    paths = ensure_ddtp(langs)
    test_text = {}
    for lang in docs:
        test_text[lang] = "\n".join(_norm(t.decode("utf-8", errors="replace")) for p, t in docs[lang]
                                    if split_of(p) == "test")
    all_test = "\n".join(test_text.values())
    # a sentence of 6+ words can be inside the test text only if its words 2-5 (whole words there)
    # are a 4-gram of the test text's words: a fast pre-filter before the substring search
    test_grams = set()
    for t in test_text.values():
        w = t.split()
        test_grams.update(zip(w, w[1:], w[2:], w[3:]))

    def in_test(n):
        if n in short_test:
            return True
        w = n.split()
        if len(w) >= 6 and tuple(w[1:5]) not in test_grams:
            return False
        return n in all_test
    short_test = set()
    with open(short_test_path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#") and line.count("\t") >= 3:
                short_test.add(_norm(line.rstrip("\n").split("\t", 3)[3]))
    texts, stats = {}, {}
    for lang in langs:
        rng = random.Random("%s:%s" % (seed, lang))
        descs = ddtp_descriptions(paths[lang], lang)
        rng.shuffle(descs)
        seen, kept, size = set(), [], 0
        st = {"descriptions": len(descs), "untranslated_descriptions": 0, "dropped_test_sentences": 0,
              "duplicate_paragraphs": 0}
        for pkg, paras in descs:
            if lang != "en" and untranslated(" ".join(paras), lang):
                st["untranslated_descriptions"] += 1
                continue
            for p in paras:
                if p in seen:
                    st["duplicate_paragraphs"] += 1
                    continue
                seen.add(p)
                if lang != "en" and untranslated(p, lang):
                    continue
                sents = []
                for s in _sentences(p):
                    n = _norm(s)
                    if len(n) >= 12 and in_test(n):
                        st["dropped_test_sentences"] += 1
                        continue
                    sents.append(s)
                if sents:
                    para = " ".join(sents)
                    kept.append(para)
                    size += len(para.encode("utf-8")) + 2
            if size >= max_bytes:
                break
        st["bytes"] = size
        st["paragraphs"] = len(kept)
        texts[lang] = ("\n\n".join(kept) + "\n").encode("utf-8")
        stats[lang] = st
    return texts, stats
