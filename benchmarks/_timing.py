"""Timing helpers shared by the Python benchmarks (imported, not run)."""

import time


def best_alternating(fns, reps, number):
    """Best mean time in seconds of each function over reps groups of
    number calls, the functions taking turns group by group so that a shared
    machine's slow spells hit all of them alike (the ratios are what the
    benchmarks report)."""
    best = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t0) / number)
    return best


def best_of(fn, reps, number):
    """Best mean time in seconds of fn over reps groups of number calls."""
    return best_alternating([fn], reps, number)[0]
