"""The argument parser of the bindings (python/src/args.h): MLX's argument
rules and TypeError texts (nanobind's "incompatible function arguments"
message: the supported signature and the types it was called with), the
conversions by annotation, and the text signatures."""
import inspect

import numpy as np
import pytest

import cmx.core as mx

SUM_SIG = (
    "sum(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool "
    "= False, *, stream: StreamOrDevice = None) -> array"
)


def type_error(fn, *args, **kwargs):
    with pytest.raises(TypeError) as e:
        fn(*args, **kwargs)
    return str(e.value).split("\n")


def test_message_format():
    lines = type_error(mx.sum, mx.ones(3), 0, keepdims=1)
    assert lines[0] == (
        "sum(): incompatible function arguments. The following argument types "
        "are supported:"
    )
    assert lines[1] == "    1. " + SUM_SIG
    assert lines[2] == ""
    assert lines[3] == "Invoked with types: cmx.core.array, int, kwargs = { keepdims: int }"
    assert lines[4] == "[sum] argument 'keepdims' must be bool, not int"


def test_method_message_shows_self():
    lines = type_error(mx.ones(3).sum, 0, keepdims=1)
    assert lines[1].startswith("    1. sum(self, axis: None | int | Sequence[int] = None")
    assert lines[3] == "Invoked with types: cmx.core.array, int, kwargs = { keepdims: int }"


@pytest.mark.parametrize(
    "call,types,why",
    [
        (lambda: mx.reshape(mx.ones(3)), "cmx.core.array", "missing argument 'shape'"),
        (lambda: mx.reshape(mx.ones(3), (3,), 5), "cmx.core.array, tuple, int",
         "takes 2 positional arguments but 3 were given"),
        (lambda: mx.reshape(mx.ones(3), shape=(3,), foo=1),
         "cmx.core.array, kwargs = { shape: tuple, foo: int }",
         "unexpected keyword argument 'foo'"),
        (lambda: mx.reshape(a=mx.ones(3), shape=(3,)), "kwargs = { a: cmx.core.array, shape: tuple }",
         "argument 'a' cannot be given by keyword"),
        (lambda: mx.reshape(mx.ones(3), (3,), shape=(3,)),
         "cmx.core.array, tuple, kwargs = { shape: tuple }", "argument 'shape' given twice"),
        (lambda: mx.exp(), "", "missing argument 'a'"),
        (lambda: mx.add(1, 2, mx.cpu), "int, int, cmx.core.DeviceType",
         "takes 2 positional arguments but 3 were given"),
        (lambda: mx.zeros((2,), dtype="float32"), "tuple, kwargs = { dtype: str }",
         "argument 'dtype' must be Dtype | None, not str"),
        (lambda: mx.flatten(mx.ones(3), 0.5), "cmx.core.array, float",
         "argument 'start_axis' must be int, not float"),
        (lambda: mx.exp(mx.ones(3), stream="cpu"), "cmx.core.array, kwargs = { stream: str }",
         "argument 'stream' must be StreamOrDevice, not str"),
    ],
)
def test_rejected_calls(call, types, why):
    with pytest.raises(TypeError) as e:
        call()
    lines = str(e.value).split("\n")
    assert "incompatible function arguments" in lines[0]
    assert lines[3] == "Invoked with types: " + types
    assert lines[-1].endswith(why), lines[-1]


def test_bool_parameters_take_bools_only():
    a = mx.ones((2, 2))
    assert mx.sum(a, 0, np.bool_(True)).shape == (1, 2)
    for bad in (1, 0, None, "yes", 1.0):
        with pytest.raises(TypeError):
            mx.sum(a, 0, bad)


def test_int_parameters():
    a = mx.ones((2, 3))
    assert mx.flatten(a, np.int64(0)).shape == (6,)
    assert mx.flatten(a, True).shape == (2, 3)  # bool is an int, as MLX
    with pytest.raises(TypeError):
        mx.flatten(a, 0.0)
    with pytest.raises(TypeError):
        mx.flatten(a, np.float32(0))
    # Any int converts (saturated); the op then says it is out of range.
    with pytest.raises(ValueError, match=r"\[flatten\]"):
        mx.flatten(a, 2**70)
    with pytest.raises(IndexError, match=r"\[sum\]"):  # MLX's type for axes
        mx.sum(a, axis=-(2**80))


def test_int_list_parameters():
    a = mx.arange(6)
    assert mx.reshape(a, np.array([2, 3])).shape == (2, 3)
    assert mx.reshape(a, [np.int32(3), 2]).shape == (3, 2)
    assert a.reshape(np.array([3, 2])).shape == (3, 2)
    assert a.reshape(3, 2).shape == a.reshape((3, 2)).shape == (3, 2)
    assert mx.sum(mx.ones((2, 3)), axis=(0, np.int64(1))).item() == 6
    with pytest.raises(TypeError):
        mx.reshape(a, [2, 3.0])
    with pytest.raises(TypeError):
        mx.reshape(a, "23")
    with pytest.raises(ValueError, match="too large"):
        mx.reshape(a, [2**64])
    with pytest.raises(ValueError, match="too many dimensions"):
        mx.reshape(a, [1] * 33)


def test_float_parameters():
    a, b = mx.array([1.0]), mx.array([1.05])
    assert mx.isclose(a, b, 1, 0).item() and mx.isclose(a, b, np.float32(0.1)).item()
    assert not mx.isclose(a, b, rtol=0).item()
    with pytest.raises(TypeError):
        mx.isclose(a, b, "0.1")


def test_defaults_and_none():
    assert mx.zeros((2,)).dtype == mx.float32
    assert mx.zeros((2,), None).dtype == mx.float32  # None means the default
    assert mx.random.randint(0, 5, (3,), None).dtype == mx.int32
    assert mx.arange(3, dtype=None).dtype == mx.int32
    assert mx.take(mx.arange(6).reshape(2, 3), 4, None).item() == 4
    assert mx.sort(mx.array([[3, 1], [2, 0]]), axis=None).tolist() == [0, 1, 2, 3]


def test_positional_and_keyword_rules():
    a = mx.ones((2, 3))
    assert mx.moveaxis(a, source=0, destination=1).shape == (3, 2)
    assert mx.softmax(a, axis=1, precise=True).shape == (2, 3)
    with pytest.raises(TypeError):
        mx.softmax(a, 1, True)  # precise is keyword-only
    assert mx.einsum("ij->j", a, stream=mx.cpu).shape == (3,)
    assert mx.broadcast_arrays(a, mx.ones((3,)), stream=mx.cpu)[1].shape == (2, 3)


def test_text_signatures():
    assert str(inspect.signature(mx.zeros)) == "(shape, dtype=None, *, stream=None)"
    assert str(inspect.signature(mx.reshape)) == "(a, /, shape, *, stream=None)"
    assert str(inspect.signature(mx.einsum)) == "(subscripts, *operands, stream=None)"
    assert str(inspect.signature(mx.savez)) == "(file, *args, **kwargs)"
    assert str(inspect.signature(mx.ones(2).sum)) == (
        "(axis=None, keepdims=False, *, stream=None)"
    )
    assert mx.sum.__doc__.startswith("Sum reduce the array over the given axes.")
