/* A minimal NVTX tool for kernelkit's tests: an injection library (the
 * kind NVTX_INJECTION64_PATH names) that implements push/pop ranges and
 * appends each to the file named by KK_NVTX_LOG, one line per event:
 *   push <thread> <message>
 *   pop <thread> <depth after the pop>
 * Without KK_NVTX_LOG it only counts (the benchmark's trivial tool:
 * crates/kernelkit-bench/examples/nvtx_overhead.rs).
 * Written from the protocol's published types (nvtxDetail/nvtxTypes.h):
 * InitializeInjectionNvtx2 receives the client's export-table function,
 * asks it for the callbacks table, and writes its own functions into the
 * core module's slots for RangePushA and RangePop. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef void (*slot_fn)(void);
typedef slot_fn **function_table;
typedef struct {
  size_t struct_size;
  int (*get_module_function_table)(int module, function_table *out_table,
                                   unsigned int *out_size);
} callbacks_table;
typedef const void *(*get_export_table_fn)(uint32_t id);

enum { ETID_CALLBACKS = 1, MODULE_CORE = 1, CORE_PUSH_A = 9, CORE_POP = 11 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static __thread int depth;

static long thread_id(void) { return (long)syscall(SYS_gettid); }

static int push_a(const char *message) {
  int level = depth++;
  pthread_mutex_lock(&lock);
  if (out) {
    fprintf(out, "push %ld %s\n", thread_id(), message ? message : "(null)");
    fflush(out);
  }
  pthread_mutex_unlock(&lock);
  return level;
}

static int pop(void) {
  if (depth > 0) depth--;
  pthread_mutex_lock(&lock);
  if (out) {
    fprintf(out, "pop %ld %d\n", thread_id(), depth);
    fflush(out);
  }
  pthread_mutex_unlock(&lock);
  return depth;
}

int InitializeInjectionNvtx2(get_export_table_fn get_export_table) {
  const char *path = getenv("KK_NVTX_LOG");
  if (path) {
    out = fopen(path, "a");
    if (!out) return 0;
    fprintf(out, "init\n");
    fflush(out);
  }
  const callbacks_table *callbacks =
      (const callbacks_table *)get_export_table(ETID_CALLBACKS);
  if (!callbacks || callbacks->struct_size < sizeof(callbacks_table)) return 0;
  function_table table = NULL;
  unsigned int size = 0;
  if (!callbacks->get_module_function_table(MODULE_CORE, &table, &size) ||
      size <= CORE_POP)
    return 0;
  *table[CORE_PUSH_A] = (slot_fn)push_a;
  *table[CORE_POP] = (slot_fn)pop;
  return 1;
}
