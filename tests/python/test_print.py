"""Printing: repr/str in MLX's format (the outputs of MLX's documentation)
and print options."""
import cmx.core as mx



def test_documented_outputs():
    arr = mx.arange(10)
    assert repr(arr[3]) == "array(3, dtype=int32)"
    assert repr(arr[-2]) == "array(8, dtype=int32)"
    assert repr(arr[2:8:2]) == "array([2, 4, 6], dtype=int32)"
    arr = mx.arange(8).reshape(2, 2, 2)
    assert repr(arr[:, :, 0]) == "array([[0, 2],\n       [4, 6]], dtype=int32)"
    a = mx.array([1, 2, 3])
    a[2] = 0
    assert repr(a) == "array([1, 2, 0], dtype=int32)"
    assert repr(mx.array(-1.0)) == "array(-1, dtype=float32)"
    assert repr(mx.array([-1.0, 1.0])) == "array([-1, 1], dtype=float32)"
    assert repr(mx.array([1.0])) == "array([1], dtype=float32)"
    assert repr(mx.array([5, 7])) == "array([5, 7], dtype=int32)"
    grads = {"weight": mx.array(-1.0), "bias": mx.array(0.0)}
    assert str(grads) == "{'weight': array(-1, dtype=float32), 'bias': array(0, dtype=float32)}"


def test_str_is_repr_and_format():
    a = mx.array([[1.5, 2.0], [3.0, 4.25]])
    assert str(a) == repr(a)
    assert f"{a}" == repr(a)
    assert repr(mx.array([True, False])) == "array([True, False], dtype=bool)"


def test_printoptions():
    a = mx.array([1.2345, 2.5])
    default = repr(a)
    assert isinstance(mx.get_printoptions(), mx.PrintOptions)
    assert mx.get_printoptions().precision == -1
    with mx.printoptions(precision=2):
        assert mx.get_printoptions().precision == 2
        assert repr(a) == "array([1.23, 2.50], dtype=float32)"
    assert repr(a) == default
    assert mx.get_printoptions().precision == -1
    with mx.printoptions(3):  # positional, as MLX
        assert repr(mx.array([3.14159])) == "array([3.142], dtype=float32)"
        mx.set_printoptions(4)
        assert mx.get_printoptions().precision == 4
        mx.set_printoptions()  # MLX: back to the default
        assert mx.get_printoptions().precision == -1
    assert repr(a) == default


def test_repr_evaluates_lazy_arrays():
    a = mx.array([1.0, 2.0]) * 2
    assert repr(a) == "array([2, 4], dtype=float32)"
