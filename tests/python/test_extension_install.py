"""An installed cmx, used from outside the tree: `cmake --install` of this
build into a temporary prefix gives libcmx, the headers, the CMake package
and the pkg-config file; the README's C example builds with pkg-config and
with find_package(cmx); the axpby extension (examples/extensions/axpby),
copied to a clean folder, is pip-installed against the prefix's cmx (found
by `python -m cmx --cmake-dir`) and its tests pass there."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cmx

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(cmx.__file__).resolve().parents[2]  # build/python/cmx


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n"
        f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return r.stdout


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not (BUILD / "CMakeCache.txt").exists():
        pytest.fail(f"cmx is not imported from a build tree ({BUILD})")
    p = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", str(BUILD), "--prefix", str(p)])
    return p


def site_packages(prefix):
    (sp,) = list(prefix.glob("lib*/python3*/site-packages"))
    return sp


def test_installed_files(prefix):
    lib = prefix / "lib"
    assert (lib / "libcmx.so").is_file()
    for h in ("cmx.h", "primitive.h", "cuda.h", "python.h", "ops.h"):
        assert (prefix / "include" / "cmx" / h).is_file(), h
    assert (lib / "cmake" / "cmx" / "cmxConfig.cmake").is_file()
    assert (lib / "cmake" / "cmx" / "cmxTargets.cmake").is_file()
    assert (lib / "pkgconfig" / "cmx.pc").is_file()
    assert (site_packages(prefix) / "cmx" / "__init__.py").is_file()


def readme_example(tmp):
    text = (ROOT / "README.md").read_text()
    m = re.search(r"## A short C example\s+```c\n(.*?)```", text, re.S)
    assert m, "the README's C example is missing"
    src = tmp / "example.c"
    src.write_text(m.group(1))
    return src


def test_python_paths(prefix):
    env = dict(os.environ, PYTHONPATH=str(site_packages(prefix)))
    for flag, want in (("--cmake-dir", prefix / "lib/cmake/cmx"),
                       ("--include-dir", prefix / "include"),
                       ("--library-dir", prefix / "lib")):
        out = run([sys.executable, "-m", "cmx", flag], env=env, cwd=prefix)
        assert Path(out.strip()) == want
    # The build tree's package says where the build is.
    out = run([sys.executable, "-m", "cmx", "--include-dir"],
              env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert Path(out.strip()) == ROOT / "include"


def pc_flags(pc):
    """Cflags and Libs of a .pc file, as pkg-config expands them (for
    machines without pkg-config: the GPU host's image)."""
    vars_ = {"pcfiledir": str(pc.parent)}
    out = []
    for line in pc.read_text().splitlines():
        line = re.sub(r"\$\{(\w+)\}", lambda m: vars_[m.group(1)], line)
        if re.match(r"^\w+=", line):
            k, v = line.split("=", 1)
            vars_[k] = v
        elif line.startswith(("Cflags:", "Libs:")):
            out += line.split(":", 1)[1].split()
    return out


def test_readme_example_pkg_config(prefix, tmp_path):
    src = readme_example(tmp_path)
    pc = prefix / "lib/pkgconfig/cmx.pc"
    if shutil.which("pkg-config"):
        env = dict(os.environ, PKG_CONFIG_PATH=str(pc.parent))
        flags = run(["pkg-config", "--cflags", "--libs", "cmx"],
                    env=env).split()
        assert sorted(flags) == sorted(pc_flags(pc))
    else:
        flags = pc_flags(pc)
    exe = tmp_path / "example"
    run(["cc", "-std=c11", str(src), "-o", str(exe), *flags])
    out = run([str(exe)])
    assert out.startswith("array([[1.5, 2.5, 3.5],"), out


def test_readme_example_find_package(prefix, tmp_path):
    src = readme_example(tmp_path)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(ex C)\n"
        "find_package(cmx 0.1 CONFIG REQUIRED)\n"
        "add_executable(example example.c)\n"
        "target_link_libraries(example PRIVATE cmx::cmx)\n")
    b = tmp_path / "b"
    run(["cmake", "-S", str(tmp_path), "-B", str(b),
         f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", str(b)])
    out = run([str(b / "example")])
    assert "array([[1.5, 2.5, 3.5]," in out


def test_axpby_extension(prefix, tmp_path):
    src = tmp_path / "axpby"
    shutil.copytree(ROOT / "examples/extensions/axpby", src,
                    ignore=shutil.ignore_patterns("build", "*.so",
                                                  "__pycache__"))
    site = tmp_path / "site"
    env = dict(os.environ, PYTHONPATH=str(site_packages(prefix)))
    env.pop("CMX_DEFAULT_DEVICE", None)
    try:
        import scikit_build_core  # noqa: F401
        pip = True
    except ImportError:  # the GPU host's image: no pip builds offline
        pip = False
    if pip:
        run([sys.executable, "-m", "pip", "install", "-q",
             "--no-build-isolation", "--no-deps", "--no-cache-dir",
             "--target", str(site), str(src)], env=env, cwd=tmp_path)
    else:
        # The same CMake build pip runs, by hand: cmx found by
        # `python -m cmx --cmake-dir`, the module put beside __init__.py.
        b = tmp_path / "b"
        run(["cmake", "-S", str(src), "-B", str(b),
             f"-DPython3_EXECUTABLE={sys.executable}"], env=env)
        run(["cmake", "--build", str(b)], env=env)
        shutil.copytree(src / "axpby", site / "axpby")
    assert list((site / "axpby").glob("_ext*.so"))
    env["PYTHONPATH"] = f"{site}{os.pathsep}{site_packages(prefix)}"
    out = run([sys.executable, "-c",
               "import cmx, axpby; print(cmx.__file__); "
               "print(axpby.axpby.__text_signature__)"],
              env=env, cwd=tmp_path)
    assert out.splitlines()[0].startswith(str(site_packages(prefix)))
    assert out.splitlines()[1] == "(x, y, /, alpha, beta, *, stream=None)"
    run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(src / "tests")], env=env, cwd=tmp_path)
