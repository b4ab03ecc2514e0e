/*===- RuntimeCudaFake.h - A fake CUDA driver for the runtime's tests -----===*
 *
 * RuntimeCudaFakeDriver.cpp builds a shared library that exports the CUDA
 * driver functions the runtime loads (LOOM_CUDA_DRIVER points the runtime at
 * it). Its "GPU" is host memory and its "kernel" runs each worker block on a
 * host thread, interpreting the task table the fake code object points to
 * the way kernels/nvidia/Interpreter.cuh does: event counters (and dynamic
 * mode's queue at events[num_events]), LoomWorkerStatus records, the abort
 * flag, timeout_cycles (its clock runs at 1 GHz: a cycle is a ns).
 *
 * Launches with epoch 0 are numbered from the control words, as the real
 * loop numbers them (DeviceAbi.h), and a kernel whose code object says
 * `inline_bindings` gets its bindings from its second parameter, copied at
 * the launch call. Streams created with flags 0 (a framework's streams, in
 * the tests) and the legacy default stream (null) queue launches behind
 * each other; the runtime's own non-blocking streams must never get a
 * launch while one runs there.
 *
 * Task bodies are chosen by the task name's prefix:
 *   step   x[t] = (t == 0 ? 100 * epoch : x[t - 1]) + 1, x = binding 0 (i64)
 *   fail   the body fails with code 42
 *   crash  the kernel faults: the launch ends with CUDA_ERROR_ILLEGAL_ADDRESS
 *   stuck  the body sleeps 1.5 s and ignores the abort flag
 *   slow   the body sleeps 300 ms
 *   other  nothing
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_TESTS_UNIT_RUNTIMECUDAFAKE_H
#define LOOM_TESTS_UNIT_RUNTIMECUDAFAKE_H

#include "kernels/common/ProgramAbi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_FAKE_CUBIN_MAGIC "LOOMFAKECUBIN01"
#define LOOM_FAKE_KERNEL_NAME "loom_fake_kernel"

/* What a fake artifact's code_object points to. */
typedef struct LoomFakeCodeObject {
  char magic[16];
  const char *kernel_name;        /* the module's one kernel */
  const LoomProgramDesc *program; /* what that kernel interprets */
  int inline_bindings; /* the kernel's second parameter: the bindings */
} LoomFakeCodeObject;

typedef struct LoomFakeCudaConfig {
  int init_result; /* what cuInit returns */
  int devices;
  int sm_count;
  int cc_major;
  int cc_minor;
  int blocks_per_sm; /* the occupancy calculator's answer */
  int cooperative;
  int can_map_host;
  int max_smem_optin;
  int stream_mem_ops; /* 0: cuStreamWaitValue32 returns NOT_SUPPORTED */
  int launch_call_us; /* host time cuLaunchCooperativeKernel takes before
                         the launch reaches the fake GPU */
  int streams_capturing; /* cuStreamIsCapturing: every queueing stream is
                            being captured (launches still run) */
} LoomFakeCudaConfig;

typedef struct LoomFakeCudaStats {
  int launches;
  unsigned last_grid;
  unsigned last_block;
  unsigned last_smem;
  unsigned long long last_epoch;
  unsigned long long last_timeout_cycles;
  int gated_launches; /* launches that started behind a stream wait */
  int max_dynamic_smem_attribute; /* last value set; 0 if never */
  long live_device_allocs;
  long live_host_allocs;
  long live_modules;
  long live_streams;
  long live_events;
  long primary_retains; /* retains minus releases */
  long calls_without_context;
} LoomFakeCudaStats;

/* Exported by the fake driver. configure() also resets the stats' counts of
 * launches, gated_launches and calls_without_context. */
typedef void (*LoomFakeCudaConfigureFn)(const LoomFakeCudaConfig *config);
typedef void (*LoomFakeCudaStatsFn)(LoomFakeCudaStats *stats);
#define LOOM_FAKE_CUDA_CONFIGURE "loom_fake_cuda_configure"
#define LOOM_FAKE_CUDA_STATS "loom_fake_cuda_stats"
/* Launches the last launch made on a caller's stream (null: the legacy
 * one) again, with the same parameters, as a CUDA graph holding it would:
 * the runtime does not see it. Returns a CUresult. */
typedef int (*LoomFakeCudaReplayFn)(void *stream);
#define LOOM_FAKE_CUDA_REPLAY "loom_fake_cuda_replay"

/* The fake artifact's variant comes from this environment variable, read
 * each time the runtime asks for the program. */
#define LOOM_FAKE_ARTIFACT_ENV "LOOM_FAKE_ARTIFACT"

#ifdef __cplusplus
}
#endif

#endif /* LOOM_TESTS_UNIT_RUNTIMECUDAFAKE_H */
