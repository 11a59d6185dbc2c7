"""The MLP training step of shared/seeds/compile.rst (Linear/ReLU layers,
SGD at 0.01, mean cross entropy), eager and compiled, for the benchmarks
that time it (compile_host_bench.py, gpu_products_bench.py)."""

import cmx.core as mx
import cmx.nn as nn
import cmx.optimizers as optim


def mlp_step(x, y, sizes):
    """Builds the model for layer widths `sizes` (e.g. (784, 512, 512, 10))
    and returns (eager, make_compiled): eager() runs one step on (x, y) and
    evaluates the loss and the parameters; make_compiled() returns a new
    compiled step (a new function object each time, since traces are kept
    per function), a no-argument callable that runs one compiled step and
    evaluates the same."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    model = nn.Sequential(*layers)
    opt = optim.SGD(learning_rate=0.01)
    mx.eval(model.parameters())

    def loss_fn(m, x, y):
        return nn.losses.cross_entropy(m(x), y, reduction="mean")

    lg = nn.value_and_grad(model, loss_fn)

    def eager():
        loss, grads = lg(model, x, y)
        opt.update(model, grads)
        mx.eval(loss, model.parameters())

    state = [model.state, opt.state]

    def make_compiled():
        def step(x, y):
            loss, grads = lg(model, x, y)
            opt.update(model, grads)
            return loss

        cstep = mx.compile(step, inputs=state, outputs=state)
        return lambda: mx.eval(cstep(x, y), model.parameters())

    return eager, make_compiled
