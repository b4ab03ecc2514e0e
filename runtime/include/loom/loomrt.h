/*===- loomrt.h - Loom runtime C API ---------------------------------------===*
 *
 * Loads a scheduled Loom program onto a device, binds its buffers, launches
 * it (one launch = one epoch of the task table) and reports what went wrong
 * in words. One API for every backend: "host" (CPU threads), "cuda" (NVIDIA
 * GPUs through the driver API, loaded at run time), "hip" later.
 *
 * Conventions:
 *  - Every call that can fail returns a loomrt_status. On failure the message
 *    is in loomrt_last_error(), per thread, until the next failing call on the
 *    same thread; successful calls leave it alone.
 *  - Handles are opaque. A device outlives its programs: destroying a device
 *    that still has programs fails with LOOMRT_ERROR_BUSY. A handle that is
 *    not alive (destroyed already, or not made by this library) is refused
 *    with LOOMRT_ERROR_INVALID_ARGUMENT before it is read, so destroying
 *    twice is an error, not a crash.
 *  - Copies and fills that touch memory from loomrt_malloc must stay inside
 *    that allocation (LOOMRT_ERROR_INVALID_ARGUMENT otherwise); other memory
 *    cannot be checked.
 *  - A program is driven by one host thread at a time (like a stream); a
 *    device's memory calls may come from any thread.
 *  - loomrt_launch starts a launch and returns; loomrt_synchronize waits for
 *    it and returns the launch's own errors (the watchdog's report, a failed
 *    task). A launch that starts while another is in flight waits for it.
 *  - CUDA: loomrt_launch_on_stream queues a launch on the caller's stream
 *    instead (graph capture included); loomrt_program_check reports it once
 *    the caller has synchronized that stream.
 *  - A program whose launch failed refuses further launches
 *    (LOOMRT_ERROR_PROGRAM_FAILED): its event counters no longer agree with
 *    its epoch. Load it again.
 *
 * Enumerations have fixed values and only grow; functions are only added.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_RUNTIME_LOOMRT_H
#define LOOM_RUNTIME_LOOMRT_H

#include "kernels/common/ProgramAbi.h"

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define LOOMRT_API
#else
#define LOOMRT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define LOOMRT_VERSION_MAJOR 0
#define LOOMRT_VERSION_MINOR 1

typedef enum loomrt_status {
  LOOMRT_SUCCESS = 0,
  /* A null handle or pointer, an index out of range, a bad value. */
  LOOMRT_ERROR_INVALID_ARGUMENT = 1,
  /* Device kind not known, or ordinal out of range. */
  LOOMRT_ERROR_UNKNOWN_DEVICE = 2,
  /* Kind known, but its backend is not built in or its driver is missing. */
  LOOMRT_ERROR_BACKEND_UNAVAILABLE = 3,
  /* The program file could not be opened, or lacks the program symbol. */
  LOOMRT_ERROR_LOAD_FAILED = 4,
  /* The program was built for another LOOM_PROGRAM_ABI_VERSION. */
  LOOMRT_ERROR_ABI_MISMATCH = 5,
  /* The task table is inconsistent (indices out of range, arrival counts). */
  LOOMRT_ERROR_INVALID_PROGRAM = 6,
  /* No buffer of that name. */
  LOOMRT_ERROR_NOT_FOUND = 7,
  /* A binding does not fit its buffer (null data, rank, dims, bound). */
  LOOMRT_ERROR_BINDING = 8,
  /* Launch with buffers still unbound. */
  LOOMRT_ERROR_NOT_BOUND = 9,
  LOOMRT_ERROR_OUT_OF_MEMORY = 10,
  /* The backend could not get what it needs (e.g. worker threads). */
  LOOMRT_ERROR_RESOURCES = 11,
  /* The watchdog stopped a launch that made no progress. */
  LOOMRT_ERROR_TIMEOUT = 12,
  /* A task body returned a non-zero code. */
  LOOMRT_ERROR_TASK_FAILED = 13,
  /* A previous launch of this program failed; load it again. */
  LOOMRT_ERROR_PROGRAM_FAILED = 14,
  /* The object is still in use (a device with live programs). */
  LOOMRT_ERROR_BUSY = 15,
  /* Nothing to report yet (no launch has completed). */
  LOOMRT_ERROR_NOT_READY = 16,
  /* The device reported an error (a kernel faulted: illegal address, ...).
   * After a fault the device's context is usually unusable for the rest of
   * the process. */
  LOOMRT_ERROR_DEVICE = 17,
  /* The backend or its driver cannot do what was asked (e.g. queued
   * launches on the host backend). */
  LOOMRT_ERROR_UNSUPPORTED = 18,
  LOOMRT_ERROR_INTERNAL = 99
} loomrt_status;

/* Flags of loomrt_program_load / loomrt_program_from_desc. */
enum {
  LOOMRT_PROGRAM_DEFAULT = 0,
  /* Skip the load-time check that each event's triggers per launch equal its
   * event_needs. Only for tests that plant a broken schedule on purpose: a
   * surplus trigger lets the next epoch's waiters through early, silently. */
  LOOMRT_PROGRAM_SKIP_ARRIVAL_CHECK = 1u << 0
};

/* Watchdog default, overridden by the LOOM_WATCHDOG_MS environment variable
 * (read when a program is created) and by loomrt_program_set_watchdog_ms. */
#define LOOMRT_DEFAULT_WATCHDOG_MS 10000u

/* Direction of loomrt_memcpy_kind. DEFAULT infers it (unified addressing),
 * as loomrt_memcpy does. */
typedef enum loomrt_copy_kind {
  LOOMRT_COPY_DEFAULT = 0,
  LOOMRT_COPY_HOST_TO_DEVICE = 1,
  LOOMRT_COPY_DEVICE_TO_HOST = 2,
  LOOMRT_COPY_DEVICE_TO_DEVICE = 3,
  LOOMRT_COPY_HOST_TO_HOST = 4
} loomrt_copy_kind;

typedef struct loomrt_device loomrt_device;
typedef struct loomrt_program loomrt_program;

/*--- Library ---------------------------------------------------------------*/

/* "MAJOR.MINOR". */
LOOMRT_API const char *loomrt_version(void);
/* The LOOM_PROGRAM_ABI_VERSION this runtime reads. */
LOOMRT_API uint32_t loomrt_program_abi_version(void);
/* "LOOMRT_ERROR_TIMEOUT" etc.; "LOOMRT_UNKNOWN_STATUS" otherwise. */
LOOMRT_API const char *loomrt_status_name(loomrt_status status);
/* Message of the last failed call on this thread; "" if none. Valid until
 * the next failing call on this thread. */
LOOMRT_API const char *loomrt_last_error(void);
/* Bytes of one element of a LoomElem; 0 if unknown. */
LOOMRT_API size_t loomrt_elem_bytes(int32_t elem);

/*--- Devices ---------------------------------------------------------------*/

/* Number of devices of `kind` ("host": always 1). "cuda": 0 when the driver
 * has no device; LOOMRT_ERROR_BACKEND_UNAVAILABLE (count set to 0) when
 * libcuda.so.1 cannot be loaded, saying why. */
LOOMRT_API loomrt_status loomrt_device_count(const char *kind, int *count);
LOOMRT_API loomrt_status loomrt_device_create(const char *kind, int ordinal,
                                              loomrt_device **device);
/* Frees the device and any memory still allocated on it. */
LOOMRT_API loomrt_status loomrt_device_destroy(loomrt_device *device);
/* The kind it was created with ("host"); "" for a null handle. */
LOOMRT_API const char *loomrt_device_kind(const loomrt_device *device);
/* One line for logs: "host device 0", "cuda device 0 (NVIDIA H200, compute
 * capability 9.0, 132 SMs)"; "" for a null handle. Valid while the device
 * lives. */
LOOMRT_API const char *loomrt_device_describe(const loomrt_device *device);

/* Device memory, aligned to at least 256 bytes. Host: ordinary memory.
 * CUDA: cuMemAlloc; the pointer is the CUdeviceptr (not dereferenceable on
 * the host). */
LOOMRT_API loomrt_status loomrt_malloc(loomrt_device *device, size_t bytes,
                                       void **ptr);
LOOMRT_API loomrt_status loomrt_free(loomrt_device *device, void *ptr);
/* Either side may be device or host memory (unified addressing). Returns
 * when the copy is done. CUDA: does not wait for a launch in flight (like
 * the host backend); synchronize before reading a program's outputs. */
LOOMRT_API loomrt_status loomrt_memcpy(loomrt_device *device, void *dst,
                                       const void *src, size_t bytes);
/* loomrt_memcpy with the direction given: a pointer on the wrong side is an
 * error from the driver rather than a guess. Host: every kind is a memmove. */
LOOMRT_API loomrt_status loomrt_memcpy_kind(loomrt_device *device, void *dst,
                                            const void *src, size_t bytes,
                                            loomrt_copy_kind kind);
/* Sets `bytes` bytes to (unsigned char)value; 0xFF poisons floats to NaN. */
LOOMRT_API loomrt_status loomrt_memset(loomrt_device *device, void *dst,
                                       int value, size_t bytes);

/*--- Programs --------------------------------------------------------------*/

/* Loads a compiled program. Host: a shared library exporting
 * LOOM_HOST_PROGRAM_SYMBOL. CUDA: a shared library exporting
 * LOOM_DEVICE_PROGRAM_SYMBOL (kernels/common/DeviceAbi.h); its architecture
 * must run on the device and all its worker blocks must fit at once. */
LOOMRT_API loomrt_status loomrt_program_load(loomrt_device *device,
                                             const char *path, uint32_t flags,
                                             loomrt_program **program);
/* Makes a program from a descriptor in this process (tests, in-process
 * compilation). The descriptor is copied: it may go away afterwards, but
 * run_task must stay callable. Host only. */
LOOMRT_API loomrt_status loomrt_program_from_desc(loomrt_device *device,
                                                  const LoomProgramDesc *desc,
                                                  uint32_t flags,
                                                  loomrt_program **program);
/* Waits for the launch in flight (if any), then frees the program. */
LOOMRT_API loomrt_status loomrt_program_destroy(loomrt_program *program);

/* The program's (copied) descriptor; valid for the program's lifetime. */
LOOMRT_API loomrt_status loomrt_program_desc(const loomrt_program *program,
                                             const LoomProgramDesc **desc);
LOOMRT_API loomrt_status
loomrt_program_num_buffers(const loomrt_program *program, int32_t *count);
/* Name, role, elem, rank, dims (negative: dynamic) and bound of a buffer;
 * valid for the program's lifetime. */
LOOMRT_API loomrt_status loomrt_program_buffer(const loomrt_program *program,
                                               int32_t index,
                                               const LoomBufferDesc **buffer);
LOOMRT_API loomrt_status loomrt_program_find_buffer(
    const loomrt_program *program, const char *name, int32_t *index);
/* Bytes of a buffer at its largest (dynamic dims at their bound). */
LOOMRT_API loomrt_status loomrt_program_buffer_bytes(
    const loomrt_program *program, int32_t index, size_t *bytes);
/* Bytes of the workspace arena; the runtime allocates it. */
LOOMRT_API loomrt_status
loomrt_program_workspace_bytes(const loomrt_program *program, int64_t *bytes);

/* Binds device memory to a buffer for the following launches. `dims` has
 * `rank` entries: the actual dimensions (a dynamic one at most its bound).
 * dims == NULL binds a fully static buffer at its declared dims (rank is then
 * ignored). Launches copy the bindings, so rebinding affects later launches
 * only. */
LOOMRT_API loomrt_status loomrt_program_bind(loomrt_program *program,
                                             int32_t index, void *data,
                                             const int64_t *dims, int32_t rank);
LOOMRT_API loomrt_status loomrt_program_bind_by_name(loomrt_program *program,
                                                     const char *name,
                                                     void *data,
                                                     const int64_t *dims,
                                                     int32_t rank);

/* A launch that finishes no task for `ms` milliseconds is stopped and
 * reported. Must be > 0. */
LOOMRT_API loomrt_status loomrt_program_set_watchdog_ms(loomrt_program *program,
                                                        uint32_t ms);
LOOMRT_API loomrt_status
loomrt_program_watchdog_ms(const loomrt_program *program, uint32_t *ms);

/* Queued launches (off by default). Each launch is put in the device's queue
 * behind a gate, and loomrt_launch opens the gate once the whole launch (its
 * timing events included) is queued, the way a launch queued behind earlier
 * work reaches the device. loomrt_program_last_launch_ns then times the
 * device alone; unqueued, its start is recorded before the launch is
 * submitted, so the host's submission time is in it. A queued launch starts
 * a little later: when the device sees the gate open. Takes effect from the
 * next launch; turning it on first waits for a launch in flight (and returns
 * its error, as loomrt_synchronize would). LOOMRT_ERROR_UNSUPPORTED where the
 * backend cannot queue: the host backend (its workers start when loomrt_launch
 * wakes them), a CUDA or HIP driver without stream memory operations
 * (wait-value). */
LOOMRT_API loomrt_status
loomrt_program_set_queued_launch(loomrt_program *program, int32_t queued);
LOOMRT_API loomrt_status
loomrt_program_queued_launch(const loomrt_program *program, int32_t *queued);

/* Starts one epoch of the program; returns when it has started. Once the
 * program has launched on a stream (below), the caller must have
 * synchronized that stream (and any graph's launches): this call first
 * checks them as loomrt_program_check does (and returns a failure of
 * theirs), and the launch is numbered after them. */
LOOMRT_API loomrt_status loomrt_launch(loomrt_program *program);
/* Waits for the launch in flight; success if none. Launches on a stream
 * are not its business: see loomrt_program_check. */
LOOMRT_API loomrt_status loomrt_synchronize(loomrt_program *program);

/* Stream-ordered launches (CUDA). Queues one launch of the program on
 * `stream`, the caller's CUstream or cudaStream_t (NULL: the legacy default
 * stream, not the per-thread one), and returns without waiting: launches
 * queue back to back, behind and ahead of the caller's other work, and can
 * be captured into a CUDA graph and replayed. The kernel numbers each launch
 * itself (kernels/common/DeviceAbi.h), and the bindings are checked here and
 * copied into the launch: rebinding affects later launches only (and a
 * graph keeps the bindings it captured). No host watchdog watches these
 * launches; a wait that lasts twice the program's watchdog timeout gives up
 * on the device and fails the launch, and every later launch of the program
 * then does nothing until loomrt_program_check reports the failure.
 * The first launch on a stream of a program that has made loomrt_launch
 * launches waits for the one in flight (returning its error) and stores
 * their count in device memory, a synchronous copy: it must not be
 * captured (LOOMRT_ERROR_INVALID_ARGUMENT while `stream` is being
 * captured). From then on the device keeps the count, for the program's
 * own launches too, so a graph may be replayed at any time. The program
 * must outlive its queued launches and any graph that holds them.
 * LOOMRT_ERROR_UNSUPPORTED on the
 * host and HIP backends, and for a CUDA artifact whose kernel does not take
 * its bindings by value (built before device ABI 4, or with a binding table
 * too large for a kernel's parameters); the message says which. */
LOOMRT_API loomrt_status loomrt_launch_on_stream(loomrt_program *program,
                                                 void *stream);
/* After the caller has synchronized the stream (or the graph's launches):
 * whether the launches on a stream since the last check succeeded (it reads
 * the device, so it sees a graph's replays too). A
 * failure is returned as loomrt_synchronize returns a launch's (the failed
 * task, worker, event; LOOMRT_ERROR_TASK_FAILED, LOOMRT_ERROR_TIMEOUT),
 * naming the device, and the program's counters are then reset: its next
 * launch is launch 1, so it can launch again. LOOMRT_ERROR_NOT_READY when
 * launches are still running (the stream was not synchronized; ask again
 * later). Success when the program never launched on a stream.
 * loomrt_program_epoch then counts every completed launch. */
LOOMRT_API loomrt_status loomrt_program_check(loomrt_program *program);

/* Wall time of the last completed launch, start to last worker done
 * (loomrt_launch's launches: those on a stream are not timed). */
LOOMRT_API loomrt_status
loomrt_program_last_launch_ns(const loomrt_program *program, uint64_t *ns);
/* Number of launches started so far (the epoch of the latest); launches on
 * a stream count from the loomrt_program_check that saw them complete. */
LOOMRT_API loomrt_status loomrt_program_epoch(const loomrt_program *program,
                                              uint64_t *epoch);
/* Current arrival count of an event (grows by event_needs per launch). */
LOOMRT_API loomrt_status loomrt_program_event_count(
    const loomrt_program *program, int32_t event, uint64_t *count);

/*--- Per-task timing -------------------------------------------------------*/

/* Where one task's time went in a launch, in ns from the launch's origin:
 * the moment the first worker entered it (so every backend's records line
 * up the same way). For a task: `pick_ns` when its worker took it, `start_ns`
 * when its inputs were ready (start - pick is time spent waiting on events),
 * `end_ns` when its body had ended (read before its output events are
 * triggered, so a task they release starts at or after it).
 * For a worker: pick_ns = start_ns = when it entered the launch, end_ns when
 * it left. `worker` runs it (for a worker record: itself). */
typedef struct loomrt_task_timing {
  uint64_t pick_ns;
  uint64_t start_ns;
  uint64_t end_ns;
  int32_t worker;
  int32_t reserved; /* 0 */
} loomrt_task_timing;

/* *profiled = 1 when every launch of the program records per-task timing:
 * always on the host backend (steady_clock, three reads per task); on a GPU
 * for an artifact built with `loomc --profile` (LOOM_DEVICE_PROFILED), whose
 * kernel reads the GPU's global timer (CUDA: %globaltimer). Else 0. */
LOOMRT_API loomrt_status loomrt_program_profiled(const loomrt_program *program,
                                                 int *profiled);
/* The per-task timing of the last completed launch: `tasks` gets num_tasks
 * records (index = task id), `workers` num_workers records (either may be
 * NULL with its count 0; a non-zero count must equal the program's).
 * Fails with LOOMRT_ERROR_INVALID_ARGUMENT for a program that records none
 * (see loomrt_program_profiled), LOOMRT_ERROR_NOT_READY before the first
 * completed launch or while a launch is in flight, and
 * LOOMRT_ERROR_PROGRAM_FAILED after a failed launch. Records that are not
 * the last launch's, or out of order (start before pick, end before start),
 * fail with LOOMRT_ERROR_INTERNAL naming the task. */
LOOMRT_API loomrt_status loomrt_program_profile(const loomrt_program *program,
                                                loomrt_task_timing *tasks,
                                                int32_t num_tasks,
                                                loomrt_task_timing *workers,
                                                int32_t num_workers);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_RUNTIME_LOOMRT_H */
