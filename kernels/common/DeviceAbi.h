/*===- DeviceAbi.h - How a GPU program is launched and watched ------------===*
 *
 * The contract between the GPU emitters (targets/nvidia, targets/amd), the
 * device interpreter loop (kernels/<vendor>/) and the runtime backends
 * (runtime/cuda, runtime/hip). Plain C: every side reads it.
 *
 * A GPU artifact is a host shared library exporting LOOM_DEVICE_PROGRAM_SYMBOL.
 * It returns the program's task table (LoomProgramDesc, run_task = NULL: the
 * bodies run on the device) and the code object the runtime loads.
 *
 * The kernel takes a LoomKernelArgs by value (and, since version 4, maybe
 * its bindings: see below). Each worker block walks its
 * task list; a wait polls `events[e]` until it reaches epoch * needs[e]
 * (relaxed polls, then an acquire), a trigger is a release add at device
 * scope after the body's stores are drained.
 *
 * Bindings by value (version 4). A kernel whose LoomDeviceProgram sets
 * LOOM_DEVICE_INLINE_BINDINGS takes a second parameter, the bindings
 * themselves: `LoomKernelArgs args, const __grid_constant__ LoomBindings<N>`
 * with N = max(1, num_buffers), and reads them there when `args.bindings` is
 * NULL (the runtime passes NULL there for such kernels, in all its
 * launches). A launch then carries everything it reads, so it can be queued
 * on a stream or captured in a CUDA graph with no copy before it. The emitter
 * gives a kernel that parameter only when both fit in LOOM_KERNEL_PARAM_BYTES
 * (LOOM_INLINE_BINDINGS_FIT); a larger table keeps the one-parameter kernel
 * and the device copy. Version 3 differs only in having no such kernels:
 * the runtime accepts both (LOOM_DEVICE_ABI_OLDEST_VERSION).
 *
 * The launch number (version 3). A launch with `epoch` = 0 takes its number
 * from device memory, so launches queued back to back on a stream, or
 * replayed from a CUDA graph, need no host between them: worker w runs
 * launch control[LOOM_CONTROL_WORKERS + w] + 1 and stores that number there
 * as it leaves (every worker runs every launch, so they agree); a worker
 * that fails or gives up sets control[LOOM_CONTROL_FAILED], and later such
 * launches do nothing until the runtime zeroes the counters and the control
 * words. A launch with `epoch` > 0 (the runtime's own launches, until a
 * program's first launch on a stream) uses that number and touches no
 * control word: a runtime that switches to epoch 0 first stores the
 * launches completed into every worker's word, and then numbers all its
 * launches with epoch 0, since a graph may replay epoch-0 launches at any
 * time. Kernels that predate version 3 (the AMD loop) use `epoch` alone.
 *
 * Status (version 3): a launch that ends with no LoomWorkerStatus saying
 * error != 0 succeeded. The NVIDIA loop writes a record only when a wait has
 * lasted long (about half a millisecond) and when a worker fails; the AMD
 * loop also at every unsatisfied wait and at exit.
 *
 * Per-task timing (version 2). A program built with `loomc --profile` sets
 * LOOM_DEVICE_PROFILED in `flags`; its kernel records, for every task it
 * runs, a LoomTaskTiming at profile[task] and, for every worker block w, one
 * at profile[num_tasks + w] (its entry and exit), in raw ticks of the
 * vendor's global timer (CUDA: %globaltimer, ns). The runtime allocates the
 * num_tasks + num_workers records for such a program and passes them in
 * LoomKernelArgs::profile. NULL means "do not record": every kernel must
 * accept it, profiled or not, so a backend or interpreter that knows nothing
 * of profiling keeps working by leaving the field zero.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_KERNELS_COMMON_DEVICEABI_H
#define LOOM_KERNELS_COMMON_DEVICEABI_H

#include "kernels/common/ProgramAbi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_DEVICE_ABI_VERSION 4
/* The oldest version the runtime still loads: version 3 has the same
 * layout, and its kernels all take one parameter. */
#define LOOM_DEVICE_ABI_OLDEST_VERSION 3
#define LOOM_DEVICE_PROGRAM_SYMBOL "loom_device_program"

/* What a stuck or failed worker reports, in host-mapped memory the runtime
 * reads while the kernel runs (its watchdog) and after it ends. */
typedef struct LoomWorkerStatus {
  int32_t task;      /* task being waited for or run; -1 when done */
  int32_t event;     /* event waited on; -1 while running a body */
  uint64_t seen;     /* last count read of that event */
  uint64_t needed;   /* count it waits for */
  int32_t error;     /* non-zero: the task body's error code */
  /* error == LOOM_BODY_BAD_INDEX: the LoomMetaReason, with `seen` the
   * refused value's address and `needed` the value (LoomMetaFault); else 0. */
  int32_t meta_reason;
} LoomWorkerStatus;

/* LoomDeviceProgram::flags. */
#define LOOM_DEVICE_PROFILED 1u /* the kernel records LoomTaskTiming */
/* Version 4: the kernel's second parameter is LoomBindings<N> (see above). */
#define LOOM_DEVICE_INLINE_BINDINGS 2u

/* One task's (or, past num_tasks, one worker's) timing in the last launch,
 * in raw timer ticks. Tasks: `pick` when the worker took the task, `start`
 * when its inputs were ready (waits done, acquire fence passed), `end` when
 * its body had ended, read before its output events are triggered (so a
 * consumer's `start` is never before its producers' `end`). Workers:
 * pick = start = the block's entry into the loop, end = its exit. `epoch` is
 * the launch that wrote the record (low 32 bits), so a reader can tell a
 * record of this launch from a stale one. */
typedef struct LoomTaskTiming {
  uint64_t pick;
  uint64_t start;
  uint64_t end;
  int32_t worker;
  uint32_t epoch;
} LoomTaskTiming;

typedef struct LoomKernelArgs {
  const LoomBinding *bindings;  /* device copy, num_buffers entries */
  void *workspace;              /* workspace_bytes, device memory */
  unsigned long long *events;   /* num_events counters, only ever grow */
  unsigned long long epoch;     /* launch number, from 1; 0: from control */
  LoomWorkerStatus *status;     /* num_workers entries, host-mapped */
  volatile int32_t *abort_flag; /* host-mapped: set by the watchdog */
  unsigned long long timeout_cycles; /* a wait longer than this gives up */
  /* Version 2: num_tasks + num_workers records (see above), or NULL. */
  LoomTaskTiming *profile;
  /* Version 3: LOOM_CONTROL_WORKERS + num_workers counters in device
   * memory (see above). */
  unsigned long long *control;
} LoomKernelArgs;

/* What a kernel's parameters may total: sm_70 and later with CUDA 12.1 and
 * later (before 12.1: 4096 bytes, LOOM_KERNEL_PARAM_BYTES_BEFORE_12_1). */
#define LOOM_KERNEL_PARAM_BYTES 32764
#define LOOM_KERNEL_PARAM_BYTES_BEFORE_12_1 4096
/* The parameters of a kernel that takes the bindings of `num_buffers`
 * buffers by value (at least one entry: no array is empty). */
#define LOOM_INLINE_BINDINGS_PARAM_BYTES(num_buffers)                          \
  (sizeof(LoomKernelArgs) +                                                    \
   (size_t)((num_buffers) > 1 ? (num_buffers) : 1) * sizeof(LoomBinding))
/* Whether such a kernel can exist (the emitter's one test). */
#define LOOM_INLINE_BINDINGS_FIT(num_buffers)                                  \
  (LOOM_INLINE_BINDINGS_PARAM_BYTES(num_buffers) <= LOOM_KERNEL_PARAM_BYTES)

/* What a task body returns (block-uniform), which a failing worker writes
 * to LoomWorkerStatus::error: 0 is success; negative values are the
 * loop's own (a wait aborted or timed out). The runtime names these. */
#define LOOM_BODY_OK 0
#define LOOM_BODY_BAD_INDEX 1      /* a meta value out of range */
#define LOOM_BODY_SMEM_TOO_SMALL 2 /* less shared memory / LDS than needed */
#define LOOM_BODY_WAIT_TIMED_OUT 3 /* its wait for other workers ran out */

/* The words of LoomKernelArgs::control. */
#define LOOM_CONTROL_FAILED 0  /* non-zero once a launch failed */
#define LOOM_CONTROL_WORKERS 4 /* then per worker: launches it completed */

typedef struct LoomDeviceProgram {
  uint32_t abi_version;          /* LOOM_DEVICE_ABI_VERSION */
  const LoomProgramDesc *program;/* the task table (run_task = NULL) */
  const char *arch;              /* "sm_90a", "sm_100a", "gfx950" */
  const void *code_object;       /* cubin / hsaco bytes */
  uint64_t code_object_size;
  const char *kernel_name;       /* extern "C" kernel symbol */
  int32_t threads_per_block;
  int32_t dynamic_smem_bytes;
  const char *bodies;            /* which task bodies this build used */
  /* Version 2: LOOM_DEVICE_PROFILED; version 4: LOOM_DEVICE_INLINE_BINDINGS;
   * or 0. */
  uint32_t flags;
} LoomDeviceProgram;

typedef const LoomDeviceProgram *(*LoomGetDeviceProgramFn)(void);

#ifdef __cplusplus
}

/* What an NVIDIA task body reads of a binding, its base and leading
 * dimension (the emitted tile functions use no other field, and spell them
 * as LoomBinding's): the workers copy these into shared memory once per
 * launch, since reading the bindings where they arrive (the kernel's
 * parameter space through a generic pointer, or a device copy) puts a
 * long-latency load at the start of every task. */
typedef struct LoomTaskBinding {
  void *data;
  int64_t dims[1];
} LoomTaskBinding;

/* A kernel's second parameter under LOOM_DEVICE_INLINE_BINDINGS: the
 * bindings by value, N = max(1, num_buffers). */
template <int N> struct LoomBindings { LoomBinding entries[N]; };
#endif

#endif /* LOOM_KERNELS_COMMON_DEVICEABI_H */
