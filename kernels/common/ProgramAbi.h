/*===- ProgramAbi.h - What an emitted program tells the runtime -----------===*
 *
 * The contract between Loom's emitters and its runtimes, in plain C so every
 * backend can read it: a scheduled program is a task table (waits/triggers
 * per task, arrivals per event), per-worker task lists (static mode) or one
 * queue order (dynamic mode), the buffers it binds, and one entry point that
 * runs a task's body.
 *
 * Events are counters that only grow. Launch number `epoch` (1, 2, ...) waits
 * for `counter >= epoch * event_needs[e]`, so nothing is reset between
 * launches.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_KERNELS_COMMON_PROGRAMABI_H
#define LOOM_KERNELS_COMMON_PROGRAMABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_PROGRAM_ABI_VERSION 1
#define LOOM_MAX_RANK 8

/* Roles and element types, in the order of the dialect's enums. */
enum LoomRole { LOOM_ROLE_INPUT = 0, LOOM_ROLE_WEIGHT = 1, LOOM_ROLE_CACHE = 2,
                LOOM_ROLE_OUTPUT = 3, LOOM_ROLE_META = 4 };
enum LoomElem { LOOM_ELEM_BF16 = 0, LOOM_ELEM_F16 = 1, LOOM_ELEM_F32 = 2,
                LOOM_ELEM_I32 = 3, LOOM_ELEM_I64 = 4 };
enum LoomScheduleMode { LOOM_SCHEDULE_STATIC = 0, LOOM_SCHEDULE_DYNAMIC = 1 };

/* One graph argument. dims[i] < 0: sized at run time (at most `bound`
 * entries along the leading dimension). */
typedef struct LoomBufferDesc {
  const char *name;
  int32_t role;  /* LoomRole */
  int32_t elem;  /* LoomElem */
  int32_t rank;
  int64_t dims[LOOM_MAX_RANK];
  int64_t bound; /* upper bound of a dynamic leading dimension, else 0 */
} LoomBufferDesc;

/* A bound buffer at launch: its base and actual dimensions. */
typedef struct LoomBinding {
  void *data;
  int64_t dims[LOOM_MAX_RANK];
} LoomBinding;

/* Runs task `task`'s body. `bindings` follow `buffers`; `workspace` is the
 * arena of `workspace_bytes`. Returns 0, or a non-zero code the runtime
 * reports with the task's name (e.g. an out-of-range page id). */
typedef int32_t (*LoomRunTaskFn)(int32_t task, const LoomBinding *bindings,
                                 void *workspace);

typedef struct LoomProgramDesc {
  uint32_t abi_version; /* LOOM_PROGRAM_ABI_VERSION */
  const char *name;     /* graph symbol */
  const char *target;   /* chip name */
  int32_t mode;         /* LoomScheduleMode */
  int32_t num_workers;
  int32_t num_tasks;
  int32_t num_events;
  int32_t num_buffers;
  const LoomBufferDesc *buffers;
  int64_t workspace_bytes;
  /* Static mode: worker w runs worker_tasks[worker_begin[w] ..
   * worker_begin[w+1]) in order. Dynamic mode: workers take tasks from one
   * counter in the order of worker_tasks[0 .. num_tasks). */
  const int32_t *worker_begin; /* num_workers + 1 entries */
  const int32_t *worker_tasks;
  /* Task t waits on wait_events[task_wait_begin[t] .. task_wait_begin[t+1])
   * and then triggers trigger_events[task_trigger_begin[t] .. [t+1]). */
  const int32_t *task_wait_begin;
  const int32_t *wait_events;
  const int32_t *task_trigger_begin;
  const int32_t *trigger_events;
  const int32_t *event_needs; /* arrivals per launch */
  const char *const *task_names; /* "linear#12[3]": op kind, op id, tile */
  LoomRunTaskFn run_task;
} LoomProgramDesc;

/* The symbol a host program library exports. */
typedef const LoomProgramDesc *(*LoomGetProgramFn)(void);
#define LOOM_HOST_PROGRAM_SYMBOL "loom_host_program"

/* Why a body refused a meta value (LoomMetaFault::reason). A body that
 * finds one reads and writes nothing through it (it uses a value in range
 * instead, or skips the work) and its task fails with LOOM_BODY_BAD_INDEX
 * (DeviceAbi.h), so the launch fails naming the buffer, index and value. */
enum LoomMetaReason {
  LOOM_META_PAGE_ID = 1,    /* a page id outside the cache's pages */
  LOOM_META_INDPTR = 2,     /* kv_indptr negative, decreasing, or past kv_indices */
  LOOM_META_KV_LEN = 3,     /* a length below 0 or above its pages x page size */
  LOOM_META_SLOT = 4,       /* a cache slot past the cache (negative: skipped) */
  LOOM_META_CU_SEQLENS = 5, /* cu_seqlens negative, decreasing or past the tokens */
  LOOM_META_CHUNKS = 6,     /* more chunks than the program's bound */
  LOOM_META_TOKEN_ID = 7    /* a token id outside the vocabulary */
};

/* The first meta value a body refused: `where` is its address (the runtime
 * finds the binding and index from it), `value` what it held. */
typedef struct LoomMetaFault {
  const void *where;
  int64_t value;
  int32_t reason; /* LoomMetaReason; 0: none */
  int32_t pad;
} LoomMetaFault;

/* A host program library also exports this: the calling thread's last
 * refused meta value (reason 0: none), read by the runtime after a task
 * returned LOOM_BODY_BAD_INDEX on that thread. Optional: older programs
 * lack it. */
typedef const LoomMetaFault *(*LoomGetMetaFaultFn)(void);
#define LOOM_HOST_META_FAULT_SYMBOL "loom_host_meta_fault"

#ifdef __cplusplus
}
#endif

#endif /* LOOM_KERNELS_COMMON_PROGRAMABI_H */
