/* cmx/error.h: status codes and the thread-local error message.
 *
 * Every public cmx function that can fail returns a cmx_status and writes its
 * results through its first pointer argument. On failure the calling thread's
 * last error message names the op and the problem, e.g.
 *
 *     cmx_array r;
 *     if (cmx_reshape(&r, a, shape, 1, CMX_STREAM_DEFAULT) != CMX_OK)
 *         fprintf(stderr, "%s\n", cmx_last_error());
 *         // "[reshape] cannot reshape array of shape (2,3) into shape (4)"
 *
 * cmx never aborts or exits on user input.
 */
#ifndef CMX_ERROR_H
#define CMX_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of failure; Python maps each to its exception type. */
typedef enum cmx_status {
  CMX_OK = 0,
  CMX_ERR_VALUE = 1,           /* bad shapes, axes, values (ValueError) */
  CMX_ERR_TYPE = 2,            /* bad dtypes or argument kinds (TypeError) */
  CMX_ERR_INDEX = 3,           /* out-of-range indices (IndexError) */
  CMX_ERR_MEMORY = 4,          /* allocation failed or memory limit hit */
  CMX_ERR_RUNTIME = 5,         /* device or evaluation failure */
  CMX_ERR_NOT_IMPLEMENTED = 6, /* op not available on this device/dtype */
  CMX_ERR_IO = 7,              /* file errors (OSError) */
  CMX_ERR_INTERRUPTED = 8      /* eval interrupted (KeyboardInterrupt) */
} cmx_status;

/* Returns the calling thread's last error message ("" if none). The pointer
 * stays valid until the next failing cmx call on this thread. */
const char* cmx_last_error(void);

/* Returns the status of the calling thread's last failure (CMX_OK if none). */
cmx_status cmx_last_status(void);

/* Sets the calling thread's error (for callbacks such as closures and
 * kernels written outside cmx): status and a printf-style message, which
 * should name the op ("[myop] ..."). Returns status. */
cmx_status cmx_set_error(cmx_status status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's error message and status. */
void cmx_clear_error(void);

/* Returns a static name for a status ("ValueError", "TypeError", ...). */
const char* cmx_status_name(cmx_status s);

#ifdef __cplusplus
}
#endif
#endif
