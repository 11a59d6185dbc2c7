"""The llm example's model in PyTorch eager, for benchmarks/llm_gpu_bench.py
(issue 15: cmx's decoding beside "the same model in PyTorch eager,
bfloat16, dequantized weights", in the same run).

``TorchLlama(model, device, dtype)`` copies a loaded examples/llm model
(``model.Llama``, its quantized layers dequantized by cmx: the same
values) into PyTorch tensors and runs the same arithmetic: RMSNorm, the
fused q/k/v projection (key and value rows of each kv head side by side,
as the loader fuses them), traditional RoPE on the queries and keys,
grouped-query attention over a preallocated cache
(``F.scaled_dot_product_attention`` with ``enable_gqa``), the output
projection, RMSNorm, the fused gate/up projection and SwiGLU, the down
projection, then the final norm and the head.

``decode(ids, tokens)`` runs the prompt one token at a time, then greedy
decoding, each step queued without reading the token back (the argmax
stays on the device and feeds the next step's embedding lookup): PyTorch
eager at its best, with no host wait a token. Returns the tokens and the
decoding rate over the tokens after the first, as generate.py reports
cmx's.
"""

import time

import numpy as np


class TorchLlama:
    def __init__(self, model, device="cuda", dtype="bfloat16"):
        import cmx.core as mx
        import cmx.nn as nn
        import torch

        a = model.args
        self._setup(torch, device, dtype, a.n_heads, a.n_kv_heads, a.head_dim,
                    a.norm_eps, a.rope_dims, a.rope_base, a.context_length)

        def t(x):
            return self._tensor(np.array(x.astype(mx.float32)))

        def dense(m):
            if isinstance(m, (nn.QuantizedLinear, nn.QuantizedEmbedding)):
                return t(mx.dequantize(m["weight"], m["scales"], m["biases"],
                                       m.group_size, m.bits))
            return t(m["weight"])

        self.embedding = dense(model.embedding)
        self.head = dense(model.output) if "output" in model else self.embedding
        self.norm = t(model.norm.weight)
        D, Hk = self.D, self.Hk
        for b in model.layers:
            at, ml = b.attention, b.mlp
            if "wqkv" in at:
                qkv = dense(at.wqkv)
            else:  # the loader's row order: queries, then each kv head's k, v
                wq, wk, wv = dense(at.wq), dense(at.wk), dense(at.wv)
                parts = [wq]
                for i in range(Hk):
                    parts += [wk[i * D:(i + 1) * D], wv[i * D:(i + 1) * D]]
                qkv = torch.cat(parts)
            gate_up = (dense(ml.gate_up) if "gate_up" in ml else
                       torch.cat([dense(ml.gate), dense(ml.up)]))
            self.layers.append(dict(
                n1=t(b.attention_norm.weight), qkv=qkv, wo=dense(at.wo),
                n2=t(b.mlp_norm.weight), gate_up=gate_up, down=dense(ml.down)))

    @classmethod
    def random(cls, device="cuda", dtype="bfloat16", vocab=49152, dims=576,
               layers=30, heads=9, kv_heads=3, hidden=1536, head_dim=64,
               seed=0):
        """A model of random weights (SmolLM2-135M's shapes by default),
        without cmx: PyTorch's speed alone."""
        import torch

        self = cls.__new__(cls)
        self._setup(torch, device, dtype, heads, kv_heads, head_dim, 1e-5,
                    head_dim, 100000.0, 8192)
        rng = np.random.default_rng(seed)

        def r(*shape):
            return self._tensor(
                (rng.standard_normal(shape) * 0.05).astype(np.float32))

        def ones():
            return self._tensor(np.ones(dims, np.float32))

        D = head_dim
        self.embedding = r(vocab, dims)
        self.head, self.norm = self.embedding, ones()
        for _ in range(layers):
            self.layers.append(dict(
                n1=ones(), qkv=r((heads + 2 * kv_heads) * D, dims),
                wo=r(dims, heads * D), n2=ones(), gate_up=r(2 * hidden, dims),
                down=r(dims, hidden)))
        return self

    def _setup(self, torch, device, dtype, heads, kv_heads, head_dim, eps,
               rope_dims, rope_base, context):
        self.torch, self.device = torch, device
        self.dtype = getattr(torch, dtype)
        if str(device).startswith("cuda"):
            # cuDNN's attention builds a plan for every new key length (1.5
            # ms of host time a call, measured on an H200 with torch 2.11):
            # the flash / memory-efficient kernels take the growing cache
            torch.backends.cuda.enable_cudnn_sdp(False)
        self.H, self.Hk, self.D = heads, kv_heads, head_dim
        self.eps, self.rope_dims, self.context = eps, rope_dims, context
        self.layers = []
        # RoPE (traditional: adjacent feature pairs) tables by position
        inv = rope_base ** (-np.arange(0, rope_dims, 2) / rope_dims)
        ang = np.arange(context)[:, None] * inv[None, :]
        self.cos = torch.tensor(np.cos(ang), dtype=torch.float32, device=device)
        self.sin = torch.tensor(np.sin(ang), dtype=torch.float32, device=device)

    def _tensor(self, a):
        return self.torch.from_numpy(a).to(device=self.device, dtype=self.dtype)

    def _rope(self, x, pos):
        """x (..., D) rotated at position pos (its first rope_dims
        features, in adjacent pairs), in float32 as cmx's rope computes."""
        torch = self.torch
        r = self.rope_dims
        xf = x[..., :r].float()
        x1, x2 = xf[..., 0::2], xf[..., 1::2]
        c, s = self.cos[pos], self.sin[pos]
        y = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).flatten(-2)
        if r == x.shape[-1]:
            return y.to(x.dtype)
        return torch.cat([y.to(x.dtype), x[..., r:]], -1)

    def _step(self, tok, pos, K, V):
        """Logits (1, vocab) of token tok (a (1,) device tensor) at pos."""
        torch = self.torch
        F = torch.nn.functional
        H, Hk, D = self.H, self.Hk, self.D
        x = self.embedding[tok]
        for L, k_c, v_c in zip(self.layers, K, V):
            h = F.rms_norm(x, (x.shape[-1],), L["n1"], self.eps)
            y = h @ L["qkv"].T
            q = self._rope(y[:, :H * D].view(1, H, 1, D), pos)
            kv = y[:, H * D:].view(1, Hk, 1, 2 * D)
            k_c[:, :, pos:pos + 1] = self._rope(kv[..., :D], pos)
            v_c[:, :, pos:pos + 1] = kv[..., D:]
            o = F.scaled_dot_product_attention(q, k_c[:, :, :pos + 1],
                                               v_c[:, :, :pos + 1],
                                               scale=D ** -0.5, enable_gqa=True)
            x = x + o.reshape(1, H * D) @ L["wo"].T
            h = F.rms_norm(x, (x.shape[-1],), L["n2"], self.eps)
            g, u = (h @ L["gate_up"].T).chunk(2, -1)
            x = x + (F.silu(g) * u) @ L["down"].T
        x = F.rms_norm(x, (x.shape[-1],), self.norm, self.eps)
        return x @ self.head.T

    def decode(self, ids, tokens):
        """(greedy tokens, decoding tokens/s after the first) for the
        prompt ids and `tokens` new tokens."""
        torch = self.torch
        n = len(ids) + tokens
        if n > self.context:
            raise ValueError(f"{n} positions past the context {self.context}")
        shape = (1, self.Hk, n, self.D)
        K = [torch.zeros(shape, dtype=self.dtype, device=self.device)
             for _ in self.layers]
        V = [torch.zeros(shape, dtype=self.dtype, device=self.device)
             for _ in self.layers]
        sync = (torch.cuda.synchronize if str(self.device).startswith("cuda")
                else (lambda: None))
        with torch.inference_mode():
            prompt = torch.tensor(ids, device=self.device)
            for i in range(len(ids)):
                logits = self._step(prompt[i:i + 1], i, K, V)
            tok = logits.argmax(-1)
            out = [tok]
            sync()
            t0 = time.perf_counter()
            for i in range(1, tokens):
                tok = self._step(tok, len(ids) + i - 1, K, V).argmax(-1)
                out.append(tok)
            sync()
            dt = time.perf_counter() - t0
        got = torch.cat(out).tolist()
        return got, (tokens - 1) / dt if tokens > 1 else 0.0


if __name__ == "__main__":
    # PyTorch alone (no cmx) on a random model of SmolLM2-135M's shapes:
    #   python benchmarks/_torch_llama.py [cuda|cpu] [dtype] [--profile]
    import sys

    import torch

    argv = [x for x in sys.argv[1:] if not x.startswith("--")]
    dev = argv[0] if argv else ("cuda" if torch.cuda.is_available() else "cpu")
    m = TorchLlama.random(dev, argv[1] if len(argv) > 1 else "bfloat16")
    ids = list(range(1, 17))
    m.decode(ids, 8)
    _, rate = m.decode(ids, 64)
    print(f"torch eager alone on {dev}: {rate:.1f} tokens/s")
    if "--profile" in sys.argv:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
        with profile(activities=acts) as prof:
            m.decode(ids, 4)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
