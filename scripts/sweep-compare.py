#!/usr/bin/env python3
"""bench_sweep old against new, case by case, with a verdict that holds on
a noisy shared machine.

    python3 scripts/sweep-compare.py OLD NEW [--filter S] [--pairs 9]

OLD and NEW are each a bench_sweep binary that has --serve (built from
benchmarks/bench_sweep.c of this tree or later) or a tree whose build/
holds libcmx.so: this tree's benchmarks/bench_sweep.c is then compiled
against that tree's include/ and build/libcmx.so (the flags of CMake's
Release build), so both sides run the same benchmark source. Example, the
commit before issue 10 against this tree:

    python3 scripts/sweep-compare.py /work/wt/sweep-old .

How: the two processes run `bench_sweep --serve`, reach each case in the
same order and time it only when asked, so the runs of one case alternate
between the builds (ABBA ABBA ...; each run the best of n evaluations, n
chosen so one run takes about --target-ms) within a second of each other:
load that comes and goes falls on both. For each case the ratio new/old of
each pair gives a median and a distribution-free 95% confidence interval
(order statistics of the binomial). A case is

    slower    the whole interval above 1 + threshold (default 5%)
    slower?   the interval above 1 and the median past the threshold
    faster    the whole interval below 1
    noise     otherwise (no difference shown)

A case left "slower?" gets more pairs (up to --max-pairs). With --confirm
(default on) every case found slower or slower? is run again in a second,
independent pass; "confirmed slower" needs the second pass to say slower
too (about 2.5% of 800 cases cross an interval by chance once; twice,
almost none). Old against old (OLD OLD) measures the false positives;
--control does it in the same run: a second OLD process is timed in the
same rotation (ABCCBA), so each case has an old/old ratio taken under the
same load as new/old, and the summary gives the band of the old/old
medians (2.5-97.5%) and every new/old median outside it.
The exit status is 0; the verdicts are the output (and --json FILE).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFLAGS = ["-O3", "-DNDEBUG", "-Wall", "-Wextra", "-fno-math-errno",
          "-fno-semantic-interposition", "-std=gnu11"]


def binary(spec, tag, outdir):
    """The bench_sweep to run for spec (a binary, or a tree to build one)."""
    if os.path.isfile(spec) and os.access(spec, os.X_OK):
        return os.path.abspath(spec)
    tree = os.path.abspath(spec)
    lib = os.path.join(tree, "build")
    if not os.path.isfile(os.path.join(lib, "libcmx.so")):
        sys.exit(f"sweep-compare: {lib}/libcmx.so not found (build {tree})")
    out = os.path.join(outdir, f"bench_sweep_{tag}")
    cmd = ["cc", *CFLAGS, "-I", os.path.join(tree, "include"),
           os.path.join(ROOT, "benchmarks", "bench_sweep.c"), "-L", lib,
           "-lcmx", f"-Wl,-rpath,{lib}", "-o", out]
    subprocess.run(cmd, check=True)
    return out


class Bench:
    """One `bench_sweep --serve` process."""

    def __init__(self, path, filt):
        self.p = subprocess.Popen([path, "--serve", filt or ""],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True,
                                  bufsize=1)

    def next_case(self):
        for line in self.p.stdout:
            if line.startswith("CASE "):
                return line[5:].rstrip("\n")
        return None

    def time(self, n):
        """(wall, cpu) seconds of the best of n runs."""
        self.p.stdin.write(f"t {n}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line.startswith("T "):
            raise RuntimeError(f"bench_sweep answered {line!r}")
        wall, cpu = line[2:].split()
        return float(wall), float(cpu)

    def skip(self):
        self.p.stdin.write("n\n")
        self.p.stdin.flush()

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait()


def median_ci(xs, level=0.95):
    """Median of xs and a distribution-free interval of at least level
    (the k-th smallest and k-th largest, k from the binomial(n, 1/2)); the
    whole range when n is too small for level."""
    s = sorted(xs)
    n = len(s)
    k = 0  # 0-based: the interval is [s[k], s[n-1-k]]
    for j in range(n // 2):
        # coverage of [s[j], s[n-1-j]]: 1 - 2 P(Binomial(n, 1/2) <= j)
        tail = sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n
        if 1 - 2 * tail >= level:
            k = j
        else:
            break
    return statistics.median(s), s[k], s[n - 1 - k]


def verdict(lo, med, hi, thr):
    if lo > 1 + thr:
        return "slower"
    if lo > 1 and med > 1 + thr:
        return "slower?"
    if hi < 1:
        return "faster"
    return "noise"


def compare_case(a, b, opts, c=None):
    """Times the current case of both processes; returns the record: the
    verdict by the clock of opts.clock, the other clock's beside it. With
    c (--control: a second process of OLD) each pair times c too, in the
    same rotation, and rec["control"] is c against a by the same rules."""
    procs = [a, b] + ([c] if c else [])
    warm = [p.time(1)[0] for p in procs]  # warm-up
    n = max(1, min(64, math.ceil(opts.target_ms * 1e-3 / max(*warm, 1e-6))))
    # clock -> one list of run times per process
    runs = {"wall": [[] for _ in procs], "cpu": [[] for _ in procs]}
    use = 0 if opts.clock == "wall" else 1

    def pair(i):
        # ABBA (ABCCBA with a control): the order alternates pair by pair
        order = range(len(procs)) if i % 2 == 0 else \
            range(len(procs) - 1, -1, -1)
        for k in order:
            t = procs[k].time(n)
            for ci, clock in enumerate(("wall", "cpu")):
                runs[clock][k].append(t[ci])

    def judge(clock, k=1):
        olds, news = runs[clock][0], runs[clock][k]
        med, lo, hi = median_ci([y / x for x, y in zip(olds, news)])
        return {"old_ms": 1e3 * min(olds), "new_ms": 1e3 * min(news),
                "median": med, "lo": lo, "hi": hi,
                "verdict": verdict(lo, med, hi, opts.threshold)}

    for i in range(opts.pairs):
        pair(i)
    rec = judge(opts.clock)
    while rec["verdict"] == "slower?" and \
            len(runs["wall"][0]) < opts.max_pairs:
        pair(len(runs["wall"][0]))
        pair(len(runs["wall"][0]))
        rec = judge(opts.clock)
    rec["other"] = judge("cpu" if use == 0 else "wall")
    if c:
        rec["control"] = judge(opts.clock, 2)
        rec["control"]["other"] = judge("cpu" if use == 0 else "wall", 2)
    rec["pairs"], rec["runs"] = len(runs["wall"][0]), n
    return rec


def one_pass(opts, old, new, only=None, label="pass"):
    """Runs every case (or the names in only) once; returns {name: rec}."""
    a, b = Bench(old, opts.filter), Bench(new, opts.filter)
    c = Bench(old, opts.filter) if opts.control else None
    out, seen = {}, {}
    t0 = time.time()
    try:
        while True:
            na, nb = a.next_case(), b.next_case()
            if c and c.next_case() != na:
                raise RuntimeError("the control lists other cases")
            if na is None or nb is None:
                if na != nb:
                    raise RuntimeError("the two builds list different cases")
                break
            if na != nb:
                raise RuntimeError(f"case order differs: {na!r} vs {nb!r}")
            k = seen.get(na, 0)  # a repeated name gets #2, #3 ...
            seen[na] = k + 1
            name = na if k == 0 else f"{na} #{k + 1}"
            if only is None or name in only:
                rec = compare_case(a, b, opts, c)
                out[name] = rec
                if opts.verbose:
                    print(f"{label} {len(out):4d} {name:46s} old "
                          f"{rec['old_ms']:9.3f} new {rec['new_ms']:9.3f} ms"
                          f"  {rec['median']:.3f} [{rec['lo']:.3f}, "
                          f"{rec['hi']:.3f}] x{rec['pairs']}  "
                          f"{rec['verdict']:7s} ({other(rec)})"
                          + (f" control {rec['control']['median']:.3f} "
                             f"{rec['control']['verdict']}" if c else ""),
                          flush=True)
            for p in (a, b, c) if c else (a, b):
                p.skip()
    finally:
        for p in (a, b, c) if c else (a, b):
            p.close()
    if opts.verbose:
        print(f"{label}: {len(out)} cases in {time.time() - t0:.0f} s",
              flush=True)
    return out


def other(rec):
    o = rec["other"]
    return (f"other clock {o['median']:.3f} [{o['lo']:.3f}, {o['hi']:.3f}] "
            f"{o['verdict']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--filter", default="",
                    help="only the cases whose name contains it")
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--max-pairs", type=int, default=21)
    ap.add_argument("--target-ms", type=float, default=20.0,
                    help="each timed run: best of n evaluations, n so that "
                    "they take about this long")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="the verdict's clock: wall time, or the process's "
                    "CPU time (all threads; other processes' load moves it "
                    "less, a lost parallel speed-up does not show); the "
                    "other is printed beside it")
    ap.add_argument("--no-confirm", dest="confirm", action="store_false")
    ap.add_argument("--control", action="store_true",
                    help="a second OLD process timed in the same rotation: "
                    "old against old, case by case, gives the noise band "
                    "of this run (its medians' 2.5-97.5%% range)")
    ap.add_argument("--json", help="write every record here")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build"),
                    help="where binaries built from trees go")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="a line per case as it finishes")
    opts = ap.parse_args()
    os.makedirs(opts.workdir, exist_ok=True)
    old = binary(opts.old, "old", opts.workdir)
    new = binary(opts.new, "new", opts.workdir)
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    print(f"sweep-compare: old {old}\nsweep-compare: new {new}\n"
          f"sweep-compare: load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} on {os.cpu_count()} CPUs; verdicts by "
          f"{opts.clock} time", flush=True)
    t0 = time.time()
    first = one_pass(opts, old, new, label="pass 1")
    suspects = {k for k, r in first.items()
                if r["verdict"] in ("slower", "slower?")}
    second = {}
    if opts.confirm and suspects:
        second = one_pass(opts, old, new, only=suspects, label="pass 2")
    counts = {}
    for r in first.values():
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    meds = [r["median"] for r in first.values()]
    print(f"\nsweep-compare: {len(first)} cases in {time.time() - t0:.0f} s,"
          f" load average now {os.getloadavg()[0]:.1f}; median new/old "
          f"{statistics.median(meds) if meds else float('nan'):.3f}; "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if opts.control:
        cm = sorted(r["control"]["median"] for r in first.values())
        lo_b = cm[int(0.025 * (len(cm) - 1))]
        hi_b = cm[int(0.975 * (len(cm) - 1))]
        cc = {}
        for r in first.values():
            v = r["control"]["verdict"]
            cc[v] = cc.get(v, 0) + 1
        print(f"sweep-compare: control (old/old) median "
              f"{statistics.median(cm):.3f}, noise band (2.5-97.5%) "
              f"[{lo_b:.3f}, {hi_b:.3f}]; "
              + ", ".join(f"{k} {v}" for k, v in sorted(cc.items())))
        out = sorted((r["median"], k) for k, r in first.items()
                     if not lo_b <= r["median"] <= hi_b)
        print(f"sweep-compare: {len(out)} case(s) of new/old outside the "
              f"band")
        for m, k in out:
            r = first[k]
            print(f"  {m:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] {r['verdict']:7s}"
                  f" {k} (control {r['control']['median']:.3f})")
    confirmed = []
    for name in sorted(suspects):
        r1 = first[name]
        r2 = second.get(name)
        ok = r2 is not None and r2["verdict"] in ("slower", "slower?")
        if ok or not opts.confirm:
            confirmed.append(name)
        print(f"  {'CONFIRMED' if ok else 'not again':9s} {name:46s} "
              f"{r1['median']:.3f} [{r1['lo']:.3f}, {r1['hi']:.3f}] {r1['verdict']}"
              + (f" | {r2['median']:.3f} [{r2['lo']:.3f}, {r2['hi']:.3f}] "
                 f"{r2['verdict']}" if r2 else "") + f" | {other(r1)}")
    print(f"sweep-compare: {len(confirmed)} case(s) confirmed slower "
          f"(median past {100 * opts.threshold:.0f}%, interval above 1, "
          f"in {'both passes' if opts.confirm else 'one pass'})")
    for name in confirmed:
        print(f"  slower: {name}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"first": first, "second": second,
                       "confirmed": confirmed, "load": load}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
