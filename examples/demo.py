"""cmx demo: trains a LeNet-style network on Fashion-MNIST.

    make demo                      # builds the library and the extension, runs this
    python examples/demo.py --data DIR --epochs 5 --full --device gpu

Reads the four IDX files (gzip-compressed or not) of any MNIST-format
folder (default: Debian's dataset-fashion-mnist), trains with Adam on the
GPU when one is available (else the CPU) with a progress bar per epoch,
prints the test accuracy after each epoch, compares the eager training
step with the compiled one, and saves a loss/accuracy plot as PNG.
Needs nothing but cmx and the Python standard library.
"""

import argparse
import gzip
import math
import os
import struct
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blas_setup  # noqa: E402,F401  (OPENBLAS_CORETYPE, before cmx loads OpenBLAS)
import cmx.core as mx  # noqa: E402
import cmx.nn as nn  # noqa: E402
import cmx.optimizers as optim  # noqa: E402
from pngplot import Figure  # noqa: E402

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
           "Shirt", "Sneaker", "Bag", "Ankle boot"]


# ------------------------------------------------------------------ data


def _find(folder, prefix):
    names = sorted(os.listdir(folder))
    for n in names:
        if n.startswith(prefix) and ("idx" in n or "ubyte" in n):
            return os.path.join(folder, n)
    raise FileNotFoundError(
        f"no {prefix}* IDX file in {folder} (expected the four MNIST-format files "
        "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
        "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz])"
    )


def read_idx(path):
    """An IDX file as a uint8 array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    shape = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    body = memoryview(data)[4 + 4 * ndim:]
    if len(body) != math.prod(shape):
        raise ValueError(f"{path}: {len(body)} bytes of data for shape {shape}")
    return mx.array(body).reshape(shape)


def load_dataset(folder):
    """(train images, train labels, test images, test labels): images as
    float32 NHWC in [0, 1], labels int32."""
    def images(prefix):
        x = read_idx(_find(folder, prefix))
        return (x.astype(mx.float32) / 255.0).reshape(x.shape[0], x.shape[1], x.shape[2], 1)

    def labels(prefix):
        return read_idx(_find(folder, prefix)).astype(mx.int32)

    parts = (images("train-images"), labels("train-labels"),
             images("t10k-images"), labels("t10k-labels"))
    mx.eval(parts)
    return parts


# ----------------------------------------------------------------- model


class LeNet(nn.Module):
    """conv 5x5 (32) - relu - maxpool 2 - conv 5x5 (64) - relu - maxpool 2 -
    dense 128 - relu - dense 10, on 28x28x1 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(4 * 4 * 64, 128)
        self.fc2 = nn.Linear(128, 10)

    def __call__(self, x):
        x = self.pool(nn.relu(self.conv1(x)))
        x = self.pool(nn.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.fc2(nn.relu(self.fc1(x)))


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def make_step(model, optimizer, compiled=False):
    """One training step (forward, backward, update) as a function of the
    batch; with ``compiled``, wrapped in mx.compile with the model's and the
    optimizer's state captured (shared/seeds/compile.rst)."""
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        optimizer.update(model, grads)
        return loss

    if compiled:
        state = [model.state, optimizer.state]
        step = partial(mx.compile, inputs=state, outputs=state)(step)
    return step


def gpu_trains():
    """None when one small training step runs on the GPU, else the error
    (the GPU backend may still lack kernels for some primitives)."""
    try:
        with mx.stream(mx.gpu):
            model = LeNet()
            step = make_step(model, optim.Adam(learning_rate=1e-3))
            x = mx.zeros((2, 28, 28, 1))
            y = mx.zeros((2,), dtype=mx.int32)
            mx.eval(step(x, y), model.state)
        return None
    except (RuntimeError, ValueError) as e:
        return e


def compile_available():
    f = getattr(mx, "compile", None)  # a pending name raises when called
    return f is not None and not getattr(f, "_cmx_pending", None)


def accuracy(model, x, y, batch=1000):
    model.eval()
    correct = 0
    for i in range(0, x.shape[0], batch):
        logits = model(x[i:i + batch])
        correct += (mx.argmax(logits, axis=1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


# -------------------------------------------------------------- progress


class Progress:
    """A tqdm-style bar: ``epoch 1/3 |####----| 120/469 loss 0.532
    1850 samples/s ETA 0:12``, redrawn in place on a terminal and printed
    every 25% otherwise."""

    def __init__(self, total, label, out=sys.stdout, width=24):
        self.total, self.label, self.out, self.width = total, label, out, width
        self.start = time.perf_counter()
        self.tty = out.isatty()
        self.next_report = 0.25
        self.last_draw = 0.0

    def update(self, done, loss, samples):
        now = time.perf_counter()
        elapsed = max(now - self.start, 1e-9)
        frac = done / self.total
        if self.tty:
            if done != self.total and now - self.last_draw < 0.1:
                return
            self.last_draw = now
        elif frac + 1e-9 < self.next_report and done != self.total:
            return
        else:
            self.next_report = (math.floor(frac * 4) + 1) / 4
        fill = int(round(frac * self.width))
        bar = "#" * fill + "-" * (self.width - fill)
        eta = elapsed / done * (self.total - done) if done else 0.0
        line = (f"{self.label} |{bar}| {done}/{self.total} loss {loss:.4f} "
                f"{samples / elapsed:7.0f} samples/s "
                f"{'elapsed' if done == self.total else 'ETA'} "
                f"{_clock(elapsed if done == self.total else eta)}")
        if self.tty:
            self.out.write("\r" + line + ("\n" if done == self.total else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()


def _clock(seconds):
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}:{s:02d}"


# ------------------------------------------------------------- training


def train(args, data, log=print):
    """Trains and returns (test accuracies per epoch, per-step losses)."""
    x_train, y_train, x_test, y_test = data
    n_train = min(args.train_samples or x_train.shape[0], x_train.shape[0])
    n_test = min(args.test_samples or x_test.shape[0], x_test.shape[0])
    x_test, y_test = x_test[:n_test], y_test[:n_test]
    mx.random.seed(args.seed)
    model = LeNet()
    mx.eval(model.parameters())
    optimizer = optim.Adam(learning_rate=args.lr)
    step = make_step(model, optimizer, compiled=args.compiled)
    steps_per_epoch = n_train // args.batch_size
    losses, accs = [], []
    for epoch in range(1, args.epochs + 1):
        perm = mx.random.permutation(x_train.shape[0])[:n_train]
        bar = Progress(steps_per_epoch, f"epoch {epoch}/{args.epochs}")
        seen = 0
        for s in range(steps_per_epoch):
            idx = perm[s * args.batch_size:(s + 1) * args.batch_size]
            x, y = x_train[idx], y_train[idx]
            loss = step(x, y)
            mx.eval(loss, model.state, optimizer.state)
            losses.append(loss.item())
            seen += args.batch_size
            bar.update(s + 1, losses[-1], seen)
        acc = accuracy(model, x_test, y_test)
        accs.append(acc)
        log(f"  test accuracy after epoch {epoch}: {100 * acc:.2f}% "
            f"({n_test} test images)")
    return accs, losses, model


def time_steps(data, batch_size, compiled, steps=20, warmup=3):
    """Seconds per training step (best of three runs of ``steps``) of a
    fresh model on the first training images."""
    x_train, y_train = data[0], data[1]
    mx.random.seed(0)
    model = LeNet()
    optimizer = optim.Adam(learning_rate=1e-3)
    step = make_step(model, optimizer, compiled=compiled)
    x, y = x_train[:batch_size], y_train[:batch_size]
    mx.eval(x, y, model.parameters())
    for _ in range(warmup):
        mx.eval(step(x, y), model.state, optimizer.state)
    best = math.inf
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(steps):
            mx.eval(step(x, y), model.state, optimizer.state)
        best = min(best, (time.perf_counter() - t) / steps)
    return best


def compare_eager_compiled(data, batch_size, steps=20, log=print):
    eager = time_steps(data, batch_size, compiled=False, steps=steps)
    log(f"  eager step:    {eager * 1e3:7.2f} ms  ({batch_size / eager:6.0f} samples/s)")
    if not compile_available():
        log("  compiled step: not available yet (cmx has no mx.compile in this "
            "build); no figure")
        return eager, None
    comp = time_steps(data, batch_size, compiled=True, steps=steps)
    log(f"  compiled step: {comp * 1e3:7.2f} ms  ({batch_size / comp:6.0f} samples/s,"
        f" {eager / comp:.2f}x eager)")
    return eager, comp


def save_plot(path, losses, accs):
    fig = Figure(900, 360, panels=2)
    fig.panel(0, "TRAINING LOSS", "STEP", list(range(1, len(losses) + 1)), losses,
              smooth=max(1, min(50, len(losses) // 10)))
    fig.panel(1, "TEST ACCURACY %", "EPOCH", list(range(1, len(accs) + 1)),
              [100 * a for a in accs], points=True, integer_x=True)
    fig.save(path)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA,
                   help="folder of MNIST-format IDX files (default: %(default)s)")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--train-samples", type=int, default=None,
                   help="train on the first N images of each shuffled epoch")
    p.add_argument("--test-samples", type=int, default=None)
    p.add_argument("--full", action="store_true",
                   help="all training images every epoch, also on the CPU")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compiled", action="store_true",
                   help="train with the compiled step (needs mx.compile)")
    p.add_argument("--no-compare", action="store_true",
                   help="skip the eager vs compiled step timing")
    p.add_argument("--plot", default="demo_training.png",
                   help="where to save the PNG plot (default: %(default)s)")
    p.add_argument("--short", action="store_true",
                   help="CI mode: one epoch of 6000 images, 2000 test images")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    use_gpu = args.device == "gpu" or (args.device == "auto" and mx.is_available(mx.gpu))
    if args.device == "gpu" and not mx.is_available(mx.gpu):
        sys.exit("demo: --device gpu but no GPU is available to cmx")
    if args.compiled and not compile_available():
        sys.exit("demo: --compiled needs mx.compile, which this build of cmx lacks")
    if use_gpu and args.device == "auto":
        err = gpu_trains()
        if err is not None:
            print(f"cmx demo: the GPU cannot train this model yet ({err}); using the CPU")
            use_gpu = False
    mx.set_default_device(mx.gpu if use_gpu else mx.cpu)
    where = "GPU" if use_gpu else f"CPU ({os.environ.get('CMX_NUM_THREADS') or len(os.sched_getaffinity(0))} threads)"

    # How much to train: everything on a GPU; on a CPU a subset that keeps
    # the demo under 5 minutes on 2 cores, unless --full.
    if args.short:
        epochs, n_train, n_test, why = 1, 6000, 2000, "short mode (CI)"
    elif use_gpu or args.full:
        epochs, n_train, n_test, why = 5, None, None, "all training images"
    else:
        epochs, n_train, n_test, why = 3, 20000, None, (
            "20,000 of the 60,000 training images per epoch, to finish in a few "
            "minutes on a small CPU; --full trains on all of them")
    args.epochs = args.epochs or epochs
    args.train_samples = args.train_samples or n_train
    args.test_samples = args.test_samples or n_test

    print(f"cmx demo: LeNet on Fashion-MNIST, {where}")
    try:
        data = load_dataset(args.data)
    except (FileNotFoundError, NotADirectoryError, ValueError) as e:
        sys.exit(f"demo: cannot read the dataset: {e}\n(install Debian's "
                 "dataset-fashion-mnist, e.g. with scripts/bootstrap.sh, or pass "
                 "--data DIR with MNIST-format files)")
    n_tr = min(args.train_samples or data[0].shape[0], data[0].shape[0])
    print(f"  data: {args.data}: {data[0].shape[0]} training, {data[2].shape[0]} test images")
    print(f"  training: {args.epochs} epoch(s) x {n_tr} images, batch {args.batch_size}, "
          f"Adam lr {args.lr} ({why})")
    accs, losses, _ = train(args, data)
    if not args.no_compare:
        steps = 5 if args.short else 10
        print("eager vs compiled training step (batch "
              f"{args.batch_size}, best of 3 x {steps} steps):")
        compare_eager_compiled(data, args.batch_size, steps)
    save_plot(args.plot, losses, accs)
    print(f"final test accuracy {100 * accs[-1]:.2f}%; plot saved to {args.plot}; "
          f"total {_clock(time.perf_counter() - t0)}")
    return accs


if __name__ == "__main__":
    main()
