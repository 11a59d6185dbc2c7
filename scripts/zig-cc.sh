#!/bin/sh
# The C compiler of the manylinux_2_28 wheel (make wheel): PyPI's ziglang
# package, whose clang compiles against the headers of glibc 2.28 and links
# against its symbol versions (-target x86_64-linux-gnu.2.28), so that the
# libraries it makes run on any glibc from 2.28 on. CMX_ZIG: the zig binary
# (python -c "import ziglang, os; print(os.path.dirname(ziglang.__file__))").
exec "${CMX_ZIG:?CMX_ZIG: the zig binary of PyPI ziglang}" cc \
  -target "${CMX_ZIG_TARGET:-x86_64-linux-gnu.2.28}" "$@"
