/* The cmx.core.fft submodule over include/cmx/fft.h, with mlx.core.fft's
 * names, signatures and defaults. The *2 functions' axes default to
 * [-2, -1] (shown as None: the signature parser reads no list defaults);
 * axes=None passed explicitly means every axis, as MLX's. */
#include "cmx/fft.h"

#include "args.h"

#define NORM_STREAM \
  "norm: str = 'backward', stream: StreamOrDevice = None) -> array"

typedef cmx_status (*fft1_fn)(cmx_array*, cmx_array, const int64_t*, int,
                              const char*, cmx_stream);
typedef cmx_status (*fftn_fn)(cmx_array*, cmx_array, const int64_t*, int,
                              const int*, int, const char*, cmx_stream);

static PyObject* fft1_body(cmxpy_args* A) {
  int64_t n = I64(1);
  return RET(DATA(fft1_fn)(OUT, ARR(0), ISNONE(1) ? NULL : &n, INT(2), STR(3),
                           STREAM));
}

/* s and axes as given; the *2 functions (two) default their axes to the
 * last two when axes is not passed. */
static PyObject* fftn_common(cmxpy_args* A, bool two) {
  const int64_t* sizes = ISNONE(1) ? NULL : A->v[1].ints;
  int nsizes = ISNONE(1) ? 0 : A->v[1].n;
  const int* axes = ISNONE(2) ? NULL : A->v[2].axes;
  int naxes = ISNONE(2) ? 0 : A->v[2].n;
  static const int last_two[2] = {-2, -1};
  int all[CMX_MAX_NDIM];
  if (two && !GIVEN(2)) axes = last_two, naxes = 2;
  if (two && GIVEN(2) && ISNONE(2)) { /* None: every axis, as fftn */
    naxes = cmx_array_ndim(ARR(0));
    for (int i = 0; i < naxes; i++) all[i] = i;
    axes = all;
  }
  return RET(
      DATA(fftn_fn)(OUT, ARR(0), sizes, nsizes, axes, naxes, STR(3), STREAM));
}
static PyObject* fftn_body(cmxpy_args* A) {
  return fftn_common(A, false);
}
static PyObject* fft2_body(cmxpy_args* A) {
  return fftn_common(A, true);
}

#define SIG1 "(a: array, n: int | None = None, axis: int = -1, " NORM_STREAM
#define SIGN                                                          \
  "(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | " \
  "None = None, " NORM_STREAM

#define DOC1(what)                                                           \
  what " along one axis.\n\nArgs:\n    a (array): The input array.\n    n "  \
       "(int, optional): Size of the transformed axis (the input is padded " \
       "with zeros or truncated).\n    axis (int): Axis along which to "     \
       "perform the FFT.\n    norm (str): 'backward', 'ortho' or "           \
       "'forward'.\n\nReturns:\n    array: The transformed array."
#define DOCN(what)                                                           \
  what " over several axes.\n\nArgs:\n    a (array): The input array.\n    " \
       "s (list(int), optional): Sizes of the transformed axes.\n    axes "  \
       "(list(int), optional): Axes along which to perform the FFT.\n    "   \
       "norm (str): 'backward', 'ortho' or 'forward'.\n\nReturns:\n    "     \
       "array: The transformed array."

#define FFT1(name, doc)                                    \
  CMXPY_SPEC_FULL(name, #name, SIG1, DOC1(doc), fft1_body, \
                  (const void*)cmx_fft_##name, 0, NULL)
#define FFTN(name, two, doc)                                \
  CMXPY_SPEC_FULL(name, #name, SIGN, DOCN(doc), two##_body, \
                  (const void*)cmx_fft_##name, 0, NULL)

FFT1(fft, "One dimensional discrete Fourier Transform")
FFT1(ifft, "One dimensional inverse discrete Fourier Transform")
FFT1(rfft, "One dimensional discrete Fourier Transform on a real input")
FFT1(irfft, "The inverse of rfft (real output)")
FFTN(fft2, fft2, "Two dimensional discrete Fourier Transform")
FFTN(ifft2, fft2, "Two dimensional inverse discrete Fourier Transform")
FFTN(rfft2, fft2, "Two dimensional real discrete Fourier Transform")
FFTN(irfft2, fft2, "The inverse of rfft2")
FFTN(fftn, fftn, "n-dimensional discrete Fourier Transform")
FFTN(ifftn, fftn, "n-dimensional inverse discrete Fourier Transform")
FFTN(rfftn, fftn, "n-dimensional real discrete Fourier Transform")
FFTN(irfftn, fftn, "The inverse of rfftn")

CMXPY_DEF(fftshift,
          "(a: array, axes: int | Sequence[int] | None = None, stream: "
          "StreamOrDevice = None) -> array",
          "Shift the zero-frequency component to the center of the "
          "spectrum.\n\nReturns:\n    array: The shifted array.") {
  return RET(cmx_fft_fftshift(OUT, ARR(0), AXES(1), STREAM));
}

CMXPY_DEF(ifftshift,
          "(a: array, axes: int | Sequence[int] | None = None, stream: "
          "StreamOrDevice = None) -> array",
          "The inverse of fftshift.\n\nReturns:\n    array: The shifted "
          "array.") {
  return RET(cmx_fft_ifftshift(OUT, ARR(0), AXES(1), STREAM));
}

CMXPY_DEF(fftfreq,
          "(n: int, d: float = 1.0, stream: StreamOrDevice = None) -> array",
          "Return the Discrete Fourier Transform sample frequencies.\n\n"
          "Returns:\n    array: The sample frequencies (n entries).") {
  return RET(cmx_fft_fftfreq(OUT, I64(0), FLT(1), STREAM));
}

CMXPY_DEF(rfftfreq,
          "(n: int, d: float = 1.0, stream: StreamOrDevice = None) -> array",
          "Return the sample frequencies of rfft (n // 2 + 1 entries).\n\n"
          "Returns:\n    array: The sample frequencies.") {
  return RET(cmx_fft_rfftfreq(OUT, I64(0), FLT(1), STREAM));
}

/* MLX takes these ints as C ints: a value outside int32 is its TypeError
 * (the call does not fit the signature). Writes the value (NULL for None)
 * into *p; false with the exception raised. */
static bool opt_i32(cmxpy_args* A, int k, const int64_t** p) {
  *p = NULL;
  if (ISNONE(k)) return true;
  if (I64(k) < INT32_MIN || I64(k) > INT32_MAX || !A->v[k].exact) {
    cmxpy_type_error(A, k);
    return false;
  }
  *p = &A->v[k].i;
  return true;
}

CMXPY_DEF(stft,
          "(x: array, n_fft: int = 2048, hop_length: int | None = None, "
          "win_length: int | None = None, window: array | None = None, "
          "center: bool = True, pad_mode: str = 'reflect', norm: str = "
          "'backward', onesided: bool | None = None, stream: StreamOrDevice "
          "= None) -> array",
          "Short-Time Fourier Transform.\n\nSplits the last axis of ``x`` "
          "into overlapping frames of length ``n_fft``, multiplies each by "
          "``window`` and transforms it. The output is complex64 of shape "
          "``(..., n_freq, n_frames)``.\n\nArgs:\n    x (array): The input "
          "array.\n    n_fft (int, optional): Size of the Fourier Transform. "
          "Default is ``2048``.\n    hop_length (int, optional): Samples "
          "between frames. Default is ``n_fft // 4``.\n    win_length (int, "
          "optional): Window size (without ``window``). Default is "
          "``n_fft``.\n    window (array, optional): A one-dimensional "
          "window, centered and zero-padded to ``n_fft``. Default is a "
          "rectangular window.\n    center (bool, optional): Pad both ends "
          "by ``n_fft // 2`` so frames are centered. Default is ``True``.\n"
          "    pad_mode (str, optional): ``\"reflect\"``, ``\"constant\"``, "
          "``\"edge\"`` or ``\"symmetric\"``, used when ``center`` is "
          "``True``. Default is ``\"reflect\"``.\n    norm (str, optional): "
          "``\"backward\"``, ``\"ortho\"`` or ``\"forward\"``.\n    "
          "onesided (bool, optional): Return only the non-negative "
          "frequencies. Default is ``True`` for real input and ``False`` "
          "for complex input.\n\nReturns:\n    array: The STFT of ``x``.") {
  const int64_t *n_fft, *hop, *win;
  if (!opt_i32(A, 1, &n_fft) || !opt_i32(A, 2, &hop) || !opt_i32(A, 3, &win))
    return NULL;
  return RET(cmx_fft_stft(OUT, ARR(0), *n_fft, hop, win, ARR(4), FLAG(5),
                          STR(6), STR(7), ISNONE(8) ? NULL : &A->v[8].b,
                          STREAM));
}

CMXPY_DEF(istft,
          "(stft_matrix: array, n_fft: int | None = None, hop_length: int | "
          "None = None, win_length: int | None = None, window: array | None "
          "= None, center: bool = True, norm: str = 'backward', onesided: "
          "bool | None = None, length: int | None = None, stream: "
          "StreamOrDevice = None) -> array",
          "Inverse Short-Time Fourier Transform.\n\nInverts :func:`stft`: "
          "overlap-adds each frame's inverse transform times the window and "
          "divides by the overlap-added squared window.\n\nArgs:\n    "
          "stft_matrix (array): The STFT, of shape ``(..., n_freq, "
          "n_frames)``.\n    n_fft (int, optional): Size of the Fourier "
          "Transform. Default is ``2 * (n_freq - 1)`` when ``onesided``, "
          "else ``n_freq`` (pass ``n_fft`` for an odd size).\n    hop_length "
          "(int, optional): Samples between frames. Default is ``n_fft // "
          "4``.\n    win_length (int, optional): Window size (without "
          "``window``). Default is ``n_fft``.\n    window (array, optional): "
          "A one-dimensional window. Default is a rectangular window.\n    "
          "center (bool, optional): Whether the STFT was centered. Default "
          "is ``True``.\n    norm (str, optional): ``\"backward\"``, "
          "``\"ortho\"`` or ``\"forward\"``.\n    onesided (bool, "
          "optional): Whether the STFT has only the non-negative "
          "frequencies. Default is ``True``.\n    length (int, optional): "
          "Trim or zero-pad the output to this length.\n\nReturns:\n    "
          "array: The reconstructed signal.") {
  const int64_t *n_fft, *hop, *win, *len;
  if (!opt_i32(A, 1, &n_fft) || !opt_i32(A, 2, &hop) || !opt_i32(A, 3, &win) ||
      !opt_i32(A, 8, &len))
    return NULL;
  return RET(cmx_fft_istft(OUT, ARR(0), n_fft, hop, win, ARR(4), FLAG(5),
                           STR(6), ISNONE(7) ? NULL : &A->v[7].b, len, STREAM));
}

static cmxpy_spec* const fft_functions[] = {
    &spec_fft,      &spec_ifft,      &spec_rfft,    &spec_irfft,
    &spec_fft2,     &spec_ifft2,     &spec_rfft2,   &spec_irfft2,
    &spec_fftn,     &spec_ifftn,     &spec_rfftn,   &spec_irfftn,
    &spec_fftshift, &spec_ifftshift, &spec_fftfreq, &spec_rfftfreq,
    &spec_stft,     &spec_istft};

static struct PyModuleDef fft_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.fft",
    .m_doc = "cmx.core.fft: discrete Fourier transforms (as mlx.core.fft).",
    .m_size = -1,
};

int cmxpy_init_fft(PyObject* m) {
  PyObject* sub = PyModule_Create(&fft_module);
  if (!sub) return -1;
  if (cmxpy_add_functions(sub, fft_functions, CMXPY_COUNT(fft_functions)) < 0) {
    Py_DECREF(sub);
    return -1;
  }
  return cmxpy_add_submodule(m, sub, "fft", "cmx.core.fft");
}
