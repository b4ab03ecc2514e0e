//===- loomrt.hpp - C++ wrapper over the Loom runtime C API -----*- C++ -*-===//
//
// RAII handles that throw loomrt::Error (status + message) instead of
// returning codes. Header-only and thin on purpose: the C API is the stable
// boundary, this is convenience.
//
//   loomrt::Device device("host");
//   loomrt::Program program = device.load("mla.host.so");
//   loomrt::Memory q = device.alloc(program.bufferBytes("q_nope"));
//   program.bind("q_nope", q.get(), {batch, 16, 512});
//   program.run();                       // launch + synchronize
//
// Destroy programs before their device (declare the device first).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_LOOMRT_HPP
#define LOOM_RUNTIME_LOOMRT_HPP

#include "loom/loomrt.h"

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace loomrt {

class Error : public std::runtime_error {
public:
  Error(loomrt_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  loomrt_status status() const { return status_; }

private:
  loomrt_status status_;
};

/// Throws the last error if `status` is a failure.
inline void check(loomrt_status status) {
  if (status != LOOMRT_SUCCESS)
    throw Error(status, loomrt_last_error());
}

/// Device memory, freed when it goes out of scope.
class Memory {
public:
  Memory() = default;
  Memory(loomrt_device *device, void *ptr) : device_(device), ptr_(ptr) {}
  Memory(Memory &&other) noexcept
      : device_(other.device_), ptr_(std::exchange(other.ptr_, nullptr)) {}
  Memory &operator=(Memory &&other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      ptr_ = std::exchange(other.ptr_, nullptr);
    }
    return *this;
  }
  ~Memory() { reset(); }

  void *get() const { return ptr_; }
  template <typename T> T *as() const { return static_cast<T *>(ptr_); }
  void reset() {
    if (ptr_)
      (void)loomrt_free(device_, ptr_);
    ptr_ = nullptr;
  }

private:
  loomrt_device *device_ = nullptr;
  void *ptr_ = nullptr;
};

class Program {
public:
  Program() = default;
  explicit Program(loomrt_program *handle) : handle_(handle) {}
  Program(Program &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  Program &operator=(Program &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Program() { reset(); }

  loomrt_program *get() const { return handle_; }
  void reset() {
    if (handle_)
      (void)loomrt_program_destroy(handle_);
    handle_ = nullptr;
  }

  const LoomProgramDesc &desc() const {
    const LoomProgramDesc *desc = nullptr;
    check(loomrt_program_desc(handle_, &desc));
    return *desc;
  }
  int32_t numBuffers() const {
    int32_t count = 0;
    check(loomrt_program_num_buffers(handle_, &count));
    return count;
  }
  const LoomBufferDesc &buffer(int32_t index) const {
    const LoomBufferDesc *buffer = nullptr;
    check(loomrt_program_buffer(handle_, index, &buffer));
    return *buffer;
  }
  int32_t findBuffer(const std::string &name) const {
    int32_t index = -1;
    check(loomrt_program_find_buffer(handle_, name.c_str(), &index));
    return index;
  }
  size_t bufferBytes(int32_t index) const {
    size_t bytes = 0;
    check(loomrt_program_buffer_bytes(handle_, index, &bytes));
    return bytes;
  }
  size_t bufferBytes(const std::string &name) const {
    return bufferBytes(findBuffer(name));
  }
  int64_t workspaceBytes() const {
    int64_t bytes = 0;
    check(loomrt_program_workspace_bytes(handle_, &bytes));
    return bytes;
  }

  /// Binds at the given dims.
  void bind(const std::string &name, void *data,
            const std::vector<int64_t> &dims) {
    check(loomrt_program_bind_by_name(handle_, name.c_str(), data, dims.data(),
                                      static_cast<int32_t>(dims.size())));
  }
  void bind(const std::string &name, void *data,
            std::initializer_list<int64_t> dims) {
    bind(name, data, std::vector<int64_t>(dims));
  }
  /// Binds a fully static buffer at its declared dims.
  void bind(const std::string &name, void *data) {
    check(loomrt_program_bind_by_name(handle_, name.c_str(), data, nullptr, 0));
  }
  void bind(int32_t index, void *data, const std::vector<int64_t> &dims) {
    check(loomrt_program_bind(handle_, index, data, dims.data(),
                              static_cast<int32_t>(dims.size())));
  }
  void bind(int32_t index, void *data) {
    check(loomrt_program_bind(handle_, index, data, nullptr, 0));
  }

  void setWatchdogMs(uint32_t ms) {
    check(loomrt_program_set_watchdog_ms(handle_, ms));
  }
  uint32_t watchdogMs() const {
    uint32_t ms = 0;
    check(loomrt_program_watchdog_ms(handle_, &ms));
    return ms;
  }
  /// loomrt_program_set_queued_launch: time the device alone.
  void setQueuedLaunch(bool queued) {
    check(loomrt_program_set_queued_launch(handle_, queued ? 1 : 0));
  }
  bool queuedLaunch() const {
    int32_t queued = 0;
    check(loomrt_program_queued_launch(handle_, &queued));
    return queued != 0;
  }

  void launch() { check(loomrt_launch(handle_)); }
  void synchronize() { check(loomrt_synchronize(handle_)); }
  /// loomrt_launch_on_stream: queued on the caller's CUstream /
  /// cudaStream_t (nullptr: the legacy default stream), not waited for.
  void launchOnStream(void *stream) {
    check(loomrt_launch_on_stream(handle_, stream));
  }
  /// loomrt_program_check: after synchronizing the stream, throws the
  /// failure of a launch on it, if one failed.
  void checkLaunches() { check(loomrt_program_check(handle_)); }
  /// One launch, waited for.
  void run() {
    launch();
    synchronize();
  }

  uint64_t lastLaunchNs() const {
    uint64_t ns = 0;
    check(loomrt_program_last_launch_ns(handle_, &ns));
    return ns;
  }
  uint64_t epoch() const {
    uint64_t epoch = 0;
    check(loomrt_program_epoch(handle_, &epoch));
    return epoch;
  }
  uint64_t eventCount(int32_t event) const {
    uint64_t count = 0;
    check(loomrt_program_event_count(handle_, event, &count));
    return count;
  }

  /// Whether launches record per-task timing (loomrt_program_profiled).
  bool profiled() const {
    int yes = 0;
    check(loomrt_program_profiled(handle_, &yes));
    return yes != 0;
  }
  /// The last completed launch's per-task timing: num_tasks task records
  /// into `tasks`, num_workers worker records into `workers`.
  void profile(std::vector<loomrt_task_timing> *tasks,
               std::vector<loomrt_task_timing> *workers) const {
    const LoomProgramDesc &d = desc();
    tasks->assign(static_cast<size_t>(d.num_tasks), loomrt_task_timing{});
    workers->assign(static_cast<size_t>(d.num_workers), loomrt_task_timing{});
    check(loomrt_program_profile(handle_, tasks->data(), d.num_tasks,
                                 workers->data(), d.num_workers));
  }

private:
  loomrt_program *handle_ = nullptr;
};

class Device {
public:
  explicit Device(const char *kind = "host", int ordinal = 0) {
    check(loomrt_device_create(kind, ordinal, &handle_));
  }
  Device(Device &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  Device &operator=(Device &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  /// Fails silently (the device leaks) if programs are still loaded.
  ~Device() { reset(); }

  loomrt_device *get() const { return handle_; }
  const char *kind() const { return loomrt_device_kind(handle_); }
  /// "cuda device 0 (NVIDIA H200, compute capability 9.0, 132 SMs)".
  const char *describe() const { return loomrt_device_describe(handle_); }
  void reset() {
    if (handle_)
      (void)loomrt_device_destroy(handle_);
    handle_ = nullptr;
  }

  Memory alloc(size_t bytes) {
    void *ptr = nullptr;
    check(loomrt_malloc(handle_, bytes, &ptr));
    return Memory(handle_, ptr);
  }
  void copy(void *dst, const void *src, size_t bytes) {
    check(loomrt_memcpy(handle_, dst, src, bytes));
  }
  void copy(void *dst, const void *src, size_t bytes, loomrt_copy_kind kind) {
    check(loomrt_memcpy_kind(handle_, dst, src, bytes, kind));
  }
  void fill(void *dst, int value, size_t bytes) {
    check(loomrt_memset(handle_, dst, value, bytes));
  }

  Program load(const std::string &path,
               uint32_t flags = LOOMRT_PROGRAM_DEFAULT) {
    loomrt_program *program = nullptr;
    check(loomrt_program_load(handle_, path.c_str(), flags, &program));
    return Program(program);
  }
  Program fromDesc(const LoomProgramDesc &desc,
                   uint32_t flags = LOOMRT_PROGRAM_DEFAULT) {
    loomrt_program *program = nullptr;
    check(loomrt_program_from_desc(handle_, &desc, flags, &program));
    return Program(program);
  }

private:
  loomrt_device *handle_ = nullptr;
};

} // namespace loomrt

#endif // LOOM_RUNTIME_LOOMRT_HPP
