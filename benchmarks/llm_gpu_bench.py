"""The llm example's speed (issue 15: decoding SmolLM2-135M Q4_1 at batch 1
at 1000 tokens/s or more on the GPU), and where a token's time goes.

The model: the real GGUF file when ``CMX_LLM_MODEL`` names one (a file, or
a folder of parts as examples/llm/generate.py takes it), else a synthetic
model of SmolLM2-135M's shapes (30 blocks, 576 dims, 9 query heads of 64
sharing 3 kv heads, a 1536-wide SwiGLU MLP, a 49152-token tied embedding)
with random weights quantized as the file's Q4_1 tensors (4 bits, groups
of 32, float16 scales and biases): the same kernels, shapes and bytes, so
the same speed, without the 98 MB file.

Prints:
  - the primitives of one decoding step's graph, by name (before compile's
    fusion: an upper bound of its launches, views aside);
  - prompt tokens/s (a prompt of --prompt random ids, one pass) and
    decoding tokens/s (greedy, --tokens steps, each step queued before the
    previous token is read, as generate.py does), after a warm-up run of the
    same lengths (traces compiled, GPU kernels built);
  - a synchronous decoding loop's time per token (each step waited for);
  - when PyTorch is installed (--torch auto, the default), the same model in
    PyTorch eager (benchmarks/_torch_llama.py: bfloat16, the weights
    dequantized by cmx, each step queued without a host wait) decoding the
    same prompt greedily: its tokens/s beside cmx's, and how many of the
    greedy tokens agree (bfloat16 against cmx's float32 hidden states: the
    first ones, then they may part);
  - on the GPU, when PyTorch is installed, a profile of --profile-steps
    synchronous steps through torch.profiler (CUPTI records every kernel
    of the process, cmx's too): kernels per token, their summed time per
    token against the wall time per token, and the kernels that take the
    most time. Wall time minus kernel time is what launches, host work and
    gaps cost.

Run: PYTHONPATH=build/python python benchmarks/llm_gpu_bench.py [--device cpu]
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "llm"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import cmx.core as mx  # noqa: E402
from generate import Generator, default_model_path, sample  # noqa: E402

# SmolLM2-135M-Instruct's hyperparameters (its GGUF metadata)
SMOL = dict(vocab=49152, dims=576, layers=30, heads=9, kv_heads=3, hidden=1536,
            head_dim=64, rope_base=100000.0, eps=1e-5, context=8192)


def synthetic(seed=0, bits=4, group=32):
    """(weights, metadata) as mx.load returns them for a Llama GGUF file of
    SmolLM2-135M's shapes, with random weights quantized like Q4_1."""
    c = SMOL
    rng = np.random.default_rng(seed)
    a = "llama"
    meta = {"general.architecture": a, f"{a}.embedding_length": c["dims"],
            f"{a}.attention.head_count": c["heads"],
            f"{a}.attention.head_count_kv": c["kv_heads"],
            f"{a}.block_count": c["layers"], f"{a}.feed_forward_length": c["hidden"],
            f"{a}.attention.layer_norm_rms_epsilon": c["eps"],
            f"{a}.rope.freq_base": c["rope_base"], f"{a}.context_length": c["context"],
            f"{a}.vocab_size": mx.array(c["vocab"]),  # an array, as mx.load gives
            f"{a}.rope.dimension_count": c["head_dim"]}
    weights = {}

    def quant(name, rows, cols):
        w = mx.array((rng.standard_normal((rows, cols)) * 0.05).astype(np.float32))
        wq, s, b = mx.quantize(w, group_size=group, bits=bits)
        weights[name + ".weight"] = wq
        weights[name + ".scales"] = s.astype(mx.float16)
        weights[name + ".biases"] = b.astype(mx.float16)
        mx.eval(wq, weights[name + ".scales"], weights[name + ".biases"])

    def norm(name):
        weights[name + ".weight"] = mx.array(
            (1 + 0.1 * rng.standard_normal(c["dims"])).astype(np.float32))

    d, hd = c["dims"], c["head_dim"]
    quant("token_embd", c["vocab"], d)
    for i in range(c["layers"]):
        p = f"blk.{i}."
        quant(p + "attn_q", c["heads"] * hd, d)
        quant(p + "attn_k", c["kv_heads"] * hd, d)
        quant(p + "attn_v", c["kv_heads"] * hd, d)
        quant(p + "attn_output", d, c["heads"] * hd)
        quant(p + "ffn_gate", c["hidden"], d)
        quant(p + "ffn_up", c["hidden"], d)
        quant(p + "ffn_down", d, c["hidden"])
        norm(p + "attn_norm")
        norm(p + "ffn_norm")
    norm("output_norm")
    return weights, meta


def sync_steps(gen, ids, steps):
    """Runs the prompt, then `steps` decoding steps each waited for;
    returns the seconds per step."""
    gen.reset()
    logits = gen.prefill(ids)
    gen.offset = len(ids)
    token = sample(logits, 0, 1)
    mx.eval(token)
    t0 = time.perf_counter()
    for _ in range(steps):
        token = sample(gen.decode(token[:, None], gen.offset), 0, 1)
        mx.eval(token, *gen._kv())
        gen.offset += 1
    return (time.perf_counter() - t0) / steps


def step_ops(gen, ids):
    """The primitives of one decoding step's graph as written (uncompiled:
    before compile fuses elementwise chains), by name, counted through
    export_to_dot. Views (slices, reshapes, transposes, broadcasts) are
    among them and launch nothing where no copy is needed."""
    import collections
    import re

    gen.reset()
    token = sample(gen.prefill(ids), 0, 1)
    mx.eval(token)
    was, gen.compiled = gen.compiled, False
    try:
        logits = gen.decode(token[:, None], gen.offset)
    finally:
        gen.compiled = was
    dot = mx._export_to_dot([logits] + list(gen._kv()))
    return collections.Counter(re.findall(r'label="([^"]+)", shape=rectangle', dot))


def profile(gen, ids, steps, top):
    """Kernels per token and their time through torch.profiler."""
    try:
        import torch
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as tprofile
    except ImportError:
        print("   (no PyTorch: no kernel profile)")
        return
    gen.reset()
    logits = gen.prefill(ids)
    gen.offset = len(ids)
    token = sample(logits, 0, 1)
    mx.eval(token)
    torch.cuda.init()
    with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            token = sample(gen.decode(token[:, None], gen.offset), 0, 1)
            mx.eval(token, *gen._kv())
            gen.offset += 1
        wall = (time.perf_counter() - t0) / steps
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0)
        if e.count and t:
            rows.append((t, e.count, e.key))
    if not rows:
        print("   (the profiler recorded no kernels of cmx's)")
        return
    total = sum(t for t, _, _ in rows) / steps  # microseconds a token
    count = sum(n for _, n, _ in rows) / steps
    print(f"   profile of {steps} synchronous steps: {count:.0f} kernels/token, "
          f"kernel time {total:.0f} us/token, wall {wall * 1e6:.0f} us/token "
          f"(launches, host work, gaps: {wall * 1e6 - total:.0f} us/token)")
    for t, n, k in sorted(rows, reverse=True)[:top]:
        print(f"      {t / steps:8.1f} us/token  {n / steps:6.1f}/token  {k[:90]}")
    by_grid(prof, steps, [k for _, _, k in sorted(rows, reverse=True)[:top]])


def by_grid(prof, steps, names):
    """The profiled kernels among names split by launch grid (one grid is
    one shape of the model, e.g. each projection's matrix-vector product):
    launches a token and microseconds a launch, from the trace's kernel
    events."""
    import collections
    import json
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    groups = collections.defaultdict(list)
    for e in trace.get("traceEvents", []):
        a = e.get("args") or {}
        if e.get("cat") == "kernel" and e.get("name") in names and "grid" in a:
            groups[(e["name"], tuple(a["grid"]), tuple(a.get("block", ())))].append(
                float(e.get("dur", 0)))
    print("   by launch grid (kernel, grid, block: launches/token, us each):")
    for (name, grid, block), d in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        print(f"      {name[:28]:28s} grid {str(list(grid)):16s} block "
              f"{str(list(block)):14s} {len(d) / steps:6.1f}/token "
              f"{sum(d) / len(d):7.2f} us")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    ap.add_argument("--tokens", type=int, default=128, help="decoding steps")
    ap.add_argument("--context", type=int, default=1024, help="KV cache positions")
    ap.add_argument("--profile-steps", type=int, default=16)
    ap.add_argument("--top", type=int, default=12, help="kernels listed")
    ap.add_argument("--torch", choices=["auto", "off"], default="auto",
                    help="PyTorch eager beside cmx (auto: when installed)")
    ap.add_argument("--torch-dtype", default="bfloat16",
                    help="PyTorch's weights and activations")
    a = ap.parse_args()
    dev = a.device
    if dev == "auto":
        dev = "gpu" if mx.is_available(mx.gpu) else "cpu"
    mx.set_default_device(mx.gpu if dev == "gpu" else mx.cpu)
    env = os.environ.get("CMX_LLM_MODEL")
    t = time.perf_counter()
    if env:
        src, name = default_model_path(), os.path.basename(env)
    else:
        src, name = synthetic(), "synthetic SmolLM2-135M shapes, Q4_1-like (4 bits, g32)"
    gen = Generator(src, a.context)
    print(f"model: {name} on {mx.default_device()} (ready in "
          f"{time.perf_counter() - t:.1f} s)")
    if dev == "gpu":
        try:
            import torch
            print(f"card: {torch.cuda.get_device_name(0)}")
        except Exception:  # noqa: BLE001 - the card's name is optional
            pass
    rng = np.random.default_rng(1)
    ids = rng.integers(0, gen.model.args.vocab_size, a.prompt).tolist()
    ops = step_ops(gen, ids)
    print(f"   one decoding step as written: {sum(ops.values())} primitives: " +
          ", ".join(f"{k} {n}" for k, n in ops.most_common(a.top)))
    for label in ("warm-up", "timed"):
        gen.reset()
        out = list(gen.generate(ids, max_tokens=a.tokens, temp=0))
        p, tp, n, tg = gen.stats
        print(f"   {label:8s} prompt {p} tokens {p / tp:9.1f} tokens/s | decoding "
              f"{n} tokens {(n - 1) / tg if n > 1 else 0:9.1f} tokens/s")
    assert len(out) == a.tokens
    cmx_rate = (n - 1) / tg if n > 1 else 0.0
    per = sync_steps(gen, ids, min(32, a.tokens))
    print(f"   synchronous step (each waited for): {per * 1e6:.0f} us/token "
          f"({1 / per:.1f} tokens/s)")
    if a.torch == "auto":
        torch_beside(gen, ids, out, cmx_rate, dev, a.torch_dtype)
    if dev == "gpu" and a.profile_steps > 0:
        profile(gen, ids, a.profile_steps, a.top)


def torch_beside(gen, ids, out, cmx_rate, dev, dtype):
    """The same model's greedy decoding in PyTorch eager, after a warm-up
    of 8 tokens, beside cmx's figure."""
    try:
        import torch
    except ImportError:
        print("   (PyTorch is not installed: no comparison)")
        return
    from _torch_llama import TorchLlama

    device = "cuda" if dev == "gpu" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("   (PyTorch has no CUDA device: no comparison)")
        return
    tm = TorchLlama(gen.model, device, dtype)
    tm.decode(ids, 8)
    got, rate = tm.decode(ids, len(out))
    same = next((i for i, (x, y) in enumerate(zip(got, out)) if x != y), len(out))
    print(f"   torch eager {dtype} on {device}: decoding {len(got)} tokens "
          f"{rate:9.1f} tokens/s | cmx {cmx_rate / rate:.2f}x torch's speed | "
          f"greedy tokens agree for the first {same} of {len(out)}")


if __name__ == "__main__":
    main()
