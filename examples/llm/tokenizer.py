"""The byte-level BPE tokenizer of a GGUF file (``tokenizer.ggml.model``
``gpt2``), built from its metadata: the vocabulary
(``tokenizer.ggml.tokens``), the merges in rank order
(``tokenizer.ggml.merges``) and the token types (control and user-defined
tokens such as ``<|im_start|>`` are matched whole before anything else).

Text is split as GPT-2's pre-tokenizer does (contractions, runs of
letters, of digits, of other symbols, each with one optional leading
space, and runs of whitespace), with the digits of each number as single
pieces first when the file's pre-tokenizer asks for it (``smollm``,
``starcoder``, ...), as llama.cpp and Hugging Face's tokenizers do. Each
piece's UTF-8 bytes are mapped to printable characters (GPT-2's byte
alphabet) and merged pair by pair, lowest rank first.

Python's ``re`` has no Unicode property classes, so the letter and number
classes are built once from ``unicodedata`` (categories L* and N*; a
fraction of a second).
"""

import codecs
import functools
import re
import unicodedata

# tokenizer.ggml.token_type values (llama.cpp): 3 control, 4 user-defined
_SPECIAL_TYPES = (3, 4)
# pre-tokenizers that split numbers into single digits before GPT-2's rule
# Letters and numbers end before U+32400 (CJK extension H ends at U+323AF;
# the planes above hold no L* or N* characters), so the scan stops there.
_LAST_ASSIGNED = 0x323FF
_DIGIT_SPLIT = {"smollm", "starcoder", "refact", "command-r", "codeshell",
                "exaone", "minerva"}


@functools.lru_cache(maxsize=1)
def _byte_alphabet():
    """GPT-2's byte -> printable character map: printable Latin-1 bytes
    map to themselves, the others to code points 256, 257, ..."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD))
            + list(range(0xAE, 0x100)))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _ranges(pred):
    """A regex character class body of the code points where pred holds."""
    out, start, prev = [], None, None
    for cp in range(_LAST_ASSIGNED + 1):
        if pred(cp):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            out.append((start, prev))
            start = None
    if start is not None:
        out.append((start, prev))
    esc = lambda c: "\\U%08x" % c  # noqa: E731
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in out)


@functools.lru_cache(maxsize=1)
def _gpt2_pattern():
    cat = unicodedata.category
    letters = _ranges(lambda c: cat(chr(c))[0] == "L")
    numbers = _ranges(lambda c: cat(chr(c))[0] == "N")
    L, N = f"[{letters}]", f"[{numbers}]"
    pat = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?{L}+| ?{N}+| ?[^\s{letters}{numbers}]+"
           rf"|\s+(?!\S)|\s+")
    return re.compile(pat), re.compile(N)


class Tokenizer:
    """encode(text) -> ids, decode(ids) -> text, and a streaming decoder."""

    def __init__(self, meta: dict):
        model = meta.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"[llm] tokenizer '{model}' is not supported (only "
                             "byte-level BPE, 'gpt2')")
        self.tokens = list(meta["tokenizer.ggml.tokens"])
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {}
        for r, m in enumerate(meta["tokenizer.ggml.merges"]):
            a, b = m.split(" ", 1)
            self.ranks[(a, b)] = r
        types = meta.get("tokenizer.ggml.token_type")
        types = [int(t) for t in types.tolist()] if types is not None else []
        self.special = {t: i for i, t in enumerate(self.tokens)
                        if i < len(types) and types[i] in _SPECIAL_TYPES}
        self._special_re = (re.compile("|".join(
            re.escape(t) for t in sorted(self.special, key=len, reverse=True)))
            if self.special else None)

        def scalar(key):
            v = meta.get(key)
            return None if v is None else int(v.item() if hasattr(v, "item") else v)

        self.bos_id = scalar("tokenizer.ggml.bos_token_id")
        self.eos_id = scalar("tokenizer.ggml.eos_token_id")
        add_bos = meta.get("tokenizer.ggml.add_bos_token")
        self.add_bos = bool(add_bos.item()) if add_bos is not None else False
        self.split_digits = meta.get("tokenizer.ggml.pre") in _DIGIT_SPLIT
        self.pattern, self.number = _gpt2_pattern()
        self.byte_enc = _byte_alphabet()
        self.byte_dec = {c: b for b, c in self.byte_enc.items()}
        self._cache = {}

    # ---------------------------------------------------------------- encode
    def _bpe(self, piece: str):
        """Token ids of one pre-token (already in the byte alphabet)."""
        hit = self._cache.get(piece)
        if hit is not None:
            return hit
        parts = list(piece)
        ranks = self.ranks
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            a, b = parts[at], parts[at + 1]
            merged, i = [], 0
            while i < len(parts):  # merge every occurrence of the pair
                if i < len(parts) - 1 and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = []
        for p in parts:
            if p in self.ids:
                ids.append(self.ids[p])
            else:  # no merge made it: its single bytes (always in the vocab)
                ids.extend(self.ids[c] for c in p)
        if len(self._cache) < 100000:
            self._cache[piece] = ids
        return ids

    def _pretokenize(self, text: str):
        chunks = [text]
        if self.split_digits:
            chunks = []
            last = 0
            for m in self.number.finditer(text):
                if m.start() > last:
                    chunks.append(text[last:m.start()])
                chunks.append(m.group())
                last = m.end()
            if last < len(text):
                chunks.append(text[last:])
        for c in chunks:
            yield from self.pattern.findall(c)

    def _encode_plain(self, text: str, out: list):
        enc = self.byte_enc
        for piece in self._pretokenize(text):
            out.extend(self._bpe("".join(enc[b] for b in piece.encode("utf-8"))))

    def encode(self, text: str, add_bos: bool = None, parse_special: bool = True):
        """Token ids of text; special tokens written in the text (such as
        ``<|im_start|>``) become their ids when ``parse_special``."""
        ids = []
        if (self.add_bos if add_bos is None else add_bos) and self.bos_id is not None:
            ids.append(self.bos_id)
        last = 0
        if parse_special and self._special_re is not None:
            for m in self._special_re.finditer(text):
                self._encode_plain(text[last:m.start()], ids)
                ids.append(self.special[m.group()])
                last = m.end()
        self._encode_plain(text[last:], ids)
        return ids

    # ---------------------------------------------------------------- decode
    def token_bytes(self, i: int) -> bytes:
        t = self.tokens[i]
        if t in self.special:
            return t.encode("utf-8")
        dec = self.byte_dec
        return bytes(dec[c] for c in t if c in dec)

    def decode(self, ids) -> str:
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", "replace")

    def stream(self):
        """A StreamDecoder: feed ids one at a time, get the text that is
        complete (UTF-8 sequences split across tokens are held back)."""
        return StreamDecoder(self)


class StreamDecoder:
    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.dec = codecs.getincrementaldecoder("utf-8")("replace")

    def add(self, i: int) -> str:
        return self.dec.decode(self.tok.token_bytes(i))

    def flush(self) -> str:
        return self.dec.decode(b"", final=True)
