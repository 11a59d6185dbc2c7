"""Timing helpers shared by the Python benchmarks (imported, not run)."""

import time


def best_alternating(fns, reps, number, clock=time.perf_counter):
    """Best mean time in seconds of each function over reps groups of
    number calls, the functions taking turns group by group so that a shared
    machine's slow spells hit all of them alike (the ratios are what the
    benchmarks report). clock: time.process_time counts the process's CPU
    time instead of the wall clock's."""
    best = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = clock()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (clock() - t0) / number)
    return best


def best_of(fn, reps, number):
    """Best mean time in seconds of fn over reps groups of number calls."""
    return best_alternating([fn], reps, number)[0]
