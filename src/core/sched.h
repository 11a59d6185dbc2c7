/* What the eval (scheduler.c), the CPU stream backend (cpu_stream.c), the
 * stream table (stream.c) and the allocator (memory.c) share about
 * interrupts, cancellation and fork(). Private to src/core.
 *
 * Fork: one pthread_atfork handler (cpu_stream.c) takes the core's locks
 * in their nesting order before fork() (eval, streams, each CPU worker,
 * the CPU kernels' leaf locks, memory) so the child inherits consistent
 * state, releases them after, and in the child re-creates what threads
 * owned: CPU workers restart on first use and re-run their queued tasks;
 * the task a parent thread was running fails (see cpu_stream.c).
 */
#ifndef CMX_CORE_SCHED_H
#define CMX_CORE_SCHED_H

#include "core/internal.h"

enum { CMX__FORK_PREPARE, CMX__FORK_PARENT, CMX__FORK_CHILD };

/* Fork phases of the eval lock (scheduler.c), the stream table (stream.c)
 * and the allocator (memory.c). */
void cmx__eval_fork(int phase);
void cmx__streams_fork(int phase);
void cmx__mem_fork(int phase);

/* True when the installed interrupt check says to stop. Calls it at most
 * every CMX__INTERRUPT_MS (*last holds the time of the previous call, 0 at
 * first); false when none is installed. Call with no cmx lock held. */
#define CMX__INTERRUPT_MS 50
bool cmx__interrupt_poll(int64_t* last_ns);
bool cmx__interrupt_installed(void);
int64_t cmx__now_ns(void);

/* Fails a task that will not run (its eval was interrupted) and frees it;
 * its outputs get their op back, so a later eval computes them. */
void cmx__task_cancel(cmx__task* t);

/* What cmx__task_settle does with a task: run it (cmx__task_run without
 * the free), cancel it (cmx__task_cancel without the free), or fail its
 * outputs with cmx__fork_lost_msg (a forked child's copy of a task that a
 * thread of the parent was running: its outputs may hold part of a
 * result). The caller frees the task after: a CPU stream publishes the
 * task it runs for fork (cpu_stream.c) until its outputs are final. */
enum { CMX__TASK_RUN, CMX__TASK_CANCEL, CMX__TASK_LOST };
void cmx__task_settle(cmx__task* t, int how);
/* Waits for the other streams' tasks that t reads (settle does it first). */
void cmx__task_wait_deps(const cmx__task* t);
extern const char cmx__fork_lost_msg[];

/* Fork phases of the CPU kernels' own leaf locks (backend/cpu: the BLAS
 * thread count, the FFT plan cache, the JIT's symbol cache), taken after
 * the CPU workers' locks and before the allocator's, so that a kernel the
 * parent's worker was running leaves none of them locked in the child. */
void cmx__cpu_kernels_fork(int phase);

/* CPU streams. An eval of a few ops on one idle CPU stream may run them on
 * its own thread: claim the stream, run the tasks (a list linked by next)
 * and release the claim. run_claimed polls the interrupt check between
 * tasks; when it fires, the rest are cancelled and it returns
 * CMX_ERR_INTERRUPTED. */
bool cmx__cpu_try_claim(cmx__stream* s);
/* Under the eval lock, once the claimed eval has made its tasks: records
 * the list for a child forked before run_claimed takes it up. */
void cmx__cpu_claim_publish(cmx__stream* s, cmx__task* list);
cmx_status cmx__cpu_run_claimed(cmx__stream* s, cmx__task* list);
/* Waits up to ms milliseconds for task seq of a CPU stream; true when it
 * has finished. */
bool cmx__cpu_wait_for(cmx__stream* s, uint64_t seq, int ms);
/* Makes the CPU stream's worker cancel its tasks lo..hi not yet started
 * (lo > hi: none). */
void cmx__cpu_cancel(cmx__stream* s, uint64_t lo, uint64_t hi);

#endif
