"""Threads: the GIL is released around evaluation and data reads, and
several threads can build and evaluate graphs at once."""
import threading
import time

import numpy as np

import cmx.core as mx


def worker(seed, results, errors):
    try:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(50_000).astype(np.float32)
        a = mx.array(x)
        expected = x.copy()
        for i in range(30):
            a = a + float(i)
            expected = expected + np.float32(i)
            if i % 10 == 9:
                mx.eval(a)
        results[seed] = np.abs(np.array(a) - expected).max()
    except Exception as e:  # pragma: no cover - reported below
        errors.append(e)


def test_threads_build_and_evaluate_concurrently():
    results, errors = {}, []
    threads = [threading.Thread(target=worker, args=(s, results, errors)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4
    assert all(v < 1e-3 for v in results.values())


def test_shared_array_across_threads():
    base = mx.array(np.arange(1000, dtype=np.float32))
    outs = [None] * 4

    def run(i):
        outs[i] = np.array(base + i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        np.testing.assert_array_equal(outs[i], np.arange(1000) + i)


def test_gil_released_during_eval():
    # A Python thread keeps running while the main thread evaluates a long
    # chain: its counter must advance during the evaluation. The chain runs
    # on the CPU stream: the binding releases the GIL the same way for every
    # device, and on a GPU these 40 adds end sooner than a thread switch.
    n = 2_000_000
    with mx.stream(mx.cpu):
        a = mx.array(np.ones(n, np.float32))
        for _ in range(40):
            a = a + 1.0
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.01)
    before = counter[0]
    with mx.stream(mx.cpu):
        mx.eval(a)
    during = counter[0] - before
    stop.set()
    t.join()
    assert np.array(a)[0] == 41.0
    assert during > 0
