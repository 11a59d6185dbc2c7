"""python -m cmx --cmake-dir | --include-dir | --library-dir: where this
cmx's CMake package, headers and library are (for building extensions)."""

import argparse
import sys

from ._paths_api import cmake_dir, include_dir, library_dir


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m cmx",
        description="Where to find cmx when building extensions.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cmake-dir", action="store_true",
                   help="the folder of cmxConfig.cmake (find_package(cmx))")
    g.add_argument("--include-dir", action="store_true",
                   help="the folder of the public headers (cmx/*.h)")
    g.add_argument("--library-dir", action="store_true",
                   help="the folder of libcmx.so")
    a = p.parse_args(argv)
    try:
        f = (cmake_dir if a.cmake_dir else
             include_dir if a.include_dir else library_dir)
        print(f())
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
