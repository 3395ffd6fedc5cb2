#!/usr/bin/env python3
"""Write a deterministic tokenizer stress corpus as JSON lines.

usage: make_corpus.py OUT.jsonl [SHAKESPEARE_TXT] [SOURCE_DIR]

One JSON string per line (json.dumps(..., ensure_ascii=False)). The mix aims at
the places where byte-level BPE implementations usually disagree: the
pre-tokenizer regex (contractions, digit runs, whitespace before newlines,
\\p{L}/\\p{N} classes), multi-byte UTF-8 inside BPE words, added-token
matching, and very long words. Standard library only, fixed seed: the same
inputs always give the same bytes. (SOURCE_DIR is a live tree, so the corpus
follows it; both implementations are always compared on the same file.)
"""
import json
import os
import random
import sys
import unicodedata

SEED = 0x7E57_0C0D
TARGET_BYTES = 1_300_000  # brief asks for >= 1.2 MB of document text
# The repository root is three levels up; ../shared sits beside it (the project's layout).
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_PROSE = os.path.join(REPO, "..", "shared", "data", "tinyshakespeare.txt")
DEFAULT_SRC = os.path.join(REPO, "src")

# U+0085 and U+FEFF are the two code points where JavaScript's \s (the
# oracle) and Oniguruma's \s (HF tokenizers) disagree, so ids there would
# test the JS engine, not our tokenizer. Keep them out of the corpus.
ORACLE_UNSAFE = {"\u0085": " ", "\ufeff": ""}

# Hand-written word lists; a few per script is enough to put multi-byte
# letters (2-, 3- and 4-byte UTF-8) through the BPE merge loop.
SCRIPTS = {
    "cyrillic": "привет мир сегодня хорошая погода машинное обучение токенизатор ёлка Щука съезд объём МОСКВА Київ Ґанок".split(),
    "greek": "γειά σου κόσμε καλημέρα μηχανική μάθηση λέξεις Αθήνα ΕΛΛΑΔΑ ψυχή ώρα άνθρωπος".split(),
    "arabic": "مرحبا بالعالم كيف حالك اليوم تعلم الآلة الكلمات القاهرة كتاب مدرسة".split(),
    "hebrew": "שלום עולם מה שלומך היום למידת מכונה ספר ירושלים בוקר טוב".split(),
    "devanagari": "नमस्ते दुनिया आप कैसे हैं आज मशीन लर्निंग शब्द भारत हिन्दी क्षत्रिय".split(),
    "thai": ["สวัสดีชาวโลก", "ภาษาไทยไม่มีช่องว่างระหว่างคำ", "การเรียนรู้ของเครื่อง", "กรุงเทพมหานคร", "ขอบคุณครับ"],
    "han": ["你好世界", "今天天气很好", "机器学习", "分词器测试", "北京", "中文没有空格", "學習", "龍", "𠀋"],
    "kana": ["こんにちは", "ありがとうございます", "カタカナ", "トークナイザー", "ひらがなとカタカナ", "東京タワー", "ｶﾀｶﾅ"],
    "hangul": ["안녕하세요", "세계", "한국어", "토크나이저", "기계", "학습", "서울"],
    "latin": "café naïve résumé façade Ångström Zürich São Paulo Łódź Dvořák jalapeño crème brûlée Øresund Šťastný İstanbul Straße Ærø".split(),
    # Llama 3 sets BPE "ignore_merges": these words (after a space) are whole
    # vocab entries that the merge list alone would split; without them the
    # corpus never tells an implementation that ignores the flag apart.
    "ignore_merges": "việc hợp nhiều điều Việt ngoài nhiên biệt nhiệm nhanh hiểu biểu jeho každ zdrav değiş geliş ulaş oluştur даже характер культу практи розвит використ вироб ایران اطلاعات .:.:.:.:.:.:.:.:".split(),
}
# Combining marks: NFD forms of the Latin words plus stacks with no
# precomposed form (these are what an NFC normalizer changes or keeps).
COMBINING = [unicodedata.normalize("NFD", w) for w in SCRIPTS["latin"]] + [
    "q\u0303", "x\u0301\u0308", "a\u0328\u0301", "H\u0336\u0308e\u0337\u0303llo", "\u0301lead",
]


def flag(cc):
    return "".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in cc)


EMOJI = (
    ["😀", "🚀", "🎉", "🔥", "✨", "🤖", "🧠", "🍕", "❤\ufe0f", "☺", "1\ufe0f\u20e3"]
    + [b + chr(t) for b in "👍👋🧑👩" for t in range(0x1F3FB, 0x1F400)]  # skin tones
    + ["👨\u200d👩\u200d👧\u200d👦", "👩\u200d💻", "🏳\ufe0f\u200d🌈", "👨🏽\u200d🚀", "🧑\u200d🤝\u200d🧑"]  # ZWJ
    + [flag(c) for c in ("US", "JP", "DE", "FR", "BR", "IN", "KR")]
    + ["\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"]  # tag-sequence flag
)
WHITESPACE = [" ", "  ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "   \n",
              " \t \n", "\u00a0", "\u3000", "\u2009", " \u00a0 ", "\x0b", "\x0c", "\t \r\n  "]
CONTRACTIONS = ["don't", "I'm", "we're", "it's", "you'll", "they've", "I'd", "can't", "won't",
                "she's", "o'clock", "rock'n'roll", "don\u2019t", "'s", "''"]
PUNCT = ["!!!", "...", "?!?!", "---", "===", "=>", "::", "<<=", "...!!!???", "«quoted»", "“curly”",
         "—", "…", "(*)", "[]{}", "@#$%^&*", "/* */", "//", "\\\\", "~~~", "¿¡", "、。", "！？", "\x1b[31m"]
SPECIALS = ["<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>",
            "<tool_call>", "<|reserved_special_token_7|>"]
NEAR_MISSES = ["<|endoftext|", "<|endoftext", "<<|endoftext|>>", "<|ENDOFTEXT|>", "< |endoftext|>"]
NUMERALS = ["3.14159", "1,000,000", "2024-01-15", "v1.2.3", "0xDEADBEEF", "1e-9", "abc123def",
            "x86_64", "١٢٣", "४२", "Ⅻ", "½", "１２３", "+1 (555) 010-0199"]


def case_variant(rng, w):
    pick = rng.randrange(4)
    if pick == 0:
        return w.lower()
    if pick == 1:
        return w.upper()
    if pick == 2:
        return w[:1].upper() + w[1:]
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in w)


def number(rng):
    if rng.random() < 0.5:
        return str(rng.randrange(10 ** rng.randint(1, 40)))
    return rng.choice(NUMERALS)


def chunk(rng, text, lo, hi):
    """A random slice starting at a line boundary (more realistic than mid-word)."""
    if not text:
        return ""
    start = rng.randrange(len(text))
    nl = text.find("\n", start)
    start = nl + 1 if 0 <= nl < len(text) - 1 else start
    return text[start:start + rng.randint(lo, hi)]


def spice(rng, doc, pools, n):
    """Insert n fragments at random word boundaries of doc."""
    for _ in range(n):
        cut = doc.rfind(" ", 0, rng.randint(0, len(doc))) + 1
        doc = doc[:cut] + rng.choice(rng.choice(pools)) + doc[cut:]
    return doc


def fill(rng, target, pick, seps):
    out, size = [], 0
    while size < target:
        frag = pick() + rng.choice(seps)
        out.append(frag)
        size += len(frag.encode("utf-8"))
    return "".join(out)


def load_prose(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        # Still useful without it: synthetic English from a tiny lexicon.
        print(f"make_corpus: no prose file ({e}); using synthetic English", file=sys.stderr)
        words = "the quick brown fox jumps over a lazy dog while we train models and test tokenizers".split()
        rng = random.Random(SEED)
        return "\n".join(" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(20000))


def load_sources(root):
    texts = []
    for d, dirs, files in os.walk(root):
        dirs.sort()  # os.walk order is filesystem dependent; sort for determinism
        for name in sorted(files):
            if name.endswith((".cpp", ".h", ".py")):
                try:
                    with open(os.path.join(d, name), encoding="utf-8") as f:
                        texts.append(f.read())
                except (OSError, UnicodeDecodeError):
                    pass  # only valid UTF-8 goes in
    if not texts:
        print(f"make_corpus: no sources under {root}; code documents skipped", file=sys.stderr)
    return texts


def edge_docs(rng):
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        "", " ", "\n", "\n\n\n", "\r\n", "\t", "   ", "\u00a0", "😀", "\u200d", "'s", "'",
        "".join(rng.choice(letters) for _ in range(2000)),  # long word, random letters
        "a" * 2000,  # long word, one repeated pair: stresses merge tie-breaking
        "helloпривет你好مرحبا", "abcΑΒΓабв123中文", "日本語English한국어", "naïveカタカナ😀x",
        "<|endoftext|>", "<|endoftext|><|endoftext|>", " <|endoftext|> ", "<|begin_of_text|>hi<|end_of_text|>",
        "123456789012345678901234567890", "\u0301abc",
    ]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out_path = argv[1]
    prose = load_prose(argv[2] if len(argv) > 2 else DEFAULT_PROSE)
    sources = load_sources(argv[3] if len(argv) > 3 else DEFAULT_SRC)
    rng = random.Random(SEED)
    script_words = [w for ws in SCRIPTS.values() for w in ws] + COMBINING
    english = prose.split()
    every = [script_words, EMOJI, WHITESPACE, CONTRACTIONS, PUNCT, SPECIALS, NEAR_MISSES, english]

    def prose_doc():
        d = chunk(rng, prose, 200, 3000)
        return spice(rng, d, [SPECIALS, EMOJI, CONTRACTIONS], rng.randint(0, 3)) if rng.random() < 0.3 else d

    def code_doc():
        d = chunk(rng, rng.choice(sources), 200, 3000) if sources else prose_doc()
        if rng.random() < 0.15:
            d = d.replace("\n", "\r\n")  # Windows line endings
        if rng.random() < 0.15:
            d = d.replace("    ", "\t")
        return spice(rng, d, [SPECIALS], 1) if rng.random() < 0.2 else d

    def script_doc():
        words = rng.choice(list(SCRIPTS.values()) + [COMBINING, script_words])
        return fill(rng, rng.randint(200, 2500), lambda: rng.choice(words), [" ", " ", "", ", ", ".\n", "  "])

    def mixed_doc():
        def pick():
            pool = rng.choice(every + [None])
            if pool is None:
                return number(rng)
            w = rng.choice(pool)
            return case_variant(rng, w) if pool is CONTRACTIONS else w
        return fill(rng, rng.randint(200, 3000), pick, [" ", "", "\n", " "])

    def whitespace_doc():
        return fill(rng, rng.randint(200, 1500), lambda: rng.choice(english) + rng.choice(WHITESPACE),
                    ["", " ", "   \n", "\t"])

    def numbers_doc():
        return fill(rng, rng.randint(200, 1500), lambda: rng.choice([number(rng), rng.choice(english)]),
                    [" ", ", ", "", "\n", "."])

    kinds = [(prose_doc, 35), (code_doc, 25), (script_doc, 15), (mixed_doc, 15), (whitespace_doc, 5), (numbers_doc, 5)]
    gens, weights = zip(*kinds)
    docs = edge_docs(rng)
    n_edge = len(docs)
    total = sum(len(d.encode("utf-8")) for d in docs)
    while total < TARGET_BYTES:
        d = rng.choices(gens, weights)[0]()
        for bad, good in ORACLE_UNSAFE.items():
            d = d.replace(bad, good)
        docs.append(d)
        total += len(d.encode("utf-8"))  # also rejects lone surrogates
    # TRAINRT_ORACLE_FRACTION (scripts/sanitize.sh: 0.1): keep the edge documents and an evenly
    # spread share of the rest — the instrumented suite compares fewer documents, the plain all.
    fraction = float(os.environ.get("TRAINRT_ORACLE_FRACTION", "1"))
    if 0 < fraction < 1:
        step = max(1, round(1 / fraction))
        docs = docs[:n_edge] + docs[n_edge::step]
        total = sum(len(d.encode("utf-8")) for d in docs)
    with open(out_path, "w", encoding="utf-8", newline="\n") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    print(f"make_corpus: {len(docs)} documents, {total} bytes of text -> {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
