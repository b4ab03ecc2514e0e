//===- Api.cpp - The extern "C" entry points ------------------------------===//
//
// Thin: check handles and pointers, call the core, turn the Status into a
// code plus this thread's last-error message. No exception crosses the C
// boundary.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Backend.h"
#include "runtime/src/Binding.h"
#include "runtime/src/Program.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_set>

using namespace loom::rt;

struct loomrt_device {
  std::unique_ptr<Device> impl;
  // loomrt_device_describe's answer, kept so the pointer stays valid.
  std::string description;
  // Programs refer to their device; it must not go away under them.
  std::atomic<int> livePrograms{0};
};

struct loomrt_program {
  std::unique_ptr<Program> impl;
  loomrt_device *device = nullptr;
};

namespace {

/// Runs `body(function)` (returning a Status) and publishes its result;
/// `function` names the entry point in argument errors. Exceptions
/// (allocation failures, library errors) become statuses.
template <typename Body>
loomrt_status guarded(const char *function, Body &&body) {
  try {
    return publish(body(function));
  } catch (const std::bad_alloc &) {
    return publish(Status(LOOMRT_ERROR_OUT_OF_MEMORY, "out of host memory"));
  } catch (const std::exception &e) {
    return publish(
        makeError(LOOMRT_ERROR_INTERNAL, "internal error: ", e.what()));
  } catch (...) {
    return publish(Status(LOOMRT_ERROR_INTERNAL, "internal error"));
  }
}

Status nullArgument(const char *function, const char *argument) {
  return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, function, ": ", argument,
                   " is null");
}

#define LOOMRT_REQUIRE(ptr)                                                    \
  do {                                                                         \
    if (!(ptr))                                                                \
      return nullArgument(fn, #ptr);                                           \
  } while (false)

/// The handles of one type that are alive: created and not yet destroyed.
/// A call with any other pointer (destroyed twice, used after destroy, or
/// never made here) is refused before the pointer is read.
template <typename Handle> class LiveHandles {
public:
  void add(const Handle *h) {
    std::lock_guard<std::shared_mutex> lock(mu_);
    live_.insert(h);
  }
  bool remove(const Handle *h) {
    std::lock_guard<std::shared_mutex> lock(mu_);
    return live_.erase(h) != 0;
  }
  // Every entry point looks a handle up; only create and destroy write.
  bool contains(const Handle *h) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return live_.count(h) != 0;
  }

private:
  mutable std::shared_mutex mu_;
  std::unordered_set<const Handle *> live_;
};

// Never destroyed: handles may be checked from other static destructors.
LiveHandles<loomrt_device> &liveDevices() {
  static auto *live = new LiveHandles<loomrt_device>;
  return *live;
}
LiveHandles<loomrt_program> &livePrograms() {
  static auto *live = new LiveHandles<loomrt_program>;
  return *live;
}
bool isLive(const loomrt_device *d) { return liveDevices().contains(d); }
bool isLive(const loomrt_program *p) { return livePrograms().contains(p); }
const char *handleType(const loomrt_device *) { return "loomrt_device"; }
const char *handleType(const loomrt_program *) { return "loomrt_program"; }

Status deadHandle(const char *function, const char *argument,
                  const void *handle, const char *type) {
  return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, function, ": ", argument,
                   " (", handle, ") is not a live ", type,
                   " (destroyed already, or not made by this loomrt)");
}

/// A non-null handle that is alive.
#define LOOMRT_REQUIRE_LIVE(handle)                                            \
  do {                                                                         \
    LOOMRT_REQUIRE(handle);                                                    \
    if (!isLive(handle))                                                       \
      return deadHandle(fn, #handle, handle, handleType(handle));              \
  } while (false)

/// `bytes` from `ptr` stay inside the allocation that holds `ptr`, when the
/// device made it (other memory cannot be checked here). `what`: "to",
/// "from" or "at".
Status checkExtent(const loomrt_device *device, const char *function,
                   const char *what, const void *ptr, size_t bytes) {
  uintptr_t base = 0;
  size_t size = 0;
  if (!device->impl->findAllocation(ptr, &base, &size))
    return Status();
  const size_t offset = reinterpret_cast<uintptr_t>(ptr) - base;
  if (bytes <= size - offset)
    return Status();
  return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, function, ": ", bytes,
                   " bytes ", what, " ", ptr,
                   " run past the end of its allocation (", size,
                   " bytes from ", reinterpret_cast<const void *>(base),
                   ") on ", device->description);
}

Status adoptProgram(loomrt_device *device, std::unique_ptr<Program> impl,
                    loomrt_program **out) {
  auto *program = new loomrt_program;
  program->impl = std::move(impl);
  program->device = device;
  device->livePrograms.fetch_add(1);
  livePrograms().add(program);
  *out = program;
  return Status();
}

} // namespace

extern "C" {

const char *loomrt_version(void) {
#define LOOMRT_STR2(x) #x
#define LOOMRT_STR(x) LOOMRT_STR2(x)
  return LOOMRT_STR(LOOMRT_VERSION_MAJOR) "." LOOMRT_STR(LOOMRT_VERSION_MINOR);
#undef LOOMRT_STR
#undef LOOMRT_STR2
}

uint32_t loomrt_program_abi_version(void) { return LOOM_PROGRAM_ABI_VERSION; }

const char *loomrt_status_name(loomrt_status status) {
  return statusName(status);
}

const char *loomrt_last_error(void) { return lastError(); }

size_t loomrt_elem_bytes(int32_t elem) {
  switch (elem) {
  case LOOM_ELEM_BF16:
  case LOOM_ELEM_F16:
    return 2;
  case LOOM_ELEM_F32:
  case LOOM_ELEM_I32:
    return 4;
  case LOOM_ELEM_I64:
    return 8;
  }
  return 0;
}

loomrt_status loomrt_device_count(const char *kind, int *count) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE(count);
    return countDevices(kind, count);
  });
}

loomrt_status loomrt_device_create(const char *kind, int ordinal,
                                   loomrt_device **device) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE(device);
    *device = nullptr;
    std::unique_ptr<Device> impl;
    if (Status s = createDevice(kind, ordinal, &impl); !s.ok())
      return s;
    auto *handle = new loomrt_device;
    handle->impl = std::move(impl);
    handle->description = handle->impl->describe();
    liveDevices().add(handle);
    *device = handle;
    return Status();
  });
}

loomrt_status loomrt_device_destroy(loomrt_device *device) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    if (int live = device->livePrograms.load())
      return makeError(LOOMRT_ERROR_BUSY, "cannot destroy ",
                       device->impl->kind(), " device ",
                       device->impl->ordinal(), ": ", live,
                       " program(s) still loaded on it");
    // Only one of two racing destroys gets past this.
    if (!liveDevices().remove(device))
      return deadHandle(fn, "device", device, "loomrt_device");
    delete device;
    return Status();
  });
}

const char *loomrt_device_kind(const loomrt_device *device) {
  return device && isLive(device) ? device->impl->kind() : "";
}

const char *loomrt_device_describe(const loomrt_device *device) {
  return device && isLive(device) ? device->description.c_str() : "";
}

loomrt_status loomrt_malloc(loomrt_device *device, size_t bytes, void **ptr) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    LOOMRT_REQUIRE(ptr);
    *ptr = nullptr;
    if (bytes == 0)
      return makeError(LOOMRT_ERROR_INVALID_ARGUMENT,
                       "loomrt_malloc: cannot allocate 0 bytes");
    return device->impl->allocate(bytes, ptr);
  });
}

loomrt_status loomrt_free(loomrt_device *device, void *ptr) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    if (!ptr)
      return Status(); // like free(NULL)
    return device->impl->release(ptr);
  });
}

loomrt_status loomrt_memcpy(loomrt_device *device, void *dst, const void *src,
                            size_t bytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    if (bytes == 0)
      return Status();
    LOOMRT_REQUIRE(dst);
    LOOMRT_REQUIRE(src);
    if (Status s = checkExtent(device, fn, "to", dst, bytes); !s.ok())
      return s;
    if (Status s = checkExtent(device, fn, "from", src, bytes); !s.ok())
      return s;
    return device->impl->copy(dst, src, bytes);
  });
}

loomrt_status loomrt_memcpy_kind(loomrt_device *device, void *dst,
                                 const void *src, size_t bytes,
                                 loomrt_copy_kind kind) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    if (kind < LOOMRT_COPY_DEFAULT || kind > LOOMRT_COPY_HOST_TO_HOST)
      return makeError(LOOMRT_ERROR_INVALID_ARGUMENT,
                       "loomrt_memcpy_kind: kind ", static_cast<int>(kind),
                       " is not a loomrt_copy_kind (0 to 4)");
    if (bytes == 0)
      return Status();
    LOOMRT_REQUIRE(dst);
    LOOMRT_REQUIRE(src);
    if (Status s = checkExtent(device, fn, "to", dst, bytes); !s.ok())
      return s;
    if (Status s = checkExtent(device, fn, "from", src, bytes); !s.ok())
      return s;
    return device->impl->copyKind(dst, src, bytes, kind);
  });
}

loomrt_status loomrt_memset(loomrt_device *device, void *dst, int value,
                            size_t bytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(device);
    if (bytes == 0)
      return Status();
    LOOMRT_REQUIRE(dst);
    if (Status s = checkExtent(device, fn, "at", dst, bytes); !s.ok())
      return s;
    return device->impl->fill(dst, value, bytes);
  });
}

loomrt_status loomrt_program_load(loomrt_device *device, const char *path,
                                  uint32_t flags, loomrt_program **program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE(program);
    *program = nullptr;
    LOOMRT_REQUIRE_LIVE(device);
    LOOMRT_REQUIRE(path);
    std::unique_ptr<Program> impl;
    if (Status s = device->impl->loadProgram(path, flags, &impl); !s.ok())
      return s;
    return adoptProgram(device, std::move(impl), program);
  });
}

loomrt_status loomrt_program_from_desc(loomrt_device *device,
                                       const LoomProgramDesc *desc,
                                       uint32_t flags,
                                       loomrt_program **program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE(program);
    *program = nullptr;
    LOOMRT_REQUIRE_LIVE(device);
    LOOMRT_REQUIRE(desc);
    std::unique_ptr<Program> impl;
    if (Status s = device->impl->programFromDesc(*desc, flags, &impl); !s.ok())
      return s;
    return adoptProgram(device, std::move(impl), program);
  });
}

loomrt_status loomrt_program_destroy(loomrt_program *program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    // Only one of two racing destroys gets past this.
    if (!livePrograms().remove(program))
      return deadHandle(fn, "program", program, "loomrt_program");
    loomrt_device *device = program->device;
    delete program;
    device->livePrograms.fetch_sub(1);
    return Status();
  });
}

loomrt_status loomrt_program_desc(const loomrt_program *program,
                                  const LoomProgramDesc **desc) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(desc);
    *desc = &program->impl->table().desc();
    return Status();
  });
}

loomrt_status loomrt_program_num_buffers(const loomrt_program *program,
                                         int32_t *count) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(count);
    *count = program->impl->table().numBuffers();
    return Status();
  });
}

loomrt_status loomrt_program_buffer(const loomrt_program *program,
                                    int32_t index,
                                    const LoomBufferDesc **buffer) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(buffer);
    if (Status s = program->impl->checkBufferIndex(index); !s.ok())
      return s;
    *buffer = &program->impl->table().buffer(index);
    return Status();
  });
}

loomrt_status loomrt_program_find_buffer(const loomrt_program *program,
                                         const char *name, int32_t *index) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(index);
    return program->impl->findBuffer(name, index);
  });
}

loomrt_status loomrt_program_buffer_bytes(const loomrt_program *program,
                                          int32_t index, size_t *bytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(bytes);
    if (Status s = program->impl->checkBufferIndex(index); !s.ok())
      return s;
    return boundBytes(program->impl->table(), index, bytes);
  });
}

loomrt_status loomrt_program_workspace_bytes(const loomrt_program *program,
                                             int64_t *bytes) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(bytes);
    *bytes = program->impl->table().desc().workspace_bytes;
    return Status();
  });
}

loomrt_status loomrt_program_bind(loomrt_program *program, int32_t index,
                                  void *data, const int64_t *dims,
                                  int32_t rank) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->bind(index, data, dims, rank);
  });
}

loomrt_status loomrt_program_bind_by_name(loomrt_program *program,
                                          const char *name, void *data,
                                          const int64_t *dims, int32_t rank) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->bindByName(name, data, dims, rank);
  });
}

loomrt_status loomrt_program_set_watchdog_ms(loomrt_program *program,
                                             uint32_t ms) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->setWatchdogMs(ms);
  });
}

loomrt_status loomrt_program_watchdog_ms(const loomrt_program *program,
                                         uint32_t *ms) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(ms);
    *ms = program->impl->watchdogMs();
    return Status();
  });
}

loomrt_status loomrt_program_set_queued_launch(loomrt_program *program,
                                               int32_t queued) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->setQueuedLaunch(queued != 0);
  });
}

loomrt_status loomrt_program_queued_launch(const loomrt_program *program,
                                           int32_t *queued) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(queued);
    *queued = program->impl->queuedLaunch() ? 1 : 0;
    return Status();
  });
}

loomrt_status loomrt_launch(loomrt_program *program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->launch();
  });
}

loomrt_status loomrt_synchronize(loomrt_program *program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->synchronize();
  });
}

loomrt_status loomrt_launch_on_stream(loomrt_program *program, void *stream) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->launchOnStream(stream);
  });
}

loomrt_status loomrt_program_check(loomrt_program *program) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->check();
  });
}

loomrt_status loomrt_program_last_launch_ns(const loomrt_program *program,
                                            uint64_t *ns) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(ns);
    return program->impl->lastLaunchNs(ns);
  });
}

loomrt_status loomrt_program_epoch(const loomrt_program *program,
                                   uint64_t *epoch) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(epoch);
    *epoch = program->impl->epoch();
    return Status();
  });
}

loomrt_status loomrt_program_event_count(const loomrt_program *program,
                                         int32_t event, uint64_t *count) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(count);
    return program->impl->eventCount(event, count);
  });
}

loomrt_status loomrt_program_profiled(const loomrt_program *program,
                                      int *profiled) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    LOOMRT_REQUIRE(profiled);
    *profiled = program->impl->profiled() ? 1 : 0;
    return Status();
  });
}

loomrt_status loomrt_program_profile(const loomrt_program *program,
                                     loomrt_task_timing *tasks,
                                     int32_t num_tasks,
                                     loomrt_task_timing *workers,
                                     int32_t num_workers) {
  return guarded(__func__, [&]([[maybe_unused]] const char *fn) {
    LOOMRT_REQUIRE_LIVE(program);
    return program->impl->profile(tasks, num_tasks, workers, num_workers);
  });
}

} // extern "C"
