"""mx.fast.cuda_kernel: the generated program (signature, template
arguments, shapes and strides only where used), compiled with NVRTC here
(no GPU needed); a clear error on the CPU and for compile errors (NVRTC's
log in the message); one program per signature. The GPU cases (MLX's
documentation examples against numpy) run where a GPU is (gpu-check)."""

import numpy as np
import pytest

import cmx.core as mx

needs_nvrtc = pytest.mark.skipif(not mx._cuda_nvrtc_available(),
                                 reason="NVRTC is not installed")
needs_gpu = pytest.mark.skipif(not mx.is_available(mx.gpu),
                               reason="no GPU on this machine")

EXP_SRC = """
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = inp[elem];
    out[elem] = exp(tmp);
"""


def exp_kernel():
    return mx.fast.cuda_kernel(name="myexp", input_names=["inp"],
                               output_names=["out"], source=EXP_SRC)


def test_is_implemented():
    from cmx import _compat
    assert _compat.implemented(mx.fast, "cuda_kernel")
    assert "fast.cuda_kernel" not in _compat.pending_names()


def test_cpu_is_a_clear_error():
    k = exp_kernel()
    a = mx.ones((4, 16))
    with pytest.raises(ValueError, match=r"\[cuda_kernel\] myexp: .*only on "
                       "the gpu"):
        k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
          threadgroup=(256, 1, 1), output_shapes=[a.shape],
          output_dtypes=[a.dtype], stream=mx.cpu)


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="a GPU is here")
def test_no_gpu_is_a_clear_error():
    k = exp_kernel()
    with pytest.raises(ValueError, match=r"\[cuda_kernel\] myexp: the gpu is "
                       "not available"):
        k(inputs=[mx.ones(4)], template=[("T", mx.float32)], grid=(4, 1, 1),
          threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], stream=mx.gpu)


def test_bad_arguments():
    with pytest.raises(ValueError, match="identifier"):
        mx.fast.cuda_kernel(name="my exp", input_names=["inp"],
                            output_names=["out"], source="")
    with pytest.raises(ValueError, match="at least one output"):
        mx.fast.cuda_kernel(name="k", input_names=["inp"], output_names=[],
                            source="")
    k = exp_kernel()
    with pytest.raises(ValueError, match="takes 1 inputs"):
        k.compile(inputs=[mx.ones(2), mx.ones(2)],
                  output_dtypes=[mx.float32])
    with pytest.raises(ValueError, match="complex64"):
        k.compile(inputs=[mx.ones(2, dtype=mx.complex64)],
                  output_dtypes=[mx.float32])
    with pytest.raises(ValueError, match="template argument X"):
        k.compile(inputs=[mx.ones(2)], template=[("X", 1.5)],
                  output_dtypes=[mx.float32])


@needs_nvrtc
def test_generated_program_compiles():
    k = exp_kernel()
    src = k.compile(inputs=[mx.ones((4, 16))], template=[("T", mx.float32)],
                    output_dtypes=[mx.float32])
    assert "const float* __restrict__ inp" in src
    assert "float* __restrict__ out" in src
    assert "typedef float T;" in src
    assert "#include <cooperative_groups.h>" in src
    assert "inp_shape" not in src and "inp_strides" not in src


@needs_nvrtc
def test_shapes_strides_templates():
    src_body = """
        int elem = blockIdx.x * blockDim.x + threadIdx.x;
        if (elem >= N) return;
        long long loc = 0, rem = elem;
        for (int d = inp_ndim - 1; d >= 0; d--) {
          loc += (rem % inp_shape[d]) * inp_strides[d];
          rem /= inp_shape[d];
        }
        T v = inp[loc];
        out[elem] = SCALE ? v * (T)2 : v;
    """
    k = mx.fast.cuda_kernel(name="strided", input_names=["inp"],
                            output_names=["out"], source=src_body,
                            ensure_row_contiguous=False)
    a = mx.zeros((3, 4), dtype=mx.float16)
    src = k.compile(inputs=[a], template=[("T", mx.float16), ("N", 12),
                                          ("SCALE", True)],
                    output_dtypes=[mx.float16])
    assert "const cmx_ck_dims<int, 2> inp_shape" in src
    assert "const cmx_ck_dims<long long, 2> inp_strides" in src
    assert "const int inp_ndim" in src
    assert "typedef __half T;" in src and "#include <cuda_fp16.h>" in src
    assert "constexpr int N = 12;" in src
    assert "constexpr bool SCALE = true;" in src


@needs_nvrtc
def test_compile_error_has_nvrtc_log():
    k = mx.fast.cuda_kernel(name="broken", input_names=["inp"],
                            output_names=["out"],
                            source="out[0] = inp[0] + undefined_name;")
    with pytest.raises(RuntimeError) as e:
        k.compile(inputs=[mx.ones(3)], output_dtypes=[mx.float32])
    msg = str(e.value)
    assert "NVRTC failed to compile" in msg
    assert "undefined_name" in msg and "error" in msg


def test_one_program_per_signature():
    k = exp_kernel()
    f32 = [("T", mx.float32)]
    p1 = k._program([mx.ones(3)], f32, [mx.float32], False)
    p2 = k._program([mx.ones(5)], f32, [mx.float32], False)
    assert p1 is p2  # same dtypes and ranks: the same program
    p3 = k._program([mx.ones((2, 3))], f32, [mx.float32], False)
    p4 = k._program([mx.ones(3)], [("T", mx.float16)], [mx.float32], False)
    assert len({p1[1], p3[1], p4[1]}) == 3 and len(k._programs) == 3


# ---------------------------------------------------------------- GPU


@needs_gpu
def test_exp_elementwise(capsys):
    a = mx.random.normal((4, 16))
    k = exp_kernel()
    (out,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
               threadgroup=(256, 1, 1), output_shapes=[a.shape],
               output_dtypes=[a.dtype], verbose=True, stream=mx.gpu)
    np.testing.assert_allclose(np.array(out), np.exp(np.array(a)),
                               rtol=1e-5)
    assert "extern \"C\" __global__ void cmx_ck_myexp_" in capsys.readouterr().out
    # Again with other values: the same program, not compiled again.
    b = mx.random.normal((4, 16))
    (out2,) = k(inputs=[b], template=[("T", mx.float32)],
                grid=(b.size, 1, 1), threadgroup=(256, 1, 1),
                output_shapes=[b.shape], output_dtypes=[b.dtype],
                stream=mx.gpu)
    np.testing.assert_allclose(np.array(out2), np.exp(np.array(b)),
                               rtol=1e-5)
    assert len(k._programs) == 1


@needs_gpu
def test_grid_strided_templates():
    body = """
        long long elem = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        for (; elem < N; elem += (long long)gridDim.x * blockDim.x) {
          long long loc = 0, rem = elem;
          for (int d = inp_ndim - 1; d >= 0; d--) {
            loc += (rem % inp_shape[d]) * inp_strides[d];
            rem /= inp_shape[d];
          }
          out[elem] = exp(inp[loc]) * (T)SCALE;
        }
    """
    k = mx.fast.cuda_kernel(name="strided_exp", input_names=["inp"],
                            output_names=["out"], source=body,
                            ensure_row_contiguous=False)
    x = mx.random.normal((32, 48))
    a = x.T[::2]  # a non-contiguous view
    (out,) = k(inputs=[a], template=[("T", mx.float32), ("N", a.size),
                                     ("SCALE", 3)],
               grid=(256, 1, 1), threadgroup=(128, 1, 1),
               output_shapes=[a.shape], output_dtypes=[mx.float32],
               stream=mx.gpu)
    np.testing.assert_allclose(np.array(out), 3 * np.exp(np.array(a)),
                               rtol=1e-5)


@needs_gpu
def test_atomic_outputs_init_value():
    body = """
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < N) {
          atomicAdd(&out[0], inp[i]);
          atomicAdd(&count[0], 1);
        }
    """
    k = mx.fast.cuda_kernel(name="atomic_sum", input_names=["inp"],
                            output_names=["out", "count"], source=body,
                            atomic_outputs=True)
    a = mx.random.uniform(shape=(1000,))
    out, count = k(inputs=[a], template=[("N", a.size)], grid=(a.size, 1, 1),
                   threadgroup=(256, 1, 1), output_shapes=[(1,), (1,)],
                   output_dtypes=[mx.float32, mx.int32], init_value=5,
                   stream=mx.gpu)
    np.testing.assert_allclose(out.item(), 5 + np.array(a).sum(), rtol=1e-4)
    assert count.item() == 1005


@needs_gpu
def test_compile_error_on_the_gpu():
    k = mx.fast.cuda_kernel(name="broken_gpu", input_names=["inp"],
                            output_names=["out"], source="out[0] = nope;")
    (out,) = k(inputs=[mx.ones(2)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
               output_shapes=[(1,)], output_dtypes=[mx.float32],
               stream=mx.gpu)
    with pytest.raises(RuntimeError, match="nope"):
        mx.eval(out)
