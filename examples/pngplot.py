"""A dependency-free line plot written as PNG (zlib from the standard
library): enough for the demo's loss and accuracy curves.

    plot = Figure(900, 360, panels=2)
    plot.panel(0, "TRAINING LOSS", "STEP", xs, ys, smooth=25)
    plot.panel(1, "TEST ACCURACY %", "EPOCH", epochs, accs, points=True)
    plot.save("training.png")
"""

import struct
import zlib

# 5x7 glyphs, one string of 7 rows of 5 bits per character.
_FONT = {
    "0": "01110 10001 10011 10101 11001 10001 01110",
    "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111",
    "3": "11110 00001 00001 01110 00001 00001 11110",
    "4": "00010 00110 01010 10010 11111 00010 00010",
    "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110",
    "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110",
    "9": "01110 10001 10001 01111 00001 00010 01100",
    ".": "00000 00000 00000 00000 00000 01100 01100",
    "%": "11001 11010 00010 00100 01000 01011 10011",
    "-": "00000 00000 00000 11111 00000 00000 00000",
    " ": "00000 00000 00000 00000 00000 00000 00000",
    "A": "01110 10001 10001 11111 10001 10001 10001",
    "C": "01110 10001 10000 10000 10000 10001 01110",
    "E": "11111 10000 10000 11110 10000 10000 11111",
    "G": "01110 10001 10000 10111 10001 10001 01111",
    "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110",
    "L": "10000 10000 10000 10000 10000 10000 11111",
    "N": "10001 11001 10101 10011 10001 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110",
    "P": "11110 10001 10001 11110 10000 10000 10000",
    "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110",
    "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110",
    "Y": "10001 10001 01010 00100 00100 00100 00100",
}

WHITE = (255, 255, 255)
BLACK = (30, 30, 30)
GREY = (225, 225, 225)
BLUE = (40, 100, 200)
LIGHT_BLUE = (170, 195, 235)
ORANGE = (220, 110, 20)


class Canvas:
    """An RGB image with lines, rectangles and 5x7 text."""

    def __init__(self, width: int, height: int, background=WHITE):
        self.w, self.h = width, height
        self.px = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color) -> None:
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(color)

    def line(self, x0, y0, x1, y1, color, width: int = 1) -> None:
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        r = width // 2
        while True:
            for ox in range(-r, width - r):
                for oy in range(-r, width - r):
                    self.set(x0 + ox, y0 + oy, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def rect(self, x0, y0, x1, y1, color) -> None:
        for x, y, u, v in ((x0, y0, x1, y0), (x1, y0, x1, y1), (x1, y1, x0, y1),
                           (x0, y1, x0, y0)):
            self.line(x, y, u, v, color)

    def text(self, x: int, y: int, s: str, color=BLACK, scale: int = 1) -> None:
        for ch in s.upper():
            rows = _FONT.get(ch, _FONT[" "]).split()
            for r, bits in enumerate(rows):
                for c, b in enumerate(bits):
                    if b == "1":
                        for i in range(scale):
                            for j in range(scale):
                                self.set(x + c * scale + i, y + r * scale + j, color)
            x += 6 * scale

    @staticmethod
    def text_width(s: str, scale: int = 1) -> int:
        return 6 * scale * len(s) - scale

    def png(self) -> bytes:
        """The image as PNG bytes (8-bit RGB, no filtering)."""
        rows = b"".join(b"\x00" + bytes(self.px[3 * y * self.w:3 * (y + 1) * self.w])
                        for y in range(self.h))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return (struct.pack(">I", len(data)) + kind + data
                    + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

        header = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def _nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False):
    """Round tick values covering [lo, hi] (whole numbers with integer)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    if integer:
        raw = max(raw, 1)
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while mag > raw:
        mag /= 10
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    t = (lo // step) * step
    ticks = []
    while t <= hi + step * 1e-9:
        if t >= lo - step * 1e-9:
            ticks.append(round(t, 10))
        t += step
    return ticks, step


def _fmt(v: float, step: float) -> str:
    if step >= 1:
        return str(int(round(v)))
    digits = max(0, -int(f"{step:e}".split("e")[1]))
    return f"{v:.{digits}f}"


class Figure:
    """Side-by-side panels with axes, ticks, a title and one curve each."""

    def __init__(self, width: int = 900, height: int = 360, panels: int = 2):
        self.canvas = Canvas(width, height)
        self.n = panels

    def panel(self, i: int, title: str, xlabel: str, xs, ys, smooth: int = 0,
              points: bool = False, ylim=None, integer_x: bool = False) -> None:
        c = self.canvas
        pw = c.w // self.n
        left, right = i * pw + 62, (i + 1) * pw - 18
        top, bottom = 34, c.h - 46
        c.text(left + (right - left - c.text_width(title, 2)) // 2, 8, title, scale=2)
        c.text(left + (right - left - c.text_width(xlabel)) // 2, c.h - 16, xlabel)
        if not xs:
            c.rect(left, top, right, bottom, BLACK)
            return
        x0, x1 = min(xs), max(xs)
        if x1 == x0:
            x0, x1 = x0 - 1, x1 + 1
        y0, y1 = ylim if ylim else (min(ys), max(ys))
        if y1 == y0:
            y0, y1 = y0 - 1, y1 + 1
        pad = 0.05 * (y1 - y0)
        y0, y1 = y0 - pad, y1 + pad

        def X(v):
            return left + (v - x0) / (x1 - x0) * (right - left)

        def Y(v):
            return bottom - (v - y0) / (y1 - y0) * (bottom - top)

        yt, ys_step = _nice_ticks(y0, y1)
        for t in yt:
            c.line(left, Y(t), right, Y(t), GREY)
            s = _fmt(t, ys_step)
            c.text(left - 6 - c.text_width(s), int(Y(t)) - 3, s)
        xt, xs_step = _nice_ticks(x0, x1, integer=integer_x)
        for t in xt:
            c.line(X(t), bottom, X(t), bottom + 4, BLACK)
            s = _fmt(t, xs_step)
            c.text(int(X(t)) - c.text_width(s) // 2, bottom + 8, s)
        c.rect(left, top, right, bottom, BLACK)
        pts = [(X(x), Y(y)) for x, y in zip(xs, ys)]
        color = LIGHT_BLUE if smooth else ORANGE
        for (a, b), (u, v) in zip(pts, pts[1:]):
            c.line(a, b, u, v, color, width=1 if smooth else 2)
        if smooth:
            avg, acc, out = [], 0.0, []
            for y in ys:
                avg.append(y)
                acc += y
                if len(avg) > smooth:
                    acc -= avg.pop(0)
                out.append(acc / len(avg))
            sp = [(X(x), Y(y)) for x, y in zip(xs, out)]
            for (a, b), (u, v) in zip(sp, sp[1:]):
                c.line(a, b, u, v, BLUE, width=2)
        if points:
            for a, b in pts:
                for dx in range(-3, 4):
                    for dy in range(-3, 4):
                        if dx * dx + dy * dy <= 9:
                            c.set(int(a) + dx, int(b) + dy, ORANGE)

    def save(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.canvas.png())
