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
 * The kernel takes one LoomKernelArgs by value. Each worker block walks its
 * task list; a wait polls `events[e]` until it reaches epoch * needs[e]
 * (relaxed polls, then an acquire), a trigger is a release add at device
 * scope after the body's stores are drained.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_KERNELS_COMMON_DEVICEABI_H
#define LOOM_KERNELS_COMMON_DEVICEABI_H

#include "kernels/common/ProgramAbi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_DEVICE_ABI_VERSION 1
#define LOOM_DEVICE_PROGRAM_SYMBOL "loom_device_program"

/* What a stuck or failed worker reports, in host-mapped memory the runtime
 * reads while the kernel runs (its watchdog) and after it ends. */
typedef struct LoomWorkerStatus {
  int32_t task;      /* task being waited for or run; -1 when done */
  int32_t event;     /* event waited on; -1 while running a body */
  uint64_t seen;     /* last count read of that event */
  uint64_t needed;   /* count it waits for */
  int32_t error;     /* non-zero: the task body's error code */
  int32_t pad;
} LoomWorkerStatus;

typedef struct LoomKernelArgs {
  const LoomBinding *bindings;  /* device copy, num_buffers entries */
  void *workspace;              /* workspace_bytes, device memory */
  unsigned long long *events;   /* num_events counters, only ever grow */
  unsigned long long epoch;     /* launch number, from 1 */
  LoomWorkerStatus *status;     /* num_workers entries, host-mapped */
  volatile int32_t *abort_flag; /* host-mapped: set by the watchdog */
  unsigned long long timeout_cycles; /* a wait longer than this gives up */
} LoomKernelArgs;

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
} LoomDeviceProgram;

typedef const LoomDeviceProgram *(*LoomGetDeviceProgramFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_KERNELS_COMMON_DEVICEABI_H */
