"""Transforms leave no reference cycles: with the cycle collector off, a
training loop's memory stays flat, because every array a step made is
freed by reference counting when the step's results are dropped."""
import gc

import cmx.core as mx

def _mlp(key_seed, sizes):
    mx.random.seed(key_seed)
    return {
        "layers": [
            {"w": mx.random.normal((m, n)) * (1.0 / m**0.5), "b": mx.zeros((n,))}
            for m, n in zip(sizes[:-1], sizes[1:])
        ]
    }


def _loss(params, x, y):
    h = x
    for i, layer in enumerate(params["layers"]):
        h = h @ layer["w"] + layer["b"]
        if i + 1 < len(params["layers"]):
            h = mx.maximum(h, 0.0)
    return ((h - y) ** 2).mean(), h.shape  # an auxiliary non-array output


def _train(steps, params, x, y, lr=0.01):
    step = mx.value_and_grad(_loss)
    actives = []
    for _ in range(steps):
        (loss, _shape), grads = step(params, x, y)
        params = {
            "layers": [
                {k: p[k] - lr * g[k] for k in p}
                for p, g in zip(params["layers"], grads["layers"])
            ]
        }
        mx.eval(params, loss)
        actives.append(mx.get_active_memory())
    return params, actives


def test_value_and_grad_loop_memory_is_flat_without_gc():
    sizes = [64, 256, 256, 10]
    x = mx.random.normal((128, sizes[0]))
    y = mx.random.normal((128, sizes[-1]))
    params = _mlp(0, sizes)
    mx.eval(params, x, y)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        # Warm up (buffer cache, first-call allocations), then measure.
        params, _ = _train(5, params, x, y)
        mx.reset_peak_memory()
        base_active = mx.get_active_memory()
        params, actives = _train(200, params, x, y)
        peak_growth = mx.get_peak_memory() - base_active
    finally:
        if was_enabled:
            gc.enable()
    # One step's working set (activations, gradients, new parameters) is a
    # few times the parameters; a leak of each step's arrays would add that
    # much per step (cmx before the fix: +340 KB a step, 68 MB over 200).
    param_bytes = sum(l["w"].nbytes + l["b"].nbytes for l in params["layers"])
    drift = max(actives[10:]) - min(actives[10:])
    assert drift <= param_bytes // 2, (drift, param_bytes)
    assert peak_growth <= 8 * param_bytes, (peak_growth, param_bytes)


def test_transforms_free_their_arrays_without_gc():
    """grad, vjp, jvp, vmap and custom_function: the arrays of a call are
    gone once its results are dropped (no cycle keeps them)."""
    x = mx.ones((256, 256))
    mx.eval(x)

    @mx.custom_function
    def cf(a):
        return a * 2

    @cf.vjp
    def cf_vjp(primals, cot, out):
        return cot * 2

    calls = [
        lambda: mx.grad(lambda t: (t * t).sum())(x),
        lambda: mx.value_and_grad(lambda d: (d["a"] * 3).sum())({"a": x}),
        lambda: mx.vjp(lambda t: t * 3, [x], [x]),
        lambda: mx.jvp(lambda t: t * 3, [x], [x]),
        lambda: mx.vmap(lambda t: t * 3)(x),
        lambda: mx.grad(lambda t: cf(t).sum())(x),
        lambda: mx.checkpoint(lambda t: [t * 4])(x),
    ]
    gc.collect()
    gc.disable()
    try:
        for call in calls:
            mx.eval(call())  # warm up
            base = mx.get_active_memory()
            for _ in range(20):
                r = call()
                mx.eval(r)
                del r
            assert mx.get_active_memory() - base <= x.nbytes, call
    finally:
        gc.enable()
