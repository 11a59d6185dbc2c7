/* async_eval starts the work it queued by polling the streams its tasks
 * went to (core/scheduler.c), and no other stream: a GPU poll costs an
 * event record. The streams here are a test backend's, registered as a
 * backend registers its own (on the CPU device): each runs a task at once
 * when it is submitted and counts the polls it gets. An eval over more
 * streams than the scheduler keeps track of polls every stream. */
#include <stdatomic.h>

#include "core/internal.h"
#include "test.h"

enum { NSTREAMS = 20 };

typedef struct counted {
  _Atomic int polls;
} counted;

static counted g_count[NSTREAMS];
static cmx_stream g_streams[NSTREAMS];

static void counted_submit(cmx__stream* s, cmx__task* t) {
  uint64_t seq = t->arrays[t->nin]->seq;
  cmx__task_run(t); /* frees t */
  atomic_store_explicit(&s->completed, seq, memory_order_release);
}

static void counted_wait(cmx__stream* s, uint64_t seq) {
  (void)s, (void)seq; /* every task finished when it was submitted */
}

static void counted_shutdown(cmx__stream* s) {
  (void)s;
}

static void* counted_native(cmx__stream* s) {
  (void)s;
  return NULL;
}

static void counted_poll(cmx__stream* s) {
  atomic_fetch_add(&((counted*)s->backend)->polls, 1);
}

static const cmx__stream_ops counted_ops = {.submit = counted_submit,
                                            .wait = counted_wait,
                                            .shutdown = counted_shutdown,
                                            .native = counted_native,
                                            .poll = counted_poll};

static int polls(int i) {
  return atomic_load(&g_count[i].polls);
}

static void reset_polls(void) {
  for (int i = 0; i < NSTREAMS; i++) atomic_store(&g_count[i].polls, 0);
}

/* x + 1 + 1 + ..., the k-th add on stream first + k (k < n), async_eval'd;
 * true when the result is x + n once waited for. */
static bool chain_over(int first, int n) {
  float zero = 0;
  cmx_array x = NULL, one = NULL;
  OK(cmx_array_from_data(&x, &zero, NULL, 0, CMX_FLOAT32));
  OK(cmx_array_from_double(&one, 1.0, CMX_FLOAT32));
  for (int k = 0; k < n; k++) {
    cmx_array y = NULL;
    OK(cmx_add(&y, x, one, g_streams[first + k]));
    cmx_array_release(x);
    x = y;
  }
  OK(cmx_async_eval(&x, 1));
  float r = -1;
  OK(cmx_array_copy_to(x, &r, sizeof r));
  cmx_array_release_all((cmx_array[]){x, one}, 2);
  return r == (float)n;
}

/* One stream: it is polled, the others are not. */
static void test_polls_its_stream(void) {
  reset_polls();
  CHECK(chain_over(3, 1));
  CHECK(polls(3) >= 1);
  for (int i = 0; i < NSTREAMS; i++)
    if (i != 3) CHECK_MSG(polls(i) == 0, "stream %d polled", i);
}

/* Two streams, the second's task using the first's output. */
static void test_polls_its_streams(void) {
  reset_polls();
  CHECK(chain_over(5, 2));
  CHECK(polls(5) >= 1 && polls(6) >= 1);
  for (int i = 0; i < NSTREAMS; i++)
    if (i != 5 && i != 6) CHECK_MSG(polls(i) == 0, "stream %d polled", i);
}

/* A plain eval waits instead: it polls none of them. */
static void test_eval_polls_none(void) {
  reset_polls();
  cmx_array x = NULL, y = NULL;
  OK(cmx_array_from_double(&x, 2.0, CMX_FLOAT32));
  OK(cmx_add(&y, x, x, g_streams[0]));
  OK(cmx_array_eval(y));
  for (int i = 0; i < NSTREAMS; i++)
    CHECK_MSG(polls(i) == 0, "stream %d polled", i);
  cmx_array_release_all((cmx_array[]){x, y}, 2);
}

/* More streams than the eval tracks (16): all of its streams are polled,
 * the last ones too. */
static void test_polls_past_the_spans(void) {
  reset_polls();
  CHECK(chain_over(0, 18));
  for (int i = 0; i < 18; i++)
    CHECK_MSG(polls(i) >= 1, "stream %d not polled", i);
}

int main(void) {
  for (int i = 0; i < NSTREAMS; i++) {
    cmx__stream* s =
        cmx__stream_register(cmx_device_cpu(), &counted_ops, &g_count[i]);
    CHECK(s != NULL);
    if (!s) return test_summary("test_async_poll");
    g_streams[i] = (cmx_stream){s->index, s->device};
  }
  RUN(test_polls_its_stream);
  RUN(test_polls_its_streams);
  RUN(test_eval_polls_none);
  RUN(test_polls_past_the_spans);
  return test_summary("test_async_poll");
}
