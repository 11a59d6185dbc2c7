#!/bin/sh
# The C compiler of the manylinux_2_28 wheel (make wheel): PyPI's ziglang
# package, whose clang compiles against the headers of glibc 2.28 and links
# against its symbol versions (-target x86_64-linux-gnu.2.28), so that the
# libraries it makes run on any glibc from 2.28 on. CMX_ZIG: the zig binary
# (python -c "import ziglang, os; print(os.path.dirname(ziglang.__file__))").
#
# Links take no zig compiler_rt (-rtlib=none): besides the helpers a build
# needs (__mulsc3 for complex products, __umodti3, __cpu_model for the
# resolvers of the AVX2/AVX-512 clones), its one object defines sin, cos,
# tan, exp, log, log2, log10 and their float versions, and once pulled in
# for a helper those definitions outrank glibc's libm: libcmx's eager rows
# then computed tanf, log2f, sinf ... with zig's code, which differs from
# glibc's in the last bit (tanf for 7% of float32 inputs, log2f for 0.3%),
# so results differed from the gcc build's and from compiled kernels (built
# at run time by the system's compiler, calling glibc). The helpers come
# from GCC's libgcc.a instead (static, no libm in it; CMX_ZIG_LIBGCC, by
# default the build machine's `gcc -print-libgcc-file-name`).
link=
case " $* " in
*" -c "* | *" -S "* | *" -E "* | *" -M "* | *" -MM "*) ;;
*" -o "*) link=1 ;;
esac
if [ -n "$link" ]; then
  libgcc="${CMX_ZIG_LIBGCC:-$(gcc -print-libgcc-file-name)}"
  [ -f "$libgcc" ] || {
    echo "zig-cc.sh: libgcc.a not found (CMX_ZIG_LIBGCC=$libgcc)" >&2
    exit 1
  }
  set -- "$@" -rtlib=none "$libgcc"
fi
exec "${CMX_ZIG:?CMX_ZIG: the zig binary of PyPI ziglang}" cc \
  -target "${CMX_ZIG_TARGET:-x86_64-linux-gnu.2.28}" "$@"
