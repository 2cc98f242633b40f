/*
 * fakecuda: a stand-in for libcuda and libnvrtc, to measure kernelkit's
 * host-side dispatch on a machine without a GPU.
 *
 * It implements the driver and NVRTC symbols kernelkit calls (see
 * crates/kernelkit/src/backend/cuda/probe.rs) with host memory: allocations
 * are malloc'd, copies and fills are memcpy/memset, streams and events are
 * no-ops. Kernels do NOT run: results are wrong, so this is for timing the
 * host path only, never for tests of values.
 *
 * A real cuLaunchKernel costs microseconds and leaves the CPU caches cold
 * for whatever runs next. cuLaunchKernel here does the same on purpose:
 * it runs FAKECUDA_CODE_KB kilobytes of distinct code (default 48: more
 * than an L1 instruction cache) and touches FAKECUDA_DATA_KB kilobytes of
 * data (default 256). So a dispatch path that touches more code and data
 * pays for it here as it does on a GPU host, and the ratio of a warm call
 * to a bare launch can be compared between builds locally.
 *
 * It also keeps the driver's rules that kernelkit's lifecycle code must
 * follow, so that tests (tests/cuda_lifecycle.rs, run on this stand-in by
 * scripts/test.sh) can check them without a GPU:
 * - the primary context is reference counted: released to zero it is
 *   destroyed, and the next retain creates a new one AT THE SAME ADDRESS
 *   (as a real driver may); calls that need a context fail with
 *   CUDA_ERROR_INVALID_CONTEXT unless the calling thread made the live
 *   context current (cuCtxSetCurrent) since it was created;
 *   cuDevicePrimaryCtxGetState reports whether it is alive;
 * - cuModuleGetFunction returns one handle per (module, name), which keeps
 *   its CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (default 48 KB); a
 *   launch with more dynamic shared memory than that fails with
 *   CUDA_ERROR_INVALID_VALUE;
 * - a launch of a function whose name contains "fakecuda_fault" fails with
 *   CUDA_ERROR_ILLEGAL_ADDRESS, and every later call that needs the context
 *   fails the same way until the context is destroyed (a sticky fault);
 * - FAKECUDA_FAIL_STREAM_CREATE=1 makes cuStreamCreate fail (out of memory);
 * - work can be held (fakecuda_hold_work(1), or FAKECUDA_HOLD_WORK=1): a
 *   launch is then queued, not done, until its stream is synchronized, an
 *   event recorded after it is synchronized, the context is synchronized,
 *   or fakecuda_complete_work() is called; cuStreamQuery and cuEventQuery
 *   answer CUDA_ERROR_NOT_READY meanwhile, and cuModuleUnload of a module
 *   one of whose functions has queued work aborts the process with a
 *   message (the real driver would run unloaded code, or fault);
 * - stream capture interacts with each thread's capture mode
 *   (cuThreadExchangeStreamCaptureMode): see "Graph capture" below.
 *
 * Build: tools/fakecuda/build.sh (makes libcuda.so.1 and libnvrtc.so.13
 * in target/fakecuda); run with LD_LIBRARY_PATH=target/fakecuda.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int nvrtcResult;
typedef uint64_t CUdeviceptr;
#define OK 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_ILLEGAL_ADDRESS 700

/* ---- the cache-thrashing work of one launch ---- */

#define F(n)                                                                 \
  __attribute__((noinline)) static uint32_t f##n(uint32_t x) {              \
    x = x * 2654435761u + (n);                                               \
    x ^= x >> 13;                                                            \
    x *= 0x5bd1e995u + (n);                                                  \
    x ^= x >> 15;                                                            \
    x += (n) * 7u;                                                           \
    x = (x << 5) | (x >> 27);                                                \
    return x ^ (uint32_t)(n) * 0x9e3779b9u;                                  \
  }
#define F4(n) F(n##0) F(n##1) F(n##2) F(n##3)
#define F16(n) F4(n##0) F4(n##1) F4(n##2) F4(n##3)
#define F64(n) F16(n##0) F16(n##1) F16(n##2) F16(n##3)
#define F256(n) F64(n##0) F64(n##1) F64(n##2) F64(n##3)
F256(10) F256(11) F256(12) F256(13)

#define P(n) f##n,
#define P4(n) P(n##0) P(n##1) P(n##2) P(n##3)
#define P16(n) P4(n##0) P4(n##1) P4(n##2) P4(n##3)
#define P64(n) P16(n##0) P16(n##1) P16(n##2) P16(n##3)
#define P256(n) P64(n##0) P64(n##1) P64(n##2) P64(n##3)
static uint32_t (*const FUNCS[])(uint32_t) = {P256(10) P256(11) P256(12) P256(13)};
#define NFUNCS (sizeof(FUNCS) / sizeof(FUNCS[0]))

static size_t code_funcs = (size_t)-1, data_bytes;
static volatile uint8_t *data;
static volatile uint32_t sink;

static void thrash_init(void) {
  const char *c = getenv("FAKECUDA_CODE_KB");
  const char *d = getenv("FAKECUDA_DATA_KB");
  /* The functions' spacing, as the compiler laid them out (48 bytes with
   * gcc -O2, not the 64 once assumed: 32 KB asked then ran only 24 KB, and
   * which lines of the caller survived a launch depended on where they
   * fell in the cache's sets). */
  uintptr_t lo = (uintptr_t)FUNCS[0], hi = lo;
  for (size_t i = 1; i < NFUNCS; i++) {
    uintptr_t a = (uintptr_t)FUNCS[i];
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  size_t stride = (hi - lo) / (NFUNCS - 1);
  if (stride == 0) stride = 64;
  size_t code_kb = c ? strtoul(c, 0, 10) : 48;
  code_funcs = code_kb * 1024 / stride;
  if (code_funcs > NFUNCS) code_funcs = NFUNCS;
  data_bytes = (d ? strtoul(d, 0, 10) : 256) * 1024;
  data = data_bytes ? calloc(data_bytes, 1) : 0;
}

/* Once per process: threads launching at once must all see the sizes and
 * the buffer set (a first launch racing another read the sizes before the
 * buffer was allocated and wrote through a null pointer). */
static pthread_once_t thrash_once = PTHREAD_ONCE_INIT;

static void thrash(void) {
  pthread_once(&thrash_once, thrash_init);
  uint32_t x = sink;
  for (size_t i = 0; i < code_funcs; i++) x = FUNCS[i](x);
  for (size_t i = 0; i < data_bytes; i += 64) data[i] += (uint8_t)x;
  sink = x;
}

/* ---- driver ---- */

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return OK; }
/* FAKECUDA_DEVICES=N: N devices (default 1). They share the one primary
 * context below: enough for what kernelkit asks per device (a context, a
 * stream, modules), not a model of peer memory. */
CUresult cuDeviceGetCount(int *n) {
  const char *e = getenv("FAKECUDA_DEVICES");
  int k = e ? atoi(e) : 1;
  *n = k > 0 ? k : 1;
  return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  switch (attr) {
  case 1: *v = 1024; break;                      /* max threads per block */
  case 2: case 3: *v = 1024; break;              /* block dims x, y */
  case 4: *v = 64; break;                        /* block dim z */
  case 5: *v = 2147483647; break;                /* grid dim x */
  case 6: case 7: *v = 65535; break;             /* grid dims y, z */
  case 10: *v = 32; break;                       /* warp */
  case 16: *v = 132; break;                      /* SMs */
  case 75: *v = 9; break;                        /* compute capability */
  case 76: *v = 0; break;
  case 97: *v = 232448; break;                   /* shared memory opt-in */
  case 115: /* memory pools: FAKECUDA_NO_MEMORY_POOLS=1 says none */
    *v = !(getenv("FAKECUDA_NO_MEMORY_POOLS") && *getenv("FAKECUDA_NO_MEMORY_POOLS") == '1');
    break;
  default: *v = 0;
  }
  return OK;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  strncpy(name, "fakecuda (no GPU: kernels do not run)", (size_t)len - 1);
  name[len - 1] = 0;
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = (size_t)16 << 30; return OK; }
/* The primary context: one address for every incarnation (as a driver may
 * reuse one), a retain count, and a generation number per incarnation
 * (0: none alive). A thread's current context is the generation it made
 * current; calls that need a context check it is the live one. */
static int ctx_token;
/* A destroyed stream keeps its memory with this mark as its first word
 * (never freed), so a later use is caught: the real driver may crash on
 * it, and this one aborts with a message. */
static int dead_stream_token;
static void live_stream(void *s, const char *call) {
  /* NULL and the small legacy/per-thread handles are no objects. */
  if ((uintptr_t)s >= 4096 && *(void **)s == &dead_stream_token) {
    fprintf(stderr, "fakecuda: %s on a destroyed stream\n", call);
    abort();
  }
}
/* Graph capture. A stream made by cuStreamCreate keeps its capture state
 * in its second word (1 capturing, 2 invalidated) and the mode its capture
 * began in. Each thread has a capture mode (cuThreadExchangeStreamCaptureMode;
 * global by default). As the driver documents it, a thread may not make a
 * "potentially unsafe" call (legacy allocation, module loading and
 * unloading, synchronizing or querying streams and events) while it
 * captures itself in a mode other than relaxed, or, in the global mode,
 * while any other thread captures in the global mode; in the relaxed mode
 * it may. Calls that necessarily conflict with a capture are refused in
 * every mode: synchronizing the whole context while any stream captures,
 * synchronizing or querying a stream that captures, querying or waiting
 * for an event recorded under a capture that is still going on. A refused
 * call fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates
 * every capture, so cuStreamEndCapture then fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: a test ends its capture to learn
 * that no forbidden call was made (FAKECUDA_CAPTURE_VERBOSE=1 names the
 * call on stderr). No graph is recorded. */
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD 908
#define CUDA_ERROR_NOT_READY 600
#define MODE_GLOBAL 0
#define MODE_THREAD_LOCAL 1
#define MODE_RELAXED 2
static volatile int capturing_streams;  /* captures going on, any mode */
static volatile int global_captures;    /* of them, begun in the global mode */
static volatile int capture_invalidated;
static __thread __attribute__((tls_model("initial-exec"))) int thread_mode;
static __thread __attribute__((tls_model("initial-exec"))) int own_captures; /* not relaxed */
static int is_object(void *s) { return (uintptr_t)s >= 4096; }
static CUresult refuse(const char *call) {
  if (getenv("FAKECUDA_CAPTURE_VERBOSE")) fprintf(stderr, "fakecuda: %s while capturing\n", call);
  capture_invalidated = 1;
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}
/* A potentially unsafe call: refused unless this thread's mode allows it. */
static CUresult forbidden_while_capturing(const char *call) {
  if (capturing_streams == 0 || thread_mode == MODE_RELAXED) return 0;
  if (own_captures > 0 || (thread_mode == MODE_GLOBAL && global_captures > 0)) return refuse(call);
  return 0;
}
/* A call that conflicts with any capture, whatever the mode. */
static CUresult conflicts_with_capture(int conflict, const char *call) {
  return conflict ? refuse(call) : 0;
}
#define FORBIDDEN_WHILE_CAPTURING(call) do { CUresult r_ = forbidden_while_capturing(call); if (r_) return r_; } while (0)
#define CONFLICTS(cond, call) do { CUresult r_ = conflicts_with_capture(cond, call); if (r_) return r_; } while (0)
CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  if (*mode < MODE_GLOBAL || *mode > MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  int previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return OK;
}

/* Streams and queued work. Launches take numbers from one counter; a
 * stream remembers the last number queued on it and the last it finished.
 * Work is done at once unless held (see the top of the file); held work
 * is done when its stream or the context is synchronized, or all of it by
 * fakecuda_complete_work(). The legacy and per-thread default streams
 * (handles 0, 1, 2) share one record. */
typedef struct {
  void *ctx;                    /* the context token, or dead_stream_token */
  volatile uint64_t capture;    /* 0, 1 capturing, 2 invalidated */
  volatile uint64_t submitted;  /* the last launch number queued here */
  volatile uint64_t completed;  /* every launch here up to it is done */
  int capture_mode;
} fake_stream;
static fake_stream default_stream;
static volatile uint64_t launches_numbered;
static volatile uint64_t completed_all; /* every launch up to it is done */
static volatile int hold_work = -1;
static int holding(void) {
  if (hold_work < 0) {
    const char *h = getenv("FAKECUDA_HOLD_WORK");
    hold_work = h && *h == '1';
  }
  return hold_work;
}
static fake_stream *stream_of(void *s) { return is_object(s) ? (fake_stream *)s : &default_stream; }
static int work_done(fake_stream *s, uint64_t n) {
  return n == 0 || !holding() || n <= completed_all || n <= s->completed;
}
static void finish_stream(fake_stream *s, uint64_t upto) {
  uint64_t c = s->completed;
  while (c < upto && !__sync_bool_compare_and_swap(&s->completed, c, upto)) c = s->completed;
}
/* Test hooks (looked up with dlsym: the real driver has neither). */
void fakecuda_hold_work(int on) {
  if (!on) completed_all = launches_numbered;
  hold_work = on != 0;
}
void fakecuda_complete_work(void) { completed_all = launches_numbered; }
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctx_retains;
static uint64_t ctx_generations;
static volatile uint64_t ctx_live;
static volatile int ctx_fault; /* a sticky fault of the live context */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t ctx_current;

static CUresult need_ctx(void) {
  if (ctx_current == 0 || ctx_current != ctx_live) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx_fault) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return OK;
}
#define NEED_CTX()                     \
  do {                                 \
    CUresult need_ = need_ctx();       \
    if (need_ != OK) return need_;     \
  } while (0)

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  pthread_mutex_lock(&ctx_lock);
  if (ctx_retains++ == 0) {
    ctx_live = ++ctx_generations;
    ctx_fault = 0;
  }
  pthread_mutex_unlock(&ctx_lock);
  *ctx = &ctx_token;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  pthread_mutex_lock(&ctx_lock);
  if (ctx_retains > 0 && --ctx_retains == 0) ctx_live = 0; /* destroyed */
  pthread_mutex_unlock(&ctx_lock);
  return OK;
}
CUresult cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active) {
  (void)dev;
  *flags = 0;
  *active = ctx_live != 0;
  return OK;
}
CUresult cuCtxSetCurrent(void *ctx) {
  if (ctx != &ctx_token || ctx_live == 0) return CUDA_ERROR_INVALID_CONTEXT;
  ctx_current = ctx_live;
  return OK;
}
CUresult cuCtxSynchronize(void) {
  NEED_CTX();
  CONFLICTS(capturing_streams > 0, "cuCtxSynchronize");
  completed_all = launches_numbered;
  return OK;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  NEED_CTX();
  const char *fail = getenv("FAKECUDA_FAIL_STREAM_CREATE");
  if (fail && *fail == '1') return CUDA_ERROR_OUT_OF_MEMORY;
  fake_stream *made = calloc(1, sizeof(fake_stream) < 64 ? 64 : sizeof(fake_stream));
  made->ctx = &ctx_token; /* the stream's context, for cuStreamGetCtx */
  *s = made;
  return OK;
}
/* The context a stream was created in; a stream whose first word is not
 * the context (a foreign handle made up by a test) belongs to none. The
 * special handles (NULL, CU_STREAM_LEGACY = 1, CU_STREAM_PER_THREAD = 2)
 * name the calling thread's current context, as the driver's do. */
CUresult cuStreamGetCtx(void *s, void **ctx) {
  if ((uintptr_t)s <= 2) {
    NEED_CTX();
    *ctx = &ctx_token;
    return OK;
  }
  if (*(void **)s != &ctx_token) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = &ctx_token;
  return OK;
}
/* Every address belongs to device 0 (allocations are host memory here). */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
  (void)attribute;
  if (p == 0) return CUDA_ERROR_INVALID_VALUE;
  *(int *)data = 0;
  return OK;
}
CUresult cuStreamDestroy_v2(void *s) {
  live_stream(s, "cuStreamDestroy");
  *(void **)s = &dead_stream_token;
  return OK;
}
CUresult cuStreamSynchronize(void *s) {
  live_stream(s, "cuStreamSynchronize"); NEED_CTX();
  fake_stream *st = stream_of(s);
  CONFLICTS(st->capture != 0, "cuStreamSynchronize");
  FORBIDDEN_WHILE_CAPTURING("cuStreamSynchronize");
  finish_stream(st, st->submitted);
  return OK;
}
CUresult cuStreamQuery(void *s) {
  live_stream(s, "cuStreamQuery"); NEED_CTX();
  fake_stream *st = stream_of(s);
  CONFLICTS(st->capture != 0, "cuStreamQuery");
  FORBIDDEN_WHILE_CAPTURING("cuStreamQuery");
  return work_done(st, st->submitted) ? OK : CUDA_ERROR_NOT_READY;
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  live_stream(s, "cuStreamBeginCapture");
  if (!is_object(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  fake_stream *st = s;
  if (st->capture != 0) return CUDA_ERROR_INVALID_VALUE;
  if (mode < MODE_GLOBAL || mode > MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  st->capture = 1;
  st->capture_mode = mode;
  __sync_fetch_and_add(&capturing_streams, 1);
  if (mode == MODE_GLOBAL) __sync_fetch_and_add(&global_captures, 1);
  if (mode != MODE_RELAXED) own_captures++;
  return OK;
}
/* The graph is a token: this driver records nothing to replay. */
static int graph_token;
CUresult cuStreamEndCapture(void *s, void **graph) {
  live_stream(s, "cuStreamEndCapture");
  if (!is_object(s) || ((fake_stream *)s)->capture == 0) return CUDA_ERROR_INVALID_VALUE;
  fake_stream *st = s;
  st->capture = 0;
  if (st->capture_mode == MODE_GLOBAL) __sync_fetch_and_sub(&global_captures, 1);
  if (st->capture_mode != MODE_RELAXED && own_captures > 0) own_captures--;
  int invalid = capture_invalidated;
  if (__sync_sub_and_fetch(&capturing_streams, 1) == 0) capture_invalidated = 0;
  *graph = invalid ? 0 : &graph_token;
  return invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : OK;
}
CUresult cuStreamIsCapturing(void *s, int *status) {
  live_stream(s, "cuStreamIsCapturing");
  *status = 0;
  if (is_object(s) && ((fake_stream *)s)->capture != 0) *status = capture_invalidated ? 2 : 1;
  return OK;
}
CUresult cuGraphDestroy(void *g) { (void)g; return OK; }
/* An executable graph is a token too: launching it queues nothing (kernels
 * do not run here), but it must be one this driver instantiated. */
static int graph_exec_token;
CUresult cuGraphInstantiateWithFlags(void **exec, void *g, unsigned long long flags) {
  (void)flags;
  if (g != &graph_token) return CUDA_ERROR_INVALID_VALUE;
  *exec = &graph_exec_token;
  return OK;
}
CUresult cuGraphLaunch(void *exec, void *s) {
  live_stream(s, "cuGraphLaunch"); NEED_CTX();
  return exec == &graph_exec_token ? OK : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGraphExecDestroy(void *exec) { (void)exec; return OK; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return OK; }
/* An event: the stream and launch number it was recorded after (none: it
 * has not been recorded), or that it was recorded under a capture. */
typedef struct {
  fake_stream *stream;
  uint64_t after;
  fake_stream *captured_on;
} fake_event;
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = calloc(1, sizeof(fake_event)); return OK; }
CUresult cuEventRecord(void *e, void *s) {
  live_stream(s, "cuEventRecord");
  fake_event *ev = e;
  fake_stream *st = stream_of(s);
  if (st->capture != 0) {
    ev->captured_on = st;
    return OK;
  }
  ev->captured_on = 0;
  ev->stream = st;
  ev->after = st->submitted;
  return OK;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return OK; }
static int under_capture(fake_event *ev) { return ev->captured_on && ev->captured_on->capture != 0; }
CUresult cuEventSynchronize(void *e) {
  fake_event *ev = e;
  CONFLICTS(under_capture(ev), "cuEventSynchronize");
  FORBIDDEN_WHILE_CAPTURING("cuEventSynchronize");
  if (ev->stream) finish_stream(ev->stream, ev->after);
  return OK;
}
CUresult cuEventQuery(void *e) {
  fake_event *ev = e;
  CONFLICTS(under_capture(ev), "cuEventQuery");
  FORBIDDEN_WHILE_CAPTURING("cuEventQuery");
  if (ev->stream && !work_done(ev->stream, ev->after)) return CUDA_ERROR_NOT_READY;
  return OK;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0; return OK; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0; return OK; }
static CUresult host_alloc(CUdeviceptr *p, size_t n);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  FORBIDDEN_WHILE_CAPTURING("cuMemAlloc");
  return host_alloc(p, n);
}
static CUresult host_alloc(CUdeviceptr *p, size_t n) {
  NEED_CTX();
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)m;
  return OK;
}
/* Graph allocations: cuMemAllocFromPoolAsync on a capturing stream makes
 * one (the driver records an allocation node). Their host memory is never
 * freed or reused, so an address seen as a graph allocation never comes
 * back from an ordinary allocation (a test can tell them apart); each is
 * recorded with whether it was freed. Freeing one twice aborts with a
 * message (no graph is launched here, so nothing makes it live again), and
 * cuMemFreeAsync on a capturing stream of memory that is no graph
 * allocation fails and invalidates the capture, as the driver refuses a
 * free node of memory no allocation node made. */
#define MAX_GRAPH_ALLOCS 4096
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr graph_allocs[MAX_GRAPH_ALLOCS];
static unsigned char graph_freed[MAX_GRAPH_ALLOCS];
static int graph_count;
static int stream_capturing(void *s) { return is_object(s) && ((uint64_t *)s)[1] != 0; }
/* The index of graph allocation p, or -1. */
static int graph_alloc_index(CUdeviceptr p) {
  for (int i = 0; i < graph_count; i++)
    if (graph_allocs[i] == p) return i;
  return -1;
}
/* Frees graph allocation p if it is one (1), else 0. */
static int graph_free(CUdeviceptr p, const char *call) {
  pthread_mutex_lock(&graph_lock);
  int i = graph_alloc_index(p);
  if (i >= 0 && graph_freed[i]) {
    fprintf(stderr, "fakecuda: %s of graph allocation %#llx, freed already\n", call,
            (unsigned long long)p);
    abort();
  }
  if (i >= 0) graph_freed[i] = 1;
  pthread_mutex_unlock(&graph_lock);
  return i >= 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!graph_free(p, "cuMemFree")) free((void *)(uintptr_t)p);
  return OK;
}
CUresult cuMemPoolCreate(void **pool, const void *props) {
  (void)props;
  NEED_CTX();
  *pool = malloc(64);
  return OK;
}
CUresult cuMemPoolDestroy(void *pool) { free(pool); return OK; }
CUresult cuMemPoolSetAttribute(void *pool, int attr, void *v) { (void)pool; (void)attr; (void)v; return OK; }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool, void *s) {
  (void)pool;
  live_stream(s, "cuMemAllocFromPoolAsync");
  if (n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!stream_capturing(s)) return host_alloc(p, n);
  /* An allocation node: zeroed host memory, kept for the process. */
  CUresult r = host_alloc(p, n);
  if (r != OK) return r;
  memset((void *)(uintptr_t)*p, 0, n);
  pthread_mutex_lock(&graph_lock);
  if (graph_count == MAX_GRAPH_ALLOCS) {
    pthread_mutex_unlock(&graph_lock);
    free((void *)(uintptr_t)*p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  graph_freed[graph_count] = 0;
  graph_allocs[graph_count++] = *p;
  pthread_mutex_unlock(&graph_lock);
  return OK;
}
CUresult cuMemFreeAsync(CUdeviceptr p, void *s) {
  live_stream(s, "cuMemFreeAsync");
  if (graph_free(p, "cuMemFreeAsync")) return OK; /* a free node, or a real free */
  if (stream_capturing(s)) {
    if (getenv("FAKECUDA_CAPTURE_VERBOSE"))
      fprintf(stderr, "fakecuda: cuMemFreeAsync of memory no allocation node made, while capturing\n");
    capture_invalidated = 1;
    return CUDA_ERROR_INVALID_VALUE;
  }
  free((void *)(uintptr_t)p);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *s) {
  (void)s; NEED_CTX(); memcpy((void *)(uintptr_t)d, h, n); return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, void *s) {
  (void)s; NEED_CTX(); memcpy(h, (void *)(uintptr_t)d, n); return OK;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr src, size_t n, void *s) {
  (void)s; NEED_CTX(); memmove((void *)(uintptr_t)d, (void *)(uintptr_t)src, n); return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) {
  (void)s; NEED_CTX(); memset((void *)(uintptr_t)d, v, n); return OK;
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *s) {
  (void)s; NEED_CTX();
  for (size_t i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v;
  return OK;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) {
  (void)s; NEED_CTX();
  for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
  return OK;
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, void *s) {
  (void)s; NEED_CTX();
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++) ((unsigned *)(uintptr_t)(d + r * pitch))[i] = v;
  return OK;
}

/* A module keeps its functions, one per name, each with its dynamic shared
 * memory attribute. */
#define MAX_FUNCS 16
#define MAX_QUEUED 8
typedef struct {
  char name[128];
  volatile int max_shared;
  int faults;
  volatile int unloaded; /* its module was unloaded: a launch is an error */
  /* Its last launch on each of up to MAX_QUEUED streams (the oldest
   * entry is replaced when full), under queued_lock. */
  fake_stream *queued_on[MAX_QUEUED];
  uint64_t queued_upto[MAX_QUEUED];
  int queued_next;
} fake_function;
static pthread_mutex_t queued_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct {
  pthread_mutex_t lock;
  int count;
  fake_function *funcs[MAX_FUNCS];
} fake_module;

CUresult cuModuleLoadData(void **m, const void *image) {
  (void)image;
  NEED_CTX();
  FORBIDDEN_WHILE_CAPTURING("cuModuleLoadData");
  fake_module *mod = calloc(1, sizeof *mod);
  pthread_mutex_init(&mod->lock, 0);
  *m = mod;
  return OK;
}
/* Functions of an unloaded module are kept (never freed) and marked, so
 * that a launch of one is caught: the real driver may run freed code or
 * fault; this one refuses the launch (CUDA_ERROR_INVALID_HANDLE) with a
 * message. */
CUresult cuModuleUnload(void *m) {
  NEED_CTX();
  FORBIDDEN_WHILE_CAPTURING("cuModuleUnload");
  fake_module *mod = m;
  pthread_mutex_lock(&queued_lock);
  for (int i = 0; i < mod->count; i++) {
    fake_function *fn = mod->funcs[i];
    for (int k = 0; k < MAX_QUEUED; k++) {
      if (fn->queued_on[k] && !work_done(fn->queued_on[k], fn->queued_upto[k])) {
        fprintf(stderr, "fakecuda: cuModuleUnload of a module whose function `%s` has queued work\n",
                fn->name);
        abort();
      }
    }
  }
  pthread_mutex_unlock(&queued_lock);
  for (int i = 0; i < mod->count; i++) mod->funcs[i]->unloaded = 1;
  pthread_mutex_destroy(&mod->lock);
  free(mod);
  return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  NEED_CTX();
  fake_module *mod = m;
  CUresult r = OK;
  pthread_mutex_lock(&mod->lock);
  int i = 0;
  while (i < mod->count && strcmp(mod->funcs[i]->name, name) != 0) i++;
  if (i == mod->count) {
    if (mod->count == MAX_FUNCS) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      fake_function *fn = calloc(1, sizeof *fn);
      strncpy(fn->name, name, sizeof fn->name - 1);
      fn->max_shared = 48 * 1024;
      fn->faults = strstr(name, "fakecuda_fault") != 0;
      mod->funcs[mod->count++] = fn;
    }
  }
  if (r == OK) *f = mod->funcs[i];
  pthread_mutex_unlock(&mod->lock);
  return r;
}
/* A function's own limits: a kernel named `fakecuda_regs` "uses" 255
 * registers and runs at most 256 threads per block; one named
 * `fakecuda_static_shared` declares 40 KiB of static shared memory. */
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
  NEED_CTX();
  const char *name = ((fake_function *)f)->name;
  switch (attr) {
  case 0: /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
    *v = strstr(name, "fakecuda_regs") ? 256 : 1024;
    break;
  case 1: /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
    *v = strstr(name, "fakecuda_static_shared") ? 40960 : 0;
    break;
  case 4: /* CU_FUNC_ATTRIBUTE_NUM_REGS */
    *v = strstr(name, "fakecuda_regs") ? 255 : 32;
    break;
  default:
    *v = 0;
  }
  return OK;
}
CUresult cuFuncSetAttribute(void *f, int attr, int v) {
  NEED_CTX();
  if (attr == 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */) {
    if (v < 0 || v > 232448) return CUDA_ERROR_INVALID_VALUE;
    ((fake_function *)f)->max_shared = v;
  }
  return OK;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *s, void **params, void **extra) {
  (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)extra;
  live_stream(s, "cuLaunchKernel");
  NEED_CTX();
  fake_function *fn = f;
  if (fn->unloaded) {
    fprintf(stderr, "fakecuda: cuLaunchKernel of `%s`, a function of an unloaded module\n", fn->name);
    return 400; /* CUDA_ERROR_INVALID_HANDLE */
  }
  if (shared > (unsigned)fn->max_shared) return CUDA_ERROR_INVALID_VALUE;
  if (fn->faults) {
    ctx_fault = 1;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  /* Read the first parameter, as a driver copies them all. */
  if (params && params[0]) sink += *(volatile uint32_t *)params[0];
  fake_stream *st = stream_of(s);
  if (st->capture == 0 && holding()) {
    /* Numbered under the lock, so a stream's numbers rise in its order. */
    pthread_mutex_lock(&queued_lock);
    uint64_t n = ++launches_numbered;
    st->submitted = n;
    int k = 0;
    while (k < MAX_QUEUED && fn->queued_on[k] != st) k++;
    if (k == MAX_QUEUED) {
      k = fn->queued_next;
      fn->queued_next = (k + 1) % MAX_QUEUED;
      fn->queued_on[k] = st;
    }
    fn->queued_upto[k] = n;
    pthread_mutex_unlock(&queued_lock);
  }
  thrash();
  return OK;
}
/* NVRTC asks libcuda for its private export tables when it finds one; a
 * stand-in has none, and saying so makes NVRTC compile on its own. */
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = 0;
  return 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_FAKE"; return OK; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fakecuda error"; return OK; }

/* ---- NVRTC ---- */

/* Left out of the libcuda build: a real libnvrtc (from the PyPI wheels, which
 * compiles here without a GPU) resolves its own symbols, and finding
 * stand-ins under those names in libcuda would break it. */
#ifndef FAKECUDA_DRIVER_ONLY

nvrtcResult nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return OK; }
nvrtcResult nvrtcGetNumSupportedArchs(int *n) { *n = 3; return OK; }
nvrtcResult nvrtcGetSupportedArchs(int *a) { a[0] = 80; a[1] = 90; a[2] = 100; return OK; }
nvrtcResult nvrtcCreateProgram(void **p, const char *src, const char *name, int n, const char *const *h,
                               const char *const *i) {
  (void)src; (void)name; (void)n; (void)h; (void)i;
  *p = malloc(64);
  return OK;
}
nvrtcResult nvrtcCompileProgram(void *p, int n, const char *const *o) { (void)p; (void)n; (void)o; return OK; }
nvrtcResult nvrtcDestroyProgram(void **p) { free(*p); *p = 0; return OK; }
nvrtcResult nvrtcGetProgramLogSize(void *p, size_t *n) { (void)p; *n = 1; return OK; }
nvrtcResult nvrtcGetProgramLog(void *p, char *log) { (void)p; log[0] = 0; return OK; }
static const char IMAGE[] = "fakecuda image";
nvrtcResult nvrtcGetCUBINSize(void *p, size_t *n) { (void)p; *n = sizeof IMAGE; return OK; }
nvrtcResult nvrtcGetCUBIN(void *p, char *out) { (void)p; memcpy(out, IMAGE, sizeof IMAGE); return OK; }
nvrtcResult nvrtcGetPTXSize(void *p, size_t *n) { (void)p; *n = sizeof IMAGE; return OK; }
nvrtcResult nvrtcGetPTX(void *p, char *out) { (void)p; memcpy(out, IMAGE, sizeof IMAGE); return OK; }
#endif /* FAKECUDA_DRIVER_ONLY */
