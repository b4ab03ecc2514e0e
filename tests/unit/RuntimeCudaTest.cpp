//===- RuntimeCudaTest.cpp - The runtime's CUDA backend -------------------===//
//
// Three layers, so most of the backend is tested on machines without a GPU:
//
//  * Pure decisions (CudaChecks, DeviceWatchdog): arch against compute
//    capability, block shape and co-residency, the device-side timeout, the
//    watchdog's reading of LoomWorkerStatus records and its reports.
//  * The whole backend through the C API on a fake driver
//    (RuntimeCudaFakeDriver.cpp, loaded through LOOM_CUDA_DRIVER): symbol
//    loading, devices, memory, artifact checks, launches and their failures
//    (deadlock, failed task, fault, a kernel that ignores the abort flag).
//  * CudaGpu.*: the real driver and a real GPU (ctest label `gpu`). They skip,
//    saying why, without a driver, a device, or LOOM_CUDA_TEST_ARTIFACT.
//
// Without a driver, creating a cuda device must fail by naming libcuda.so.1;
// that is checked here too, and holds on any machine.
//
//===----------------------------------------------------------------------===//
#include "loom/loomrt.h"
#include "loom/loomrt.hpp"
#include "kernels/common/ArrivalCounters.h"
#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/DeviceWatchdog.h"
#include "runtime/src/ProgramTable.h"
#include "tests/unit/RuntimeCudaFake.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace loom::rt;
using namespace loom::rt::cuda;
using Clock = std::chrono::steady_clock;

#define EXPECT_ERROR(call, code, message)                                      \
  do {                                                                         \
    EXPECT_EQ((call), (code)) << loomrt_last_error();                          \
    EXPECT_EQ(std::string(loomrt_last_error()), std::string(message));         \
  } while (false)

#define EXPECT_ERROR_HAS(call, code, part)                                     \
  do {                                                                         \
    EXPECT_EQ((call), (code)) << loomrt_last_error();                          \
    EXPECT_NE(std::string(loomrt_last_error()).find(part), std::string::npos)  \
        << "message: " << loomrt_last_error() << "\nwanted: " << (part);       \
  } while (false)

/// A test library: where the build put it, else beside this executable (the
/// tests are copied to a GPU machine as a directory).
std::string testFile(const char *built) {
  if (::access(built, R_OK) == 0)
    return built;
  char self[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : ".";
  dir = dir.substr(0, dir.rfind('/'));
  std::string name = built;
  return dir + "/" + name.substr(name.rfind('/') + 1);
}

/// Sets (or, with null, unsets) an environment variable for a scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() {
    had_ ? ::setenv(name_.c_str(), old_.c_str(), 1) : ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  std::string name_, old_;
  bool had_ = false;
};

CudaDeviceInfo deviceInfo(int major, int minor, int sms = 132) {
  CudaDeviceInfo info;
  info.ordinal = 0;
  info.name = major == 9 ? "NVIDIA H200" : "NVIDIA B200";
  info.ccMajor = major;
  info.ccMinor = minor;
  info.smCount = sms;
  info.cooperativeLaunch = true;
  info.maxThreadsPerBlock = 1024;
  info.maxSmemPerBlockOptin = 232448;
  info.clockKHz = 1980000;
  return info;
}

std::string message(const Status &s) { return s.message(); }

//===----------------------------------------------------------------------===//
// Architecture, block shape, co-residency
//===----------------------------------------------------------------------===//

TEST(CudaChecks, ArchMustRunOnTheDevice) {
  const CudaDeviceInfo h200 = deviceInfo(9, 0), b200 = deviceInfo(10, 0);
  EXPECT_TRUE(checkArch("a.so", "sm_90a", CodeKind::Cubin, h200).ok());
  EXPECT_TRUE(checkArch("a.so", "sm_90", CodeKind::Cubin, h200).ok());
  EXPECT_TRUE(checkArch("a.so", "sm_100a", CodeKind::Cubin, b200).ok());
  EXPECT_TRUE(
      checkArch("a.so", "sm_100f", CodeKind::Cubin, deviceInfo(10, 3)).ok());
  EXPECT_TRUE(checkArch("a.so", "sm_80", CodeKind::Ptx, h200).ok());

  Status s = checkArch("mla.so", "sm_100a", CodeKind::Cubin, h200);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  EXPECT_EQ(message(s),
            "cannot run 'mla.so' on cuda device 0 (NVIDIA H200, compute "
            "capability 9.0, 132 SMs): it is built for sm_100a, which runs "
            "only on compute capability 10.0; the device is sm_90 (rebuild "
            "the artifact for it)");
  EXPECT_EQ(message(checkArch("mla.so", "sm_90a", CodeKind::Cubin, b200)),
            "cannot run 'mla.so' on cuda device 0 (NVIDIA B200, compute "
            "capability 10.0, 132 SMs): it is built for sm_90a, which runs "
            "only on compute capability 9.0; the device is sm_100 (rebuild "
            "the artifact for it)");
  // SASS does not cross major versions; PTX does, unless arch-specific.
  EXPECT_FALSE(checkArch("a.so", "sm_80", CodeKind::Cubin, h200).ok());
  EXPECT_FALSE(checkArch("a.so", "sm_90a", CodeKind::Ptx, b200).ok());
  EXPECT_FALSE(checkArch("a.so", "sm_103a", CodeKind::Cubin, b200).ok());
  EXPECT_EQ(message(checkArch("a.so", "sm_100f", CodeKind::Cubin, h200)),
            "cannot run 'a.so' on cuda device 0 (NVIDIA H200, compute "
            "capability 9.0, 132 SMs): it is built for sm_100f, which runs "
            "on compute capability 10.x, x >= 0; the device is sm_90 "
            "(rebuild the artifact for it)");

  EXPECT_EQ(message(checkArch("a.so", "gfx950", CodeKind::Unknown, h200)),
            "cannot run 'a.so' on cuda device 0 (NVIDIA H200, compute "
            "capability 9.0, 132 SMs): it is built for 'gfx950', not a CUDA "
            "architecture (sm_XY, sm_XYa, sm_XYf)");
  for (const char *bad : {"sm_9", "sm_90x", "sm_90aa", "compute_90", "sm_"})
    EXPECT_FALSE(checkArch("a.so", bad, CodeKind::Cubin, h200).ok()) << bad;
  EXPECT_FALSE(checkArch("a.so", nullptr, CodeKind::Cubin, h200).ok());
}

TEST(CudaChecks, CodeKinds) {
  const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2};
  const unsigned char fatbin[] = {0x50, 0xED, 0x55, 0xBA, 1};
  const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.8";
  EXPECT_EQ(classifyCode(elf, sizeof(elf)), CodeKind::Cubin);
  EXPECT_EQ(classifyCode(fatbin, sizeof(fatbin)), CodeKind::Fatbin);
  EXPECT_EQ(classifyCode(ptx, sizeof(ptx)), CodeKind::Ptx);
  EXPECT_EQ(classifyCode("MZ\x90\x00", 4), CodeKind::Unknown);
  EXPECT_EQ(classifyCode(elf, 2), CodeKind::Unknown);
  EXPECT_EQ(classifyCode(nullptr, 0), CodeKind::Unknown);
}

TEST(CudaChecks, BlockShape) {
  const CudaDeviceInfo h200 = deviceInfo(9, 0);
  EXPECT_TRUE(checkBlockShape("p", {132, 1024, 232448}, h200).ok());
  Status s = checkBlockShape("p", {132, 2048, 0}, h200);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_EQ(message(s), "program 'p' wants 2048 threads per worker block; cuda "
                        "device 0 (NVIDIA H200, compute capability 9.0, 132 "
                        "SMs) allows 1 to 1024");
  EXPECT_EQ(message(checkBlockShape("p", {132, 256, 232449}, h200)),
            "program 'p' wants 232449 bytes of dynamic shared memory per "
            "worker block; cuda device 0 (NVIDIA H200, compute capability "
            "9.0, 132 SMs) allows at most 232448");
}

TEST(CudaChecks, AllWorkersMustBeResident) {
  const CudaDeviceInfo h200 = deviceInfo(9, 0);
  EXPECT_TRUE(checkCoResidency("mla", {132, 256, 200000}, 1, 96, h200).ok());
  EXPECT_TRUE(checkCoResidency("mla", {264, 256, 0}, 2, -1, h200).ok());
  Status s = checkCoResidency("mla", {133, 256, 200000}, 1, 96, h200);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_EQ(message(s),
            "program 'mla' needs 133 co-resident worker blocks (256 threads "
            "and 200000 bytes of dynamic shared memory each (96 registers "
            "per thread)), but cuda device 0 (NVIDIA H200, compute capability "
            "9.0, 132 SMs) holds only 1 per SM x 132 SMs = 132 at once; a "
            "persistent kernel with blocks waiting to start deadlocks, so it "
            "is not launched (schedule it for at most 132 workers, or use "
            "fewer threads or less shared memory)");
  // A block that does not fit at all.
  EXPECT_NE(message(checkCoResidency("mla", {1, 1024, 0}, 0, -1, h200))
                .find("holds only 0 per SM x 132 SMs = 0 at once"),
            std::string::npos);
}

TEST(CudaChecks, DeviceTimeoutIsTwiceTheWatchdog) {
  EXPECT_EQ(deviceTimeoutCycles(10000, 1980000), 2ull * 10000 * 1980000);
  EXPECT_EQ(deviceTimeoutCycles(100, 1000000), 200000000ull);
  // Unknown clock: a fast one, so the backstop is late rather than early.
  EXPECT_EQ(deviceTimeoutCycles(1, 0), 2ull * 4000000);
  EXPECT_EQ(deviceTimeoutCycles(UINT32_MAX, INT32_MAX),
            2ull * UINT32_MAX * INT32_MAX);
}

TEST(CudaChecks, BindingsByValueMustFitTheKernelParameters) {
  // LoomKernelArgs and each binding are 72 bytes; a kernel takes at least
  // one binding.
  EXPECT_EQ(sizeof(LoomKernelArgs), 72u);
  EXPECT_EQ(sizeof(LoomBinding), 72u);
  EXPECT_EQ(sizeof(LoomBindings<3>), 3 * sizeof(LoomBinding));
  EXPECT_EQ(LOOM_INLINE_BINDINGS_PARAM_BYTES(0), 144u);
  EXPECT_EQ(LOOM_INLINE_BINDINGS_PARAM_BYTES(454), 32760u);
  EXPECT_TRUE(LOOM_INLINE_BINDINGS_FIT(454));
  EXPECT_FALSE(LOOM_INLINE_BINDINGS_FIT(455));
}

TEST(CudaChecks, DeviceAbiVersionsAndFlags) {
  static const char code[4] = {1, 2, 3, 4};
  LoomProgramDesc program{};
  program.abi_version = LOOM_PROGRAM_ABI_VERSION;
  program.num_buffers = 9;
  LoomDeviceProgram d{};
  d.abi_version = LOOM_DEVICE_ABI_VERSION;
  d.program = &program;
  d.arch = "sm_90a";
  d.code_object = code;
  d.code_object_size = sizeof(code);
  d.kernel_name = "k";
  d.threads_per_block = 256;
  d.flags = LOOM_DEVICE_INLINE_BINDINGS | LOOM_DEVICE_PROFILED;
  EXPECT_TRUE(DeviceArtifact::check("cuda", "a.so", d).ok());
  // Version 3 has the same layout, and no kernel that takes its bindings.
  d.abi_version = 3;
  d.flags = 0;
  EXPECT_TRUE(DeviceArtifact::check("cuda", "a.so", d).ok());
  d.flags = LOOM_DEVICE_INLINE_BINDINGS;
  EXPECT_EQ(message(DeviceArtifact::check("cuda", "a.so", d)),
            "cuda program 'a.so': flags say its kernel takes its bindings by "
            "value, which device ABI version 3 has no kernel do (version 4 "
            "does)");
  d.abi_version = 2;
  EXPECT_EQ(message(DeviceArtifact::check("cuda", "a.so", d)),
            "cuda program 'a.so' has device ABI version 2; this runtime reads "
            "versions 3 to 4 (rebuild it)");
  // The emitter gives no kernel parameters it could not take.
  d.abi_version = LOOM_DEVICE_ABI_VERSION;
  program.num_buffers = 455;
  Status s = DeviceArtifact::check("cuda", "a.so", d);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(message(s), "cuda program 'a.so': flags say its kernel takes the "
                        "bindings of its 455 buffers by value, but those are "
                        "32832 bytes of kernel parameters (at most 32764)");
}

//===----------------------------------------------------------------------===//
// The watchdog's view of LoomWorkerStatus
//===----------------------------------------------------------------------===//

int32_t noBody(int32_t, const LoomBinding *, void *) { return 0; }

/// Tasks 0..3 ("t#0[0]".. ), events 0..1, 4 workers, one task each.
std::shared_ptr<const ProgramTable> smallTable(int32_t workers = 4) {
  static const int32_t waitBegin[] = {0, 0, 1, 2, 2};
  static const int32_t waits[] = {0, 1};
  static const int32_t triggerBegin[] = {0, 1, 2, 2, 2};
  static const int32_t triggers[] = {0, 1};
  static const int32_t needs[] = {1, 1};
  static const char *const names[] = {"t#0[0]", "t#1[0]", "t#2[0]", "t#3[0]"};
  static std::vector<int32_t> begin, tasks;
  begin.clear();
  tasks = {0, 1, 2, 3};
  for (int32_t w = 0; w <= workers; ++w)
    begin.push_back(std::min(w, 4));
  begin.back() = 4;
  LoomProgramDesc d{};
  d.abi_version = LOOM_PROGRAM_ABI_VERSION;
  d.name = "small";
  d.target = "sm_90a";
  d.num_workers = workers;
  d.num_tasks = 4;
  d.num_events = 2;
  d.worker_begin = begin.data();
  d.worker_tasks = tasks.data();
  d.task_wait_begin = waitBegin;
  d.wait_events = waits;
  d.task_trigger_begin = triggerBegin;
  d.trigger_events = triggers;
  d.event_needs = needs;
  d.task_names = names;
  d.run_task = noBody;
  std::shared_ptr<const ProgramTable> table;
  Status s = ProgramTable::create(d, "test", 0, &table);
  EXPECT_TRUE(s.ok()) << s.message();
  return table;
}

LoomWorkerStatus record(int32_t task, int32_t event, uint64_t seen = 0,
                        uint64_t needed = 0, int32_t error = 0) {
  return LoomWorkerStatus{task, event, seen, needed, error, 0};
}

TEST(CudaWatchdog, ReportNamesWhatEachWorkerWaitsFor) {
  auto table = smallTable();
  std::vector<LoomWorkerStatus> status = {record(1, 0, 6, 7), record(2, -1),
                                          record(kWorkerDone, -1),
                                          record(kWorkerNotStarted, -1)};
  EXPECT_EQ(describeStall(*table, status, 7, 200),
            "program 'small' launch 7 stopped by the watchdog: no worker's "
            "status and no event count changed for 200 ms\n"
            "  worker 0: task 't#1[0]' (id 1) waits for event 0: count 6, "
            "needs 7\n"
            "  worker 1: running task 't#2[0]' (id 2)\n"
            "  (1 other worker finished its tasks)\n"
            "  (1 worker has not reported: running, finished or not started; "
            "a worker writes its record after a long wait or a failure)");
  // Ids the kernel wrote are not trusted to index the table.
  status = {record(9, 0, 0, 1), record(1, 5, 0, 1), record(-7, -1),
            record(kWorkerDone, -1)};
  EXPECT_EQ(describeWorkers(*table, status),
            "\n  worker 0: task id 9 (not a task of this program) waits for "
            "event 0: count 0, needs 1"
            "\n  worker 1: task 't#1[0]' (id 1) waits for event id 5 (not an "
            "event of this program): count 0, needs 1"
            "\n  worker 2: running task id -7 (not a task of this program)"
            "\n  (1 other worker finished its tasks)");
}

TEST(CudaWatchdog, ReportIsBounded) {
  auto table = smallTable(20);
  std::vector<LoomWorkerStatus> status(20, record(1, 0, 0, 1));
  std::string report = describeWorkers(*table, status);
  EXPECT_NE(report.find("worker 15: "), std::string::npos);
  EXPECT_EQ(report.find("worker 16: "), std::string::npos);
  EXPECT_NE(report.find("\n  ... and 4 more workers waiting or running"),
            std::string::npos);
}

TEST(CudaWatchdog, WorkersThatLeftAWaitAreNotFailures) {
  // Interpreter.cuh: -1 left because of the abort flag, -2 its own
  // timeout, both with the wait still in the record; a body failure has
  // event -1.
  auto table = smallTable();
  std::vector<LoomWorkerStatus> status = {
      record(1, 0, 0, 1, kWaitAborted), record(2, 1, 2, 3, kWaitTimedOut),
      record(3, -1, 0, 0, -1), record(2, 1, 0, 1, 7)};
  EXPECT_FALSE(bodyFailed(status[0]));
  EXPECT_FALSE(bodyFailed(status[1]));
  EXPECT_TRUE(bodyFailed(status[2])); // a body returning -1 is a failure
  EXPECT_FALSE(bodyFailed(status[3]));
  EXPECT_EQ(describeWorkers(*table, status),
            "\n  worker 0: task 't#1[0]' (id 1) waits for event 0: count 0, "
            "needs 1 (left: abort flag)"
            "\n  worker 1: task 't#2[0]' (id 2) waits for event 1: count 2, "
            "needs 3 (gave up: timeout_cycles)"
            "\n  worker 2: task 't#3[0]' (id 3) failed with code -1"
            "\n  worker 3: task 't#2[0]' (id 2) waits for event 1: count 0, "
            "needs 1 (left with code 7)");
  EXPECT_EQ(describeFailures(*table, status, 4),
            "program 'small' launch 4: task 't#3[0]' (id 3) on worker 2 "
            "failed with code -1");
}

TEST(CudaWatchdog, CountersShowWhichWaitsAreOver) {
  // The kernel publishes waits, not the bodies after them: a record whose
  // wait the counters show satisfied is stale.
  auto table = smallTable();
  std::vector<LoomWorkerStatus> status = {
      record(1, 0, 0, 1), record(2, 1, 0, 2), record(kWorkerDone, -1),
      record(kWorkerDone, -1)};
  std::vector<uint64_t> counts = {1, 1};
  EXPECT_EQ(describeStall(*table, status, 1, 50, &counts),
            "program 'small' launch 1 stopped by the watchdog: no worker's "
            "status and no event count changed for 50 ms\n"
            "  worker 0: running task 't#1[0]' (id 1) or a later task that "
            "needed no wait (its wait for event 0 is over: count 1, needs 1)\n"
            "  worker 1: task 't#2[0]' (id 2) waits for event 1: count 1, "
            "needs 2\n"
            "  (2 other workers finished their tasks)");
}

TEST(CudaWatchdog, FailuresAndCompletion) {
  auto table = smallTable();
  std::vector<LoomWorkerStatus> done(4, record(kWorkerDone, -1));
  EXPECT_FALSE(anyWorkerLeft(done));
  EXPECT_FALSE(anyTaskFailed(done));
  EXPECT_EQ(describeFailures(*table, done, 1), "");

  std::vector<LoomWorkerStatus> failed = done;
  failed[2] = record(3, -1, 0, 0, 42);
  failed[3] = record(2, -1, 0, 0, -1);
  EXPECT_TRUE(anyWorkerLeft(failed));
  EXPECT_TRUE(anyTaskFailed(failed));
  EXPECT_EQ(describeFailures(*table, failed, 5),
            "program 'small' launch 5: task 't#3[0]' (id 3) on worker 2 "
            "failed with code 42\n"
            "program 'small' launch 5: task 't#2[0]' (id 2) on worker 3 "
            "failed with code -1");
  EXPECT_EQ(describeWorkers(*table, failed),
            "\n  worker 2: task 't#3[0]' (id 3) failed with code 42"
            "\n  worker 3: task 't#2[0]' (id 2) failed with code -1"
            "\n  (2 other workers finished their tasks)");
  // The bodies' own codes (DeviceAbi.h) are named.
  failed[2] = record(3, -1, 0, 0, LOOM_BODY_WAIT_TIMED_OUT);
  failed[3] = record(2, -1, 0, 0, LOOM_BODY_BAD_INDEX);
  EXPECT_EQ(describeFailures(*table, failed, 6),
            "program 'small' launch 6: task 't#3[0]' (id 3) on worker 2 "
            "failed with code 3 (its wait for other workers ran out: one of "
            "them failed or never came)\n"
            "program 'small' launch 6: task 't#2[0]' (id 2) on worker 3 "
            "failed with code 1 (a meta value out of range)");

  // Workers of a healthy NVIDIA launch write nothing: no one left early.
  std::vector<LoomWorkerStatus> silent(4, record(kWorkerNotStarted, -1));
  EXPECT_FALSE(anyWorkerLeft(silent));

  std::vector<LoomWorkerStatus> unfinished = done;
  unfinished[1] = record(2, 1, 0, 3, kWaitTimedOut);
  EXPECT_TRUE(anyWorkerLeft(unfinished));
  EXPECT_EQ(describeDeviceTimeout(*table, unfinished, 3, 1000),
            "program 'small' launch 3 ended with 1 worker unfinished: a wait "
            "gave up after timeout_cycles (1000 cycles)\n"
            "  worker 1: task 't#2[0]' (id 2) waits for event 1: count 0, "
            "needs 3 (gave up: timeout_cycles)\n"
            "  (3 other workers finished their tasks)");
}

/// smallTable with one meta buffer, i32 kv_indices[?<=16].
std::shared_ptr<const ProgramTable> tableWithMeta() {
  static LoomBufferDesc buffer{"kv_indices", LOOM_ROLE_META, LOOM_ELEM_I32, 1,
                               {-1}, 16};
  const auto small = smallTable(); // owns what d points to, until create
  LoomProgramDesc d = small->desc();
  d.name = "meta";
  d.num_buffers = 1;
  d.buffers = &buffer;
  std::shared_ptr<const ProgramTable> table;
  Status s = ProgramTable::create(d, "test", 0, &table);
  EXPECT_TRUE(s.ok()) << s.message();
  return table;
}

TEST(CudaWatchdog, RefusedMetaValueIsNamed) {
  auto table = tableWithMeta();
  std::vector<int32_t> ids(8);
  LoomBinding binding{};
  binding.data = ids.data();
  binding.dims[0] = 8;
  const std::vector<LoomBinding> bindings{binding};
  // As a kernel leaves it: the value's address and the value, read back
  // through the live records the way the watchdog reads them.
  std::vector<LoomWorkerStatus> live(4, record(kWorkerDone, -1));
  live[1] = record(2, -1, uint64_t(uintptr_t(ids.data() + 3)),
                   uint64_t(int64_t(-1)), LOOM_BODY_BAD_INDEX);
  live[1].meta_reason = LOOM_META_PAGE_ID;
  std::vector<LoomWorkerStatus> seen;
  snapshotWorkerStatus(live.data(), 4, &seen);
  EXPECT_EQ(describeFailures(*table, seen, 2, &bindings),
            "program 'meta' launch 2: task 't#2[0]' (id 2) on worker 1 "
            "refused kv_indices[3] = -1 (a page id outside the cache's "
            "pages)");
  // Without the bindings, or outside every buffer: the address.
  EXPECT_NE(describeFailures(*table, seen, 2).find(
                "refused the meta value at 0x"),
            std::string::npos);
  live[1].seen = uint64_t(uintptr_t(ids.data() + 8));
  snapshotWorkerStatus(live.data(), 4, &seen);
  EXPECT_NE(describeFailures(*table, seen, 2, &bindings)
                .find("refused the meta value at 0x"),
            std::string::npos);
}

TEST(CudaWatchdog, ResetAndSnapshot) {
  std::vector<LoomWorkerStatus> live(3, record(5, 6, 7, 8, 9));
  resetWorkerStatus(live.data(), 3);
  std::vector<LoomWorkerStatus> copy;
  snapshotWorkerStatus(live.data(), 3, &copy);
  ASSERT_EQ(copy.size(), 3u);
  for (const LoomWorkerStatus &s : copy) {
    EXPECT_EQ(s.task, kWorkerNotStarted);
    EXPECT_EQ(s.event, -1);
    EXPECT_EQ(s.seen, 0u);
    EXPECT_EQ(s.needed, 0u);
    EXPECT_EQ(s.error, 0);
    EXPECT_EQ(s.meta_reason, 0);
  }
  live[1] = record(2, 1, 3, 4);
  snapshotWorkerStatus(live.data(), 3, &copy);
  EXPECT_EQ(copy[1].task, 2);
  EXPECT_EQ(copy[1].seen, 3u);
}

TEST(CudaWatchdog, StallMeansNoRecordChangedForTheTimeout) {
  StallDetector detector;
  Clock::time_point t0 = Clock::now();
  std::vector<LoomWorkerStatus> a(2, record(1, 0, 0, 1));
  detector.arm(100, a, t0);
  EXPECT_FALSE(detector.stalled(a, t0 + std::chrono::milliseconds(99)));
  EXPECT_TRUE(detector.stalled(a, t0 + std::chrono::milliseconds(100)));
  // Any change (here a count moving) is progress and restarts the clock.
  std::vector<LoomWorkerStatus> b = a;
  b[1].seen = 1;
  EXPECT_FALSE(detector.stalled(b, t0 + std::chrono::milliseconds(150)));
  EXPECT_FALSE(detector.stalled(b, t0 + std::chrono::milliseconds(249)));
  EXPECT_TRUE(detector.stalled(b, t0 + std::chrono::milliseconds(250)));
}

//===----------------------------------------------------------------------===//
// Driver loading and error text
//===----------------------------------------------------------------------===//

CUresult fakeName(CUresult r, const char **out) {
  if (r != 700)
    return 1;
  *out = "CUDA_ERROR_ILLEGAL_ADDRESS";
  return 0;
}
CUresult fakeString(CUresult r, const char **out) {
  if (r != 700)
    return 1;
  *out = "an illegal memory access was encountered";
  return 0;
}

TEST(CudaDriver, ErrorText) {
  CudaDriver driver;
  driver.cuGetErrorName = fakeName;
  driver.cuGetErrorString = fakeString;
  EXPECT_EQ(cudaErrorText(driver, 700),
            "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
            "encountered)");
  EXPECT_EQ(cudaErrorText(driver, 12345), "CUDA error 12345");
  EXPECT_TRUE(isStickyCudaError(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_TRUE(isStickyCudaError(CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_FALSE(isStickyCudaError(CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_FALSE(isStickyCudaError(CUDA_ERROR_NOT_READY));
}

TEST(CudaDriver, WithoutADriverTheErrorNamesLibcuda) {
  // On a GPU machine the driver loads; everywhere else the error must say
  // which library is missing.
  ScopedEnv env(kCudaDriverEnv, nullptr);
  int count = -1;
  loomrt_status s = loomrt_device_count("cuda", &count);
  if (s == LOOMRT_SUCCESS) {
    EXPECT_GE(count, 0);
    return;
  }
  EXPECT_EQ(s, LOOMRT_ERROR_BACKEND_UNAVAILABLE);
  EXPECT_EQ(count, 0);
  std::string text = loomrt_last_error();
  EXPECT_EQ(text.rfind("cuda: cannot load libcuda.so.1 (libcuda.so.1: ", 0), 0u)
      << text;
  EXPECT_NE(text.find("cannot open shared object file"), std::string::npos)
      << text;
  // Every fallback path is named with its own reason.
  EXPECT_NE(text.find("; /usr/lib64/libcuda.so.1: "), std::string::npos)
      << text;

  loomrt_device *device = nullptr;
  EXPECT_ERROR(loomrt_device_create("cuda", 0, &device),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE, text);
  EXPECT_EQ(device, nullptr);
  // So nothing can be loaded on it, and the load says so cleanly.
  loomrt_program *program = nullptr;
  EXPECT_ERROR(loomrt_program_load(device, "mla.cuda.so", 0, &program),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "loomrt_program_load: device is null");
  EXPECT_EQ(program, nullptr);
}

TEST(CudaDriver, OverrideThatDoesNotExist) {
  ScopedEnv env(kCudaDriverEnv, "/nonexistent/libcuda.so.1");
  int count = -1;
  EXPECT_ERROR(loomrt_device_count("cuda", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               "cuda: cannot load /nonexistent/libcuda.so.1 (from "
               "LOOM_CUDA_DRIVER) (/nonexistent/libcuda.so.1: cannot open "
               "shared object file: No such file or directory)");
  EXPECT_EQ(count, 0);
}

TEST(CudaDriver, MissingRequiredSymbol) {
  const std::string old = testFile(LOOM_FAKE_CUDA_DRIVER_OLD);
  ScopedEnv env(kCudaDriverEnv, old.c_str());
  int count = -1;
  EXPECT_ERROR(loomrt_device_count("cuda", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               "cuda: " + old +
                   " lacks the required symbol 'cuLaunchCooperativeKernel'; "
                   "the NVIDIA driver is too old or this is not libcuda");
  // Not a driver at all: the first symbol of the table is missing.
  const std::string artifact = testFile(LOOM_FAKE_CUDA_ARTIFACT);
  ScopedEnv env2(kCudaDriverEnv, artifact.c_str());
  EXPECT_ERROR(loomrt_device_count("cuda", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               "cuda: " + artifact +
                   " lacks the required symbol 'cuGetErrorName'; the NVIDIA "
                   "driver is too old or this is not libcuda");
}

//===----------------------------------------------------------------------===//
// The backend on the fake driver
//===----------------------------------------------------------------------===//

class FakeCuda : public ::testing::Test {
protected:
  void SetUp() override {
    driverPath_ = testFile(LOOM_FAKE_CUDA_DRIVER);
    artifact_ = testFile(LOOM_FAKE_CUDA_ARTIFACT);
    env_.push_back(
        std::make_unique<ScopedEnv>(kCudaDriverEnv, driverPath_.c_str()));
    env_.push_back(
        std::make_unique<ScopedEnv>(LOOM_FAKE_ARTIFACT_ENV, nullptr));
    env_.push_back(std::make_unique<ScopedEnv>("LOOM_WATCHDOG_MS", nullptr));
    // The same handle the runtime gets: one fake GPU, shared state.
    handle_ = ::dlopen(driverPath_.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    configure_ = reinterpret_cast<LoomFakeCudaConfigureFn>(
        ::dlsym(handle_, LOOM_FAKE_CUDA_CONFIGURE));
    stats_ = reinterpret_cast<LoomFakeCudaStatsFn>(
        ::dlsym(handle_, LOOM_FAKE_CUDA_STATS));
    ASSERT_TRUE(configure_ && stats_);
    configure(defaults());
    before_ = stats();
  }
  void TearDown() override {
    if (handle_)
      ::dlclose(handle_);
  }

  static LoomFakeCudaConfig defaults() {
    // One 4-SM device of compute capability 9.0, two blocks per SM.
    return LoomFakeCudaConfig{0, 1, 4, 9, 0, 2, 1, 1, 232448, 1, 0};
  }
  void configure(const LoomFakeCudaConfig &config) { configure_(&config); }
  LoomFakeCudaStats stats() const {
    LoomFakeCudaStats s{};
    stats_(&s);
    return s;
  }
  /// Nothing the backend allocated is left (against the start of the test).
  void expectNoLeaks() const {
    LoomFakeCudaStats now = stats();
    EXPECT_EQ(now.live_device_allocs, before_.live_device_allocs);
    EXPECT_EQ(now.live_host_allocs, before_.live_host_allocs);
    EXPECT_EQ(now.live_modules, before_.live_modules);
    EXPECT_EQ(now.live_streams, before_.live_streams);
    EXPECT_EQ(now.live_events, before_.live_events);
    EXPECT_EQ(now.primary_retains, before_.primary_retains);
    EXPECT_EQ(now.calls_without_context, 0);
  }

  /// Loads variant `variant` of the fake artifact on `device`.
  loomrt_status load(loomrt_device *device, const char *variant,
                     loomrt_program **program) {
    ScopedEnv v(LOOM_FAKE_ARTIFACT_ENV, variant);
    return loomrt_program_load(device, artifact_.c_str(), 0, program);
  }

  std::string driverPath_, artifact_;
  std::vector<std::unique_ptr<ScopedEnv>> env_;
  void *handle_ = nullptr;
  LoomFakeCudaConfigureFn configure_ = nullptr;
  LoomFakeCudaStatsFn stats_ = nullptr;
  LoomFakeCudaStats before_{};
  const std::string device0_ =
      "cuda device 0 (Fake GPU 0, compute capability 9.0, 4 SMs)";
};

TEST_F(FakeCuda, Devices) {
  int count = -1;
  ASSERT_EQ(loomrt_device_count("cuda", &count), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(count, 1);
  {
    loomrt::Device device("cuda", 0);
    EXPECT_STREQ(device.kind(), "cuda");
    EXPECT_EQ(std::string(device.describe()), device0_);
  }
  loomrt_device *device = nullptr;
  EXPECT_ERROR(loomrt_device_create("cuda", 1, &device),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "cuda device ordinal 1 out of range: there is 1 (0 to 0)");
  EXPECT_ERROR(loomrt_device_create("cuda", -1, &device),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "cuda device ordinal -1 out of range: there is 1 (0 to 0)");

  LoomFakeCudaConfig none = defaults();
  none.devices = 0;
  configure(none);
  ASSERT_EQ(loomrt_device_count("cuda", &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 0);
  EXPECT_ERROR(loomrt_device_create("cuda", 0, &device),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "cuda device ordinal 0 out of range: the driver sees no cuda "
               "devices");
  // What a driver without a GPU says at cuInit: no devices, not an error.
  LoomFakeCudaConfig noGpu = defaults();
  noGpu.init_result = CUDA_ERROR_NO_DEVICE;
  configure(noGpu);
  count = -1;
  ASSERT_EQ(loomrt_device_count("cuda", &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 0);
  LoomFakeCudaConfig broken = defaults();
  broken.init_result = 999;
  configure(broken);
  EXPECT_ERROR(loomrt_device_count("cuda", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               "cuda: cuInit failed (" + driverPath_ +
                   ", driver version 13000): CUDA error 999");
  EXPECT_EQ(device, nullptr);
  expectNoLeaks();
}

TEST_F(FakeCuda, Memory) {
  {
    loomrt::Device device("cuda", 0);
    loomrt::Memory a = device.alloc(100), b = device.alloc(100);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 256, 0u);
    std::vector<unsigned char> host(100, 0x11), back(100, 0);
    device.copy(a.get(), host.data(), 100, LOOMRT_COPY_HOST_TO_DEVICE);
    device.fill(a.get(), 0x5A, 50);
    device.copy(b.get(), a.get(), 100, LOOMRT_COPY_DEVICE_TO_DEVICE);
    device.copy(back.data(), b.get(), 100, LOOMRT_COPY_DEVICE_TO_HOST);
    EXPECT_EQ(back[0], 0x5A);
    EXPECT_EQ(back[49], 0x5A);
    EXPECT_EQ(back[50], 0x11);
    std::fill(back.begin(), back.end(), 0);
    device.copy(back.data(), a.get(), 100); // direction inferred
    EXPECT_EQ(back[99], 0x11);
    device.copy(back.data(), host.data(), 1, LOOMRT_COPY_HOST_TO_HOST);

    // The direction is checked, not guessed.
    int64_t local = 0;
    EXPECT_ERROR_HAS(loomrt_memcpy_kind(device.get(), &local, host.data(), 8,
                                        LOOMRT_COPY_HOST_TO_DEVICE),
                     LOOMRT_ERROR_INVALID_ARGUMENT,
                     device0_ + ": cannot copy 8 bytes from ");
    EXPECT_ERROR_HAS(loomrt_memcpy_kind(device.get(), &local, host.data(), 8,
                                        LOOMRT_COPY_HOST_TO_DEVICE),
                     LOOMRT_ERROR_INVALID_ARGUMENT,
                     " (host to device): CUDA_ERROR_INVALID_VALUE (invalid "
                     "argument)");
    EXPECT_ERROR(loomrt_memcpy_kind(device.get(), a.get(), host.data(), 8,
                                    static_cast<loomrt_copy_kind>(7)),
                 LOOMRT_ERROR_INVALID_ARGUMENT,
                 "loomrt_memcpy_kind: kind 7 is not a loomrt_copy_kind (0 to "
                 "4)");
    EXPECT_ERROR_HAS(loomrt_memset(device.get(), &local, 0, 8),
                     LOOMRT_ERROR_INVALID_ARGUMENT, "(device memory only)");
    // Nothing runs past the end of an allocation of loomrt_malloc's.
    EXPECT_ERROR_HAS(loomrt_memcpy_kind(device.get(), a.get(), host.data(), 101,
                                        LOOMRT_COPY_HOST_TO_DEVICE),
                     LOOMRT_ERROR_INVALID_ARGUMENT,
                     " run past the end of its allocation (100 bytes from ");
    EXPECT_ERROR_HAS(loomrt_memcpy(device.get(), back.data(),
                                   static_cast<char *>(b.get()) + 50, 51),
                     LOOMRT_ERROR_INVALID_ARGUMENT, "loomrt_memcpy: 51 bytes from ");
    EXPECT_ERROR_HAS(loomrt_memset(device.get(),
                                   static_cast<char *>(a.get()) + 99, 0, 2),
                     LOOMRT_ERROR_INVALID_ARGUMENT, "loomrt_memset: 2 bytes at ");
    EXPECT_ERROR_HAS(loomrt_free(device.get(), &local),
                     LOOMRT_ERROR_INVALID_ARGUMENT,
                     "was not allocated by this device (or was freed)");

    // Any thread may make memory calls: the backend makes its context
    // current on each.
    std::thread([&] {
      loomrt::Memory c = device.alloc(64);
      device.fill(c.get(), 1, 64);
    }).join();
    EXPECT_EQ(stats().calls_without_context, 0);

    // Leftovers are freed with the device.
    void *leftover = nullptr;
    ASSERT_EQ(loomrt_malloc(device.get(), 10, &leftover), LOOMRT_SUCCESS);
    a.reset();
    b.reset();
  }
  expectNoLeaks();
}

/// Allocates and binds x (i64[7]), poisoned.
/// Destroys `program` on another thread; false if that has not returned
/// within `limit` (the thread is then left where it hangs).
bool destroyWithin(loomrt_program *program, std::chrono::seconds limit) {
  auto done = std::make_shared<std::promise<loomrt_status>>();
  std::future<loomrt_status> result = done->get_future();
  std::thread([done, program] {
    done->set_value(loomrt_program_destroy(program));
  }).detach();
  return result.wait_for(limit) == std::future_status::ready &&
         result.get() == LOOMRT_SUCCESS;
}

struct Chain {
  Chain(loomrt_device *dev, loomrt_program *program) : device(dev) {
    EXPECT_EQ(loomrt_malloc(device, 7 * sizeof(int64_t), &x), LOOMRT_SUCCESS);
    EXPECT_EQ(loomrt_memset(device, x, 0xFF, 7 * sizeof(int64_t)),
              LOOMRT_SUCCESS);
    EXPECT_EQ(loomrt_program_bind_by_name(program, "x", x, nullptr, 0),
              LOOMRT_SUCCESS)
        << loomrt_last_error();
  }
  ~Chain() { (void)loomrt_free(device, x); }
  std::vector<int64_t> read() const {
    std::vector<int64_t> out(7);
    EXPECT_EQ(loomrt_memcpy_kind(device, out.data(), x, 7 * sizeof(int64_t),
                                 LOOMRT_COPY_DEVICE_TO_HOST),
              LOOMRT_SUCCESS);
    return out;
  }
  loomrt_device *device;
  void *x = nullptr;
};

/// `loomrt_program *raw` holding variant `variant` of the fake artifact,
/// loaded on `device`, and `loomrt::Program program` owning it; a failed
/// load ends the test with the runtime's message.
#define LOAD_PROGRAM(device, variant, raw, program)                           \
  loomrt_program *raw = nullptr;                                               \
  ASSERT_EQ(load(device, variant, &raw), LOOMRT_SUCCESS)                       \
      << (variant) << ": " << loomrt_last_error();                             \
  loomrt::Program program(raw)

TEST_F(FakeCuda, RunsAChainOverSeveralLaunches) {
  {
    loomrt::Device device("cuda", 0);
    LOAD_PROGRAM(device.get(), "chain", raw, program);
    Chain chain(device.get(), raw);
    for (uint64_t epoch = 1; epoch <= 3; ++epoch) {
      program.run();
      std::vector<int64_t> x = chain.read();
      for (int64_t i = 0; i < 7; ++i)
        EXPECT_EQ(x[i], 100 * static_cast<int64_t>(epoch) + i + 1)
            << "launch " << epoch << ", x[" << i << "]";
      for (int32_t e = 0; e < 7; ++e)
        EXPECT_EQ(program.eventCount(e), epoch); // never reset
    }
    EXPECT_EQ(program.epoch(), 3u);
    EXPECT_GT(program.lastLaunchNs(), 0u);
    LoomFakeCudaStats s = stats();
    EXPECT_EQ(s.launches, 3);
    EXPECT_EQ(s.last_grid, 3u);
    EXPECT_EQ(s.last_block, 128u);
    EXPECT_EQ(s.last_smem, 0u);
    EXPECT_EQ(s.last_epoch, 3u);
    // Twice the default watchdog at the fake's 1 GHz clock.
    EXPECT_EQ(s.last_timeout_cycles,
              2ull * LOOMRT_DEFAULT_WATCHDOG_MS * 1000000);
    EXPECT_EQ(s.max_dynamic_smem_attribute, 0); // 48 KiB needs no opt-in

    // Another thread may drive the program (one at a time).
    std::thread([&] { program.run(); }).join();
    EXPECT_EQ(chain.read()[6], 407);
    EXPECT_EQ(stats().calls_without_context, 0);

    const LoomProgramDesc &desc = program.desc();
    EXPECT_STREQ(desc.name, "chain");
    EXPECT_EQ(program.workspaceBytes(), 1024);
  }
  expectNoLeaks();
}

// The fake's cuLaunchCooperativeKernel spends 50 ms on the host before its
// launch reaches the "GPU". Unqueued, the start event is reached first and
// those 50 ms are timed; queued, the launch waits behind the gate and only
// the kernel is (its 3 workers take well under 50 ms).
TEST_F(FakeCuda, QueuedLaunchTimesTheDeviceAlone) {
  constexpr uint64_t kSubmitNs = 50'000'000;
  LoomFakeCudaConfig slowSubmit = defaults();
  slowSubmit.launch_call_us = static_cast<int>(kSubmitNs / 1000);
  configure(slowSubmit);
  {
    loomrt::Device device("cuda", 0);
    LOAD_PROGRAM(device.get(), "chain", raw, program);
    Chain chain(device.get(), raw);
    EXPECT_FALSE(program.queuedLaunch());
    program.launch();
    program.setQueuedLaunch(true); // waits for that launch first
    EXPECT_TRUE(program.queuedLaunch());
    EXPECT_GE(program.lastLaunchNs(), kSubmitNs);
    EXPECT_EQ(chain.read()[6], 107);
    EXPECT_EQ(stats().gated_launches, 0);

    for (uint64_t epoch = 2; epoch <= 3; ++epoch) {
      program.run();
      EXPECT_LT(program.lastLaunchNs(), kSubmitNs) << "launch " << epoch;
      EXPECT_EQ(chain.read()[6], 100 * static_cast<int64_t>(epoch) + 7);
    }
    EXPECT_EQ(stats().gated_launches, 2);

    program.setQueuedLaunch(false);
    program.run();
    EXPECT_GE(program.lastLaunchNs(), kSubmitNs);
    EXPECT_EQ(chain.read()[6], 407);
    EXPECT_EQ(stats().gated_launches, 2);
  }
  expectNoLeaks();
}

// A queued launch the driver refuses still opens its gate: destroying the
// program waits for its stream, which a shut gate would hold forever.
TEST_F(FakeCuda, RefusedQueuedLaunchLeavesNoGateShut) {
  {
    loomrt::Device device("cuda", 0);
    loomrt_program *raw = nullptr;
    ASSERT_EQ(load(device.get(), "chain", &raw), LOOMRT_SUCCESS)
        << loomrt_last_error();
    {
      Chain chain(device.get(), raw);
      ASSERT_EQ(loomrt_program_set_queued_launch(raw, 1), LOOMRT_SUCCESS)
          << loomrt_last_error();
      LoomFakeCudaConfig fewer = defaults();
      fewer.sm_count = 1; // 2 blocks fit now, the program has 3 workers
      configure(fewer);
      EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_RESOURCES,
                       "do not fit at once now");
      configure(defaults());
    }
    EXPECT_TRUE(destroyWithin(raw, std::chrono::seconds(5)))
        << "the program's stream did not drain: a gate left shut";
    EXPECT_EQ(stats().gated_launches, 0);
  }
  expectNoLeaks();
}

TEST_F(FakeCuda, QueuedLaunchNeedsStreamMemoryOperations) {
  LoomFakeCudaConfig noMemOps = defaults();
  noMemOps.stream_mem_ops = 0;
  configure(noMemOps);
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "chain", raw, program);
  EXPECT_ERROR(loomrt_program_set_queued_launch(raw, 1),
               LOOMRT_ERROR_UNSUPPORTED,
               "program 'chain' on " + device0_ +
                   " cannot queue its launches: cuStreamWaitValue32 on "
                   "mapped host memory failed: CUDA_ERROR_NOT_SUPPORTED "
                   "(fake driver error)");
  int32_t queued = -1;
  ASSERT_EQ(loomrt_program_queued_launch(raw, &queued), LOOMRT_SUCCESS);
  EXPECT_EQ(queued, 0);
  // Turning it off needs nothing.
  EXPECT_EQ(loomrt_program_set_queued_launch(raw, 0), LOOMRT_SUCCESS);
}

TEST_F(FakeCuda, ProfiledArtifactRecordsEveryTask) {
  {
    loomrt::Device device("cuda", 0);
    loomrt_program *raw = nullptr;
    // An ordinary artifact records nothing and says so.
    ASSERT_EQ(load(device.get(), "chain", &raw), LOOMRT_SUCCESS);
    {
      loomrt::Program plain(raw);
      Chain chain(device.get(), raw);
      EXPECT_FALSE(plain.profiled());
      plain.run();
      loomrt_task_timing t[7];
      EXPECT_ERROR(loomrt_program_profile(raw, t, 7, nullptr, 0),
                   LOOMRT_ERROR_INVALID_ARGUMENT,
                   "program 'chain' records no per-task timing (build it "
                   "with loomc --profile)");
    }
    ASSERT_EQ(load(device.get(), "profiled", &raw), LOOMRT_SUCCESS)
        << loomrt_last_error();
    loomrt::Program program(raw);
    Chain chain(device.get(), raw);
    EXPECT_TRUE(program.profiled());
    loomrt_task_timing t[7];
    EXPECT_ERROR(loomrt_program_profile(raw, t, 7, nullptr, 0),
                 LOOMRT_ERROR_NOT_READY,
                 "program 'profiled' has not completed a launch yet");
    for (int launch = 1; launch <= 2; ++launch) {
      program.run();
      std::vector<loomrt_task_timing> tasks, workers;
      program.profile(&tasks, &workers);
      ASSERT_EQ(tasks.size(), 7u);
      ASSERT_EQ(workers.size(), 3u);
      uint64_t firstEntry = UINT64_MAX;
      for (int32_t w = 0; w < 3; ++w) {
        EXPECT_EQ(workers[w].worker, w);
        firstEntry = std::min(firstEntry, workers[w].start_ns);
      }
      EXPECT_EQ(firstEntry, 0u); // the origin
      for (int32_t i = 0; i < 7; ++i) {
        const loomrt_task_timing &r = tasks[size_t(i)];
        EXPECT_EQ(r.worker, i % 3) << "task " << i; // chain(): task i on i % 3
        EXPECT_LE(r.pick_ns, r.start_ns);
        EXPECT_LE(r.start_ns, r.end_ns);
        EXPECT_GE(r.pick_ns, workers[size_t(r.worker)].start_ns);
        EXPECT_LE(r.end_ns, workers[size_t(r.worker)].end_ns);
        // Task i waits for task i - 1's event: it cannot start earlier.
        if (i > 0) {
          EXPECT_GE(r.start_ns, tasks[size_t(i - 1)].end_ns) << "task " << i;
        }
      }
    }
    EXPECT_ERROR(loomrt_program_profile(raw, t, 6, nullptr, 0),
                 LOOMRT_ERROR_INVALID_ARGUMENT,
                 "program 'profiled': asked for 6 task and 0 worker records; "
                 "it has 7 tasks and 3 workers (pass those counts, or a null "
                 "array and 0)");
  }
  {
    // A kernel that says it records but does not: caught, not returned.
    loomrt::Device device("cuda", 0);
    LOAD_PROGRAM(device.get(), "unrecorded", raw, program);
    Chain chain(device.get(), raw);
    program.run();
    loomrt_task_timing t[7];
    EXPECT_ERROR(loomrt_program_profile(raw, t, 7, nullptr, 0),
                 LOOMRT_ERROR_INTERNAL,
                 "program 'unrecorded': the timing record of task "
                 "'step#0[0]' (id 0) is from launch 0, not launch 1 (the "
                 "kernel did not record it)");
  }
  expectNoLeaks();
}

TEST_F(FakeCuda, LaunchWithoutSynchronizeWaitsForThePrevious) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "chain", raw, program);
  Chain chain(device.get(), raw);
  for (int i = 0; i < 5; ++i)
    program.launch();
  program.synchronize();
  EXPECT_EQ(chain.read()[6], 507);
  EXPECT_EQ(program.eventCount(6), 5u);
}

TEST_F(FakeCuda, DynamicModeTakesTicketsFromTheQueueCounter) {
  // The queue is one more counter after the events, never reset: launch e
  // takes tickets from (e - 1) * (num_tasks + num_workers).
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "dynamic", raw, program);
  Chain chain(device.get(), raw);
  for (uint64_t epoch = 1; epoch <= 4; ++epoch) {
    program.run();
    std::vector<int64_t> x = chain.read();
    EXPECT_EQ(x[6], 100 * static_cast<int64_t>(epoch) + 7);
    EXPECT_EQ(program.eventCount(3), epoch);
  }
}

TEST_F(FakeCuda, LargeSharedMemoryIsOptedInto) {
  {
    loomrt::Device device("cuda", 0);
    LOAD_PROGRAM(device.get(), "bigsmem", raw, program);
    Chain chain(device.get(), raw);
    program.run();
    EXPECT_EQ(stats().max_dynamic_smem_attribute, 100 * 1024);
    EXPECT_EQ(stats().last_smem, 100u * 1024);
  }
  LoomFakeCudaConfig small = defaults();
  small.max_smem_optin = 64 * 1024;
  configure(small);
  loomrt::Device device("cuda", 0);
  loomrt_program *program = nullptr;
  EXPECT_ERROR(load(device.get(), "bigsmem", &program), LOOMRT_ERROR_RESOURCES,
               "program 'chain' wants 102400 bytes of dynamic shared memory "
               "per worker block; " +
                   device0_ + " allows at most 65536");
}

TEST_F(FakeCuda, DeadlockIsReportedByTheWatchdog) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "deadlock", raw, program);
  Chain chain(device.get(), raw);
  program.setWatchdogMs(100);
  Clock::time_point start = Clock::now();
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(raw), LOOMRT_ERROR_TIMEOUT,
               "program 'deadlock' launch 1 stopped by the watchdog: no "
               "worker's status and no event count changed for 100 ms\n"
               "  worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, "
               "needs 1\n"
               "  worker 1: task 'b#1[0]' (id 1) waits for event 0: count 0, "
               "needs 1");
  auto took = Clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_PROGRAM_FAILED,
                   "program 'deadlock' cannot launch after launch 1 failed; "
                   "load it again. That failure: program 'deadlock' launch 1 "
                   "stopped by the watchdog");
}

TEST_F(FakeCuda, WatchdogFromTheEnvironment) {
  loomrt::Device device("cuda", 0);
  ScopedEnv ms("LOOM_WATCHDOG_MS", "50");
  LOAD_PROGRAM(device.get(), "deadlock", raw, program);
  EXPECT_EQ(program.watchdogMs(), 50u);
  Chain chain(device.get(), raw);
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS);
  EXPECT_ERROR_HAS(loomrt_synchronize(raw), LOOMRT_ERROR_TIMEOUT,
                   "no worker's status and no event count changed for 50 ms");
}

TEST_F(FakeCuda, KernelsOwnTimeoutWhenNobodyWatches) {
  // Nobody synchronizes for a while: the kernel's waits give up on their
  // own after timeout_cycles (2 x 50 ms at 1 GHz), and synchronize then
  // reports the unfinished workers.
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "deadlock", raw, program);
  Chain chain(device.get(), raw);
  program.setWatchdogMs(50);
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // The first worker to time out raises the flag; the other leaves on it.
  EXPECT_ERROR_HAS(loomrt_synchronize(raw), LOOMRT_ERROR_TIMEOUT,
                   "program 'deadlock' launch 1 ended with 2 workers "
                   "unfinished: a wait gave up after timeout_cycles (100000000 "
                   "cycles)\n"
                   "  worker 0: task 'a#0[0]' (id 0) waits for event 1: count "
                   "0, needs 1 (");
  std::string text = loomrt_last_error();
  EXPECT_NE(text.find("\n  worker 1: task 'b#1[0]' (id 1) waits for event 0: "
                      "count 0, needs 1 ("),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(gave up: timeout_cycles)"), std::string::npos) << text;
}

TEST_F(FakeCuda, FailingTaskIsReported) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "fail", raw, program);
  Chain chain(device.get(), raw);
  // Workers waiting for the failed task's event are stopped at once, not
  // after the watchdog's 10 s.
  Clock::time_point start = Clock::now();
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(raw), LOOMRT_ERROR_TASK_FAILED,
               "program 'fail' launch 1: task 'fail#3[0]' (id 3) on worker 0 "
               "failed with code 42");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(loomrt_launch(raw), LOOMRT_ERROR_PROGRAM_FAILED);
}

TEST_F(FakeCuda, KernelFaultNamesDeviceKernelAndError) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "crash", raw, program);
  Chain chain(device.get(), raw);
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS);
  EXPECT_ERROR_HAS(loomrt_synchronize(raw), LOOMRT_ERROR_DEVICE,
                   device0_ +
                       ": kernel 'loom_fake_kernel' of program 'crash' launch "
                       "1 failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal "
                       "memory access was encountered); the device's context "
                       "is unusable now (restart the process)\n"
                       "  workers when it stopped:\n");
  // Worker 0's record may be stale (bodies are not published); the others
  // wait for what it never triggered.
  std::string text = loomrt_last_error();
  EXPECT_NE(text.find("\n  worker 1: task 'step#4[0]' (id 4) waits for event "
                      "3: count 0, needs 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  worker 2: task 'step#5[0]' (id 5) waits for event "
                      "4: count 0, needs 1"),
            std::string::npos)
      << text;
  EXPECT_STREQ(loomrt_status_name(LOOMRT_ERROR_DEVICE), "LOOMRT_ERROR_DEVICE");
  EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_PROGRAM_FAILED,
                   "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_F(FakeCuda, KernelThatIgnoresTheAbortFlagIsLeftRunning) {
  loomrt_device *device = nullptr;
  ASSERT_EQ(loomrt_device_create("cuda", 0, &device), LOOMRT_SUCCESS);
  loomrt_program *program = nullptr, *bystander = nullptr;
  ASSERT_EQ(load(device, "stuck", &program), LOOMRT_SUCCESS);
  ASSERT_EQ(load(device, "chain", &bystander), LOOMRT_SUCCESS);
  void *x = nullptr;
  ASSERT_EQ(loomrt_malloc(device, 56, &x), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_program_bind(program, 0, x, nullptr, 0), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_program_bind(bystander, 0, x, nullptr, 0), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program, 100), LOOMRT_SUCCESS);
  Clock::time_point start = Clock::now();
  ASSERT_EQ(loomrt_launch(program), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(program), LOOMRT_ERROR_TIMEOUT,
               "program 'stuck' launch 1 stopped by the watchdog: no worker's "
               "status and no event count changed for 100 ms\n"
               "  worker 1: task 'after#1[0]' (id 1) waits for event 0: count "
               "0, needs 1\n"
               "  (1 worker has not reported: running, finished or not started; "
               "a worker writes its record after a long wait or a failure)\n"
               "the kernel did not exit within 100 ms of the abort flag; its "
               "workers now:\n"
               "  worker 1: task 'after#1[0]' (id 1) waits for event 0: count "
               "0, needs 1 (left: abort flag)\n"
               "  (1 worker has not reported: running, finished or not started; "
               "a worker writes its record after a long wait or a failure)\n" +
                   device0_ +
                   " is left running it: the program's memory is not freed "
                   "and the device refuses memory calls (restart the "
                   "process)");
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1400));
  // Freeing would wait for the kernel forever: memory calls are refused,
  // and destroying the program and the device returns at once.
  EXPECT_ERROR_HAS(loomrt_free(device, x), LOOMRT_ERROR_DEVICE,
                   device0_ + " refuses memory calls: they would wait "
                              "forever for a kernel that did not stop "
                              "(kernel 'loom_fake_kernel' of program 'stuck' "
                              "launch 1: the kernel did not exit");
  // Another program could never have all its blocks resident beside it.
  EXPECT_ERROR_HAS(loomrt_launch(bystander), LOOMRT_ERROR_DEVICE,
                   "program 'chain' cannot launch: " + device0_ +
                       " still runs a kernel that did not stop (kernel "
                       "'loom_fake_kernel' of program 'stuck' launch 1: ");
  EXPECT_ERROR_HAS(loomrt_program_set_queued_launch(bystander, 1),
                   LOOMRT_ERROR_DEVICE,
                   "program 'chain' on " + device0_ +
                       " cannot queue its launches: " + device0_ +
                       " still runs a kernel that did not stop (kernel "
                       "'loom_fake_kernel' of program 'stuck' launch 1: ");
  EXPECT_EQ(loomrt_program_destroy(bystander), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1400));
  // Let the fake kernel finish before the next test reconfigures the fake.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
}

TEST_F(FakeCuda, ArtifactMustMatchTheDevice) {
  loomrt::Device device("cuda", 0);
  loomrt_program *program = nullptr;
  EXPECT_ERROR(load(device.get(), "sm100", &program), LOOMRT_ERROR_LOAD_FAILED,
               "cannot run '" + artifact_ + "' on " + device0_ +
                   ": it is built for sm_100a, which runs only on compute "
                   "capability 10.0; the device is sm_90 (rebuild the "
                   "artifact for it)");
  EXPECT_ERROR(load(device.get(), "gfx", &program), LOOMRT_ERROR_LOAD_FAILED,
               "cannot run '" + artifact_ + "' on " + device0_ +
                   ": it is built for 'gfx950', not a CUDA architecture "
                   "(sm_XY, sm_XYa, sm_XYf)");
  EXPECT_EQ(program, nullptr);

  LoomFakeCudaConfig blackwell = defaults();
  blackwell.cc_major = 10;
  configure(blackwell);
  loomrt::Device b200("cuda", 0);
  EXPECT_ERROR_HAS(load(b200.get(), "chain", &program),
                   LOOMRT_ERROR_LOAD_FAILED,
                   "it is built for sm_90a, which runs only on compute "
                   "capability 9.0; the device is sm_100");
  ASSERT_EQ(load(b200.get(), "sm100", &program), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);
}

TEST_F(FakeCuda, WorkersMustAllFit) {
  loomrt::Device device("cuda", 0);
  loomrt_program *program = nullptr;
  EXPECT_ERROR(load(device.get(), "wide", &program), LOOMRT_ERROR_RESOURCES,
               "program 'wide' needs 9 co-resident worker blocks (128 "
               "threads and 0 bytes of dynamic shared memory each (64 "
               "registers per thread)), but " +
                   device0_ +
                   " holds only 2 per SM x 4 SMs = 8 at once; a persistent "
                   "kernel with blocks waiting to start deadlocks, so it is "
                   "not launched (schedule it for at most 8 workers, or use "
                   "fewer threads or less shared memory)");
  LoomFakeCudaConfig three = defaults();
  three.blocks_per_sm = 3;
  configure(three);
  ASSERT_EQ(load(device.get(), "wide", &program), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_launch(program), LOOMRT_ERROR_NOT_BOUND);
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);

  // Device attributes are read when the device is created.
  LoomFakeCudaConfig noCooperative = defaults();
  noCooperative.cooperative = 0;
  configure(noCooperative);
  loomrt::Device old("cuda", 0);
  EXPECT_ERROR(load(old.get(), "chain", &program), LOOMRT_ERROR_RESOURCES,
               device0_ +
                   " does not support cooperative launches; program 'chain' "
                   "needs one to have all 3 worker blocks resident at once");
}

TEST_F(FakeCuda, BadArtifacts) {
  {
    loomrt::Device device("cuda", 0);
    loomrt_program *program = nullptr;
    const std::string a = "'" + artifact_ + "'";
    EXPECT_ERROR(load(device.get(), "nokernel", &program),
                 LOOMRT_ERROR_LOAD_FAILED,
                 "cuda program " + a +
                     ": its code object has no kernel named "
                     "'loom_missing_kernel' (kernel_name must be the extern "
                     "\"C\" symbol)");
    EXPECT_ERROR(load(device.get(), "badimage", &program),
                 LOOMRT_ERROR_LOAD_FAILED,
                 device0_ + ": cannot load the code object of " + a +
                     " (sm_90a, 32 bytes): CUDA_ERROR_INVALID_IMAGE (device "
                     "kernel image is invalid)");
    EXPECT_ERROR(load(device.get(), "badabi", &program),
                 LOOMRT_ERROR_ABI_MISMATCH,
                 "cuda program " + a + " has device ABI version " +
                     std::to_string(LOOM_DEVICE_ABI_VERSION + 1) +
                     "; this runtime reads versions 3 to " +
                     std::to_string(LOOM_DEVICE_ABI_VERSION) + " (rebuild it)");
    EXPECT_ERROR(load(device.get(), "badflags", &program),
                 LOOMRT_ERROR_INVALID_PROGRAM,
                 "cuda program " + a +
                     ": flags has unknown bits (128; known: 1 = profiled, 2 "
                     "= inline bindings)");
    EXPECT_ERROR(load(device.get(), "badprogabi", &program),
                 LOOMRT_ERROR_ABI_MISMATCH,
                 "cuda program " + a +
                     " has program ABI version 2; this runtime reads version "
                     "1 (rebuild it)");
    EXPECT_ERROR(load(device.get(), "null", &program), LOOMRT_ERROR_LOAD_FAILED,
                 "cuda program " + a + ": loom_device_program() returned null");
    const std::string host = testFile(LOOM_RT_TESTPROG_GOOD);
    EXPECT_ERROR(loomrt_program_load(device.get(), host.c_str(), 0, &program),
                 LOOMRT_ERROR_LOAD_FAILED,
                 "cuda program '" + host +
                     "' does not export 'loom_device_program' (it is a host "
                     "program: load it on a \"host\" device)");
    EXPECT_ERROR(
        loomrt_program_load(device.get(), "/nonexistent/mla.so", 0, &program),
        LOOMRT_ERROR_LOAD_FAILED,
        "cannot load cuda program '/nonexistent/mla.so': No such "
        "file or directory");
    LoomProgramDesc desc{};
    EXPECT_ERROR(loomrt_program_from_desc(device.get(), &desc, 0, &program),
                 LOOMRT_ERROR_INVALID_ARGUMENT,
                 device0_ + ": loomrt_program_from_desc takes a host task "
                            "table (bodies in run_task); a cuda program is a "
                            "device artifact: use loomrt_program_load");
    EXPECT_EQ(program, nullptr);
  }
  expectNoLeaks();
}

TEST_F(FakeCuda, BindingsAreChecked) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "chain", raw, program);
  EXPECT_ERROR(loomrt_launch(raw), LOOMRT_ERROR_NOT_BOUND,
               "program 'chain' cannot launch: buffers not bound: 'x' (index "
               "0)");
  EXPECT_ERROR(loomrt_program_bind(raw, 0, nullptr, nullptr, 0),
               LOOMRT_ERROR_BINDING,
               "program 'chain': cannot bind buffer 'x' (index 0, i64[7]): "
               "data is null");
  int64_t dims[] = {8};
  loomrt::Memory x = device.alloc(64);
  EXPECT_ERROR(loomrt_program_bind(raw, 0, x.get(), dims, 1),
               LOOMRT_ERROR_BINDING,
               "program 'chain': cannot bind buffer 'x' (index 0, i64[7]): "
               "dim 0 is 8, declared 7");
}

TEST_F(FakeCuda, BoundMemoryIsCheckedAtLaunch) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "chain", raw, program);
  // Host memory on a GPU would fault the whole context.
  std::vector<int64_t> host(7);
  program.bind("x", host.data());
  EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_BINDING,
                   "program 'chain' launch 1: buffer 'x' (index 0, i64[7]) "
                   "bound to ");
  EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_BINDING,
                   " with dims [7] (56 bytes) is not memory the CUDA driver "
                   "knows (CUDA_ERROR_INVALID_VALUE (invalid argument)): "
                   "bind memory from loomrt_malloc on " +
                       device0_);
  // Too small: the kernel would write past it.
  loomrt::Memory small = device.alloc(48);
  program.bind("x", small.get());
  EXPECT_ERROR_HAS(loomrt_launch(raw), LOOMRT_ERROR_BINDING,
                   " with dims [7] (56 bytes) runs past the end of its "
                   "allocation (48 bytes from ");
  // Inside a larger allocation is fine; a refused launch does not fail the
  // program.
  loomrt::Memory big = device.alloc(1024);
  program.bind("x", static_cast<char *>(big.get()) + 512);
  program.run();
  EXPECT_EQ(program.epoch(), 1u);
  // An unchanged binding is checked again once memory was freed: it may
  // dangle, or point into a smaller allocation made since at its address.
  loomrt::Memory other = device.alloc(56);
  program.bind("x", other.get());
  program.run();
  other.reset();
  loomrt::Memory reused = device.alloc(16);
  EXPECT_EQ(loomrt_launch(raw), LOOMRT_ERROR_BINDING) << loomrt_last_error();
}

//===----------------------------------------------------------------------===//
// Launches on the caller's stream (loomrt_launch_on_stream), on the fake
//===----------------------------------------------------------------------===//

/// A stream of the caller's (a framework's) made by the fake driver: its
/// launches queue behind each other. Made after a loomrt call on this
/// thread, which made the device's context current.
class CallerStream {
public:
  explicit CallerStream(void *driver) {
    create_ = reinterpret_cast<Create>(::dlsym(driver, "cuStreamCreate"));
    destroy_ = reinterpret_cast<Call>(::dlsym(driver, "cuStreamDestroy_v2"));
    sync_ = reinterpret_cast<Call>(::dlsym(driver, "cuStreamSynchronize"));
    EXPECT_TRUE(create_ && destroy_ && sync_);
    EXPECT_EQ(create_(&stream_, 0), CUDA_SUCCESS);
  }
  ~CallerStream() { EXPECT_EQ(destroy_(stream_), CUDA_SUCCESS); }
  CallerStream(const CallerStream &) = delete;
  CallerStream &operator=(const CallerStream &) = delete;

  void *get() const { return stream_; }
  /// Waits for `stream` (null: the legacy default stream).
  void synchronize(void *stream) const {
    EXPECT_EQ(sync_(stream), CUDA_SUCCESS);
  }
  void synchronize() const { synchronize(stream_); }

private:
  using Create = CUresult (*)(void **, unsigned);
  using Call = CUresult (*)(void *);
  Create create_ = nullptr;
  Call destroy_ = nullptr, sync_ = nullptr;
  void *stream_ = nullptr;
};

TEST_F(FakeCuda, StreamLaunchNeedsAKernelThatTakesItsBindings) {
  EXPECT_ERROR(loomrt_launch_on_stream(nullptr, nullptr),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "loomrt_launch_on_stream: program is null");
  EXPECT_ERROR(loomrt_program_check(nullptr), LOOMRT_ERROR_INVALID_ARGUMENT,
               "loomrt_program_check: program is null");
  loomrt::Device device("cuda", 0);
  const std::string why = "('" + artifact_ +
                          "') cannot launch on a stream: its kernel reads its "
                          "bindings from device memory the runtime fills "
                          "before each launch";
  loomrt_program *raw = nullptr;
  ASSERT_EQ(load(device.get(), "chain", &raw), LOOMRT_SUCCESS);
  {
    loomrt::Program program(raw);
    EXPECT_ERROR(loomrt_launch_on_stream(raw, nullptr),
                 LOOMRT_ERROR_UNSUPPORTED,
                 "program 'chain' " + why +
                     " (its flags lack LOOM_DEVICE_INLINE_BINDINGS)");
    EXPECT_EQ(loomrt_program_check(raw), LOOMRT_SUCCESS); // none to check
  }
  // Version 3 artifacts still load and run; they take no bindings by value.
  ASSERT_EQ(load(device.get(), "abi3", &raw), LOOMRT_SUCCESS)
      << loomrt_last_error();
  loomrt::Program program(raw);
  Chain chain(device.get(), raw);
  EXPECT_ERROR(loomrt_launch_on_stream(raw, nullptr), LOOMRT_ERROR_UNSUPPORTED,
               "program 'chain' ('" + artifact_ +
                   "') cannot launch on a stream: it was built for device "
                   "ABI version 3, whose kernels read their bindings from "
                   "device memory the runtime fills before each launch "
                   "(rebuild it with a newer loomc)");
  program.run();
  EXPECT_EQ(chain.read()[6], 107);
  EXPECT_EQ(stats().launches, 1); // nothing was queued
}

TEST_F(FakeCuda, StreamLaunchesNumberThemselves) {
  // Static and dynamic schedules: the queue counter goes on across both
  // kinds of launch too.
  for (const char *variant : {"inline", "inline-dynamic"}) {
    SCOPED_TRACE(variant);
    {
      loomrt::Device device("cuda", 0);
      LOAD_PROGRAM(device.get(), variant, raw, program);
      EXPECT_ERROR(loomrt_launch_on_stream(raw, nullptr),
                   LOOMRT_ERROR_NOT_BOUND,
                   "program '" + std::string(program.desc().name) +
                       "' cannot launch: buffers not bound: 'x' (index 0)");
      Chain chain(device.get(), raw);
      CallerStream stream(handle_);
      const int before = stats().launches;

      // Back to back, no host in between; the kernel numbers them.
      for (int i = 0; i < 3; ++i)
        program.launchOnStream(stream.get());
      EXPECT_EQ(loomrt_synchronize(raw), LOOMRT_SUCCESS); // not its business
      stream.synchronize();
      program.checkLaunches();
      EXPECT_EQ(chain.read()[6], 307);
      EXPECT_EQ(program.epoch(), 3u);
      for (int32_t e = 0; e < 7; ++e)
        EXPECT_EQ(program.eventCount(e), 3u);
      EXPECT_EQ(stats().last_epoch, 0u);
      EXPECT_EQ(stats().launches, before + 3);

      // The runtime's own launches: numbered on the device from now on, so
      // the control words stay right for launches the runtime never sees
      // (a graph's replays).
      program.run();
      EXPECT_EQ(chain.read()[6], 407);
      EXPECT_EQ(program.epoch(), 4u);
      EXPECT_EQ(stats().last_epoch, 0u);

      // A launch still in flight is waited for.
      program.launch();
      program.launchOnStream(stream.get());
      stream.synchronize();
      program.checkLaunches();
      EXPECT_EQ(chain.read()[6], 607);
      EXPECT_EQ(program.epoch(), 6u);

      // The legacy default stream.
      program.launchOnStream(nullptr);
      program.launchOnStream(nullptr);
      stream.synchronize(nullptr);
      program.checkLaunches();
      EXPECT_EQ(chain.read()[6], 807);
      EXPECT_EQ(program.epoch(), 8u);
      for (int32_t e = 0; e < 7; ++e)
        EXPECT_EQ(program.eventCount(e), 8u);
      EXPECT_EQ(stats().calls_without_context, 0);
    }
    expectNoLeaks();
  }
}

TEST_F(FakeCuda, LaunchesTheRuntimeDoesNotSeeAreCounted) {
  // What a CUDA graph does: launch captured launches again, any number of
  // times, without the runtime.
  auto replay = reinterpret_cast<LoomFakeCudaReplayFn>(
      ::dlsym(handle_, LOOM_FAKE_CUDA_REPLAY));
  ASSERT_NE(replay, nullptr);
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline", raw, program);
  Chain chain(device.get(), raw);
  CallerStream stream(handle_);
  program.run();                                 // 1, numbered by the runtime
  program.launchOnStream(stream.get());          // 2
  ASSERT_EQ(replay(stream.get()), CUDA_SUCCESS); // 3
  ASSERT_EQ(replay(stream.get()), CUDA_SUCCESS); // 4
  stream.synchronize();
  program.checkLaunches();
  EXPECT_EQ(program.epoch(), 4u);
  EXPECT_EQ(chain.read()[6], 407);
  // Unseen launches after the runtime's own, then the runtime's again: the
  // control words are always current.
  program.run(); // 5
  EXPECT_EQ(chain.read()[6], 507);
  ASSERT_EQ(replay(stream.get()), CUDA_SUCCESS); // 6
  stream.synchronize();
  program.run(); // 7
  EXPECT_EQ(chain.read()[6], 707);
  EXPECT_EQ(program.epoch(), 7u);
  ASSERT_EQ(replay(stream.get()), CUDA_SUCCESS); // 8
  stream.synchronize();
  program.checkLaunches();
  EXPECT_EQ(program.epoch(), 8u);
  EXPECT_EQ(chain.read()[6], 807);
  for (int32_t e = 0; e < 7; ++e)
    EXPECT_EQ(program.eventCount(e), 8u);
}

TEST_F(FakeCuda, StreamLaunchesKeepTheirBindings) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline-slow", raw, program);
  Chain first(device.get(), raw), second(device.get(), raw);
  CallerStream stream(handle_);
  // Launch 1 takes 300 ms, so launch 2 starts long after x is rebound: it
  // still writes where x was bound when it was queued.
  program.bind("x", first.x);
  program.launchOnStream(stream.get());
  program.launchOnStream(stream.get());
  program.bind("x", second.x);
  program.launchOnStream(stream.get());
  stream.synchronize();
  program.checkLaunches();
  EXPECT_EQ(first.read()[0], 201);
  EXPECT_EQ(second.read()[0], 301);
}

TEST_F(FakeCuda, StreamLaunchesAreCheckedOnceSynchronized) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline-slow", raw, program);
  Chain chain(device.get(), raw);
  CallerStream stream(handle_);
  program.launchOnStream(stream.get());
  const std::string running =
      "program 'slow' on " + device0_ +
      ": 0 launches have completed of at least 1 queued: launches on a "
      "stream are still waiting or running (synchronize the stream before "
      "checking)";
  EXPECT_ERROR(loomrt_program_check(raw), LOOMRT_ERROR_NOT_READY, running);
  EXPECT_ERROR(loomrt_launch(raw), LOOMRT_ERROR_NOT_READY, running);
  stream.synchronize();
  EXPECT_EQ(loomrt_program_check(raw), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_EQ(program.epoch(), 1u);
  EXPECT_EQ(chain.read()[0], 101);
}

TEST_F(FakeCuda, FailedStreamLaunchIsReportedAndReset) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline-fail", raw, program);
  Chain chain(device.get(), raw);
  CallerStream stream(handle_);
  // The first fails; the second sees the failure word and does nothing.
  program.launchOnStream(stream.get());
  program.launchOnStream(stream.get());
  stream.synchronize();
  EXPECT_EQ(chain.read()[2], 103);
  EXPECT_ERROR(loomrt_program_check(raw), LOOMRT_ERROR_TASK_FAILED,
               "program 'fail' launch 1: task 'fail#3[0]' (id 3) on worker 0 "
               "failed with code 42\n  (program 'fail' on " +
                   device0_ +
                   ", a launch on a stream: its counters are reset, so its "
                   "next launch is launch 1)");
  EXPECT_EQ(program.epoch(), 0u);
  for (int32_t e = 0; e < 7; ++e)
    EXPECT_EQ(program.eventCount(e), 0u);
  EXPECT_EQ(loomrt_program_check(raw), LOOMRT_SUCCESS); // reported once

  // The program launches again, from 1; on a stream too.
  program.launchOnStream(stream.get());
  stream.synchronize();
  EXPECT_ERROR_HAS(loomrt_program_check(raw), LOOMRT_ERROR_TASK_FAILED,
                   "program 'fail' launch 1: task 'fail#3[0]'");
  ASSERT_EQ(loomrt_launch(raw), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_ERROR(loomrt_synchronize(raw), LOOMRT_ERROR_TASK_FAILED,
               "program 'fail' launch 1: task 'fail#3[0]' (id 3) on worker 0 "
               "failed with code 42");
  // A failure of loomrt_launch's own stays sticky.
  EXPECT_EQ(loomrt_launch_on_stream(raw, stream.get()),
            LOOMRT_ERROR_PROGRAM_FAILED);
}

TEST_F(FakeCuda, FirstStreamLaunchAfterLaunchIsNotCaptured) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline", raw, program);
  Chain chain(device.get(), raw);
  CallerStream stream(handle_);
  program.run();
  LoomFakeCudaConfig capturing = defaults();
  capturing.streams_capturing = 1;
  configure(capturing);
  EXPECT_ERROR(loomrt_launch_on_stream(raw, stream.get()),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'inline': its first launch on a stream after "
               "loomrt_launch cannot be captured into a CUDA graph: it first "
               "stores the launches so far (1) in the kernel's control words, "
               "a synchronous copy that a capture must not contain. Launch it "
               "on the stream once before capturing");
  configure(defaults());
  program.launchOnStream(stream.get());
  // Then captures are fine; a captured launch is not counted as queued
  // (it runs when the graph does; the fake runs it at once).
  configure(capturing);
  program.launchOnStream(stream.get());
  configure(defaults());
  stream.synchronize();
  program.checkLaunches();
  EXPECT_EQ(program.epoch(), 3u);
  EXPECT_EQ(chain.read()[6], 307);
}

TEST_F(FakeCuda, StreamLaunchBindingsAreChecked) {
  loomrt::Device device("cuda", 0);
  LOAD_PROGRAM(device.get(), "inline", raw, program);
  std::vector<int64_t> host(7);
  program.bind("x", host.data());
  EXPECT_ERROR_HAS(loomrt_launch_on_stream(raw, nullptr), LOOMRT_ERROR_BINDING,
                   "program 'inline' launch on a stream: buffer 'x' (index 0, "
                   "i64[7]) bound to ");
  EXPECT_EQ(stats().launches, 0);
}

//===----------------------------------------------------------------------===//
// A real GPU (label `gpu`)
//===----------------------------------------------------------------------===//

/// Empty when a real cuda device 0 is there; otherwise why not.
std::string whyNoGpu() {
  int count = 0;
  loomrt_status s = loomrt_device_count("cuda", &count);
  if (s == LOOMRT_ERROR_BACKEND_UNAVAILABLE &&
      std::string(loomrt_last_error()).find("cannot load libcuda.so.1") !=
          std::string::npos)
    return "no CUDA driver (libcuda.so.1 not found)";
  if (s != LOOMRT_SUCCESS)
    return std::string("the CUDA driver is unusable: ") + loomrt_last_error();
  if (count == 0)
    return "no CUDA device (the driver sees none)";
  return std::string();
}

#define SKIP_WITHOUT_GPU()                                                     \
  ScopedEnv realDriver(kCudaDriverEnv, nullptr);                               \
  if (std::string why = whyNoGpu(); !why.empty())                              \
  GTEST_SKIP() << why

/// `path`: the GPU artifact the test runs (scripts/gpu-check passes one),
/// built by loomc; its kernel must tolerate zeroed integer inputs.
#define SKIP_WITHOUT_ARTIFACT(path)                                            \
  const char *path = std::getenv("LOOM_CUDA_TEST_ARTIFACT");                   \
  if (!path || !*path)                                                         \
  GTEST_SKIP() << "LOOM_CUDA_TEST_ARTIFACT is not set (a GPU artifact "        \
                  "built by loomc, e.g. .gpu/artifacts/qwen3_8b.h200.so from " \
                  "scripts/gpu-prepare)"

TEST(CudaGpu, DeviceAndMemory) {
  SKIP_WITHOUT_GPU();
  loomrt::Device device("cuda", 0);
  std::printf("%s\n", device.describe());
  EXPECT_EQ(std::string(device.describe()).rfind("cuda device 0 (", 0), 0u);
  const size_t n = 1 << 20;
  std::vector<uint32_t> host(n), back(n, 0);
  for (size_t i = 0; i < n; ++i)
    host[i] = static_cast<uint32_t>(i * 2654435761u);
  loomrt::Memory a = device.alloc(n * 4), b = device.alloc(n * 4);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 256, 0u);
  device.copy(a.get(), host.data(), n * 4, LOOMRT_COPY_HOST_TO_DEVICE);
  device.copy(b.get(), a.get(), n * 4, LOOMRT_COPY_DEVICE_TO_DEVICE);
  device.copy(back.data(), b.get(), n * 4, LOOMRT_COPY_DEVICE_TO_HOST);
  EXPECT_EQ(back, host);
  device.fill(b.get(), 0xFF, 16);
  device.copy(back.data(), b.get(), n * 4); // direction inferred
  EXPECT_EQ(back[0], 0xFFFFFFFFu);
  EXPECT_EQ(back[4], host[4]);
  std::thread([&] {
    loomrt::Memory c = device.alloc(256);
    device.fill(c.get(), 0, 256);
  }).join();
}

/// What an event must hold after `launches` complete launches: its needs
/// per launch; for the bodies' own arrival counters (needs 0: one-phase
/// gqa_decode's per pair, mla_decode's per request) kLaunchArrivals per
/// launch (kernels/common/ArrivalCounters.h) once a task arrives on them
/// each launch, and nothing if none ever did (`count`, what it holds, tells
/// which).
uint64_t expectedEventCount(uint64_t count, int32_t needs, uint64_t launches) {
  if (needs == 0 && count != 0)
    return launches * loom::kLaunchArrivals;
  return launches * static_cast<uint64_t>(needs);
}

TEST(CudaGpu, RunsTheGivenArtifact) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ARTIFACT(path);
  int launches = 10;
  if (const char *n = std::getenv("LOOM_CUDA_TEST_LAUNCHES"))
    launches = std::max(1, std::atoi(n));
  loomrt::Device device("cuda", 0);
  loomrt::Program program = device.load(path);
  const LoomProgramDesc &desc = program.desc();
  std::printf("%s: program '%s' (%d workers, %d tasks, %d events) on %s\n",
              path, desc.name, desc.num_workers, desc.num_tasks,
              desc.num_events, device.describe());
  // Inputs zeroed (page tables and lengths of 0 are valid), outputs
  // poisoned; every buffer at its bound.
  std::vector<loomrt::Memory> buffers;
  for (int32_t i = 0; i < program.numBuffers(); ++i) {
    const LoomBufferDesc &b = program.buffer(i);
    size_t bytes = std::max<size_t>(program.bufferBytes(i), 1);
    buffers.push_back(device.alloc(bytes));
    device.fill(buffers.back().get(), b.role == LOOM_ROLE_OUTPUT ? 0xFF : 0,
                bytes);
    std::vector<int64_t> dims(b.dims, b.dims + b.rank);
    for (int64_t &d : dims)
      d = d < 0 ? b.bound : d;
    program.bind(i, buffers.back().get(), dims);
  }
  for (int e = 1; e <= launches; ++e) {
    program.run();
    EXPECT_EQ(program.epoch(), static_cast<uint64_t>(e));
  }
  for (int32_t e = 0; e < desc.num_events; ++e)
    EXPECT_EQ(program.eventCount(e),
              expectedEventCount(program.eventCount(e), desc.event_needs[e],
                                 static_cast<uint64_t>(launches)))
        << "event " << e;
  EXPECT_GT(program.lastLaunchNs(), 0u);
  std::printf("last launch: %.3f us\n", program.lastLaunchNs() / 1e3);
}

/// The buffers of a GPU artifact, each at its bound: floating-point inputs
/// (weights and caches too) random and non-zero, integer ones zero (page
/// tables and lengths of 0 are valid, as in RunsTheGivenArtifact), outputs
/// poisoned (0xFF: NaN for floats).
class GpuBuffers {
public:
  GpuBuffers(loomrt::Device &device, loomrt::Program &program)
      : device_(device), program_(program) {
    std::mt19937 random(20261202);
    for (int32_t i = 0; i < program.numBuffers(); ++i) {
      const LoomBufferDesc &b = program.buffer(i);
      const size_t bytes = std::max<size_t>(program.bufferBytes(i), 1);
      memory_.push_back(device.alloc(bytes));
      bytes_.push_back(bytes);
      // A repeating random tile: a 1 GiB cache need not be made on the host.
      std::vector<unsigned char> tile(std::min<size_t>(bytes, kTileBytes), 0);
      if (b.role != LOOM_ROLE_OUTPUT)
        fillNonZero(b.elem, &tile, random);
      tiles_.push_back(std::move(tile));
      std::vector<int64_t> dims(b.dims, b.dims + b.rank);
      for (int64_t &d : dims)
        d = d < 0 ? b.bound : d;
      program.bind(i, memory_.back().get(), dims);
    }
  }

  /// Inputs back to their first contents (a launch may write its caches),
  /// outputs poisoned: every run starts from the same state.
  void reset() {
    for (size_t i = 0; i < memory_.size(); ++i) {
      auto *at = static_cast<unsigned char *>(memory_[i].get());
      if (program_.buffer(static_cast<int32_t>(i)).role == LOOM_ROLE_OUTPUT) {
        device_.fill(at, 0xFF, bytes_[i]);
        continue;
      }
      for (size_t done = 0; done < bytes_[i]; done += tiles_[i].size())
        device_.copy(at + done, tiles_[i].data(),
                     std::min(tiles_[i].size(), bytes_[i] - done),
                     LOOMRT_COPY_HOST_TO_DEVICE);
    }
  }

  /// Every output's bytes, in buffer order.
  std::vector<std::vector<unsigned char>> outputs() {
    std::vector<std::vector<unsigned char>> out;
    for (size_t i = 0; i < memory_.size(); ++i)
      if (program_.buffer(static_cast<int32_t>(i)).role == LOOM_ROLE_OUTPUT) {
        out.emplace_back(bytes_[i]);
        device_.copy(out.back().data(), memory_[i].get(), bytes_[i],
                     LOOMRT_COPY_DEVICE_TO_HOST);
      }
    return out;
  }

  /// The output buffers, in the order outputs() returns them.
  std::vector<const LoomBufferDesc *> outputDescs() const {
    std::vector<const LoomBufferDesc *> out;
    for (int32_t i = 0; i < program_.numBuffers(); ++i)
      if (program_.buffer(i).role == LOOM_ROLE_OUTPUT)
        out.push_back(&program_.buffer(i));
    return out;
  }

private:
  static constexpr size_t kTileBytes = 1 << 20;

  /// Values in +-[0.25, 1) in the element type; integers stay zero.
  static void fillNonZero(int32_t elem, std::vector<unsigned char> *tile,
                          std::mt19937 &random) {
    std::uniform_real_distribution<float> magnitude(0.25f, 1.0f);
    auto next = [&] {
      const float v = magnitude(random);
      return random() & 1 ? -v : v;
    };
    unsigned char *at = tile->data();
    const size_t size = tile->size();
    if (elem == LOOM_ELEM_F32)
      for (size_t i = 0; i + 4 <= size; i += 4) {
        const float v = next();
        std::memcpy(at + i, &v, 4);
      }
    if (elem == LOOM_ELEM_BF16 || elem == LOOM_ELEM_F16)
      for (size_t i = 0; i + 2 <= size; i += 2) {
        const float v = next();
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t half;
        if (elem == LOOM_ELEM_BF16) {
          half = static_cast<uint16_t>(bits >> 16);
        } else {
          // Normal f16 (|v| in [2^-2, 1)): rebias the exponent.
          const uint32_t exponent = ((bits >> 23) & 0xFF) - 127 + 15;
          half =
              static_cast<uint16_t>(((bits >> 16) & 0x8000) | (exponent << 10) |
                                    ((bits >> 13) & 0x3FF));
        }
        std::memcpy(at + i, &half, 2);
      }
  }

  loomrt::Device &device_;
  loomrt::Program &program_;
  std::vector<loomrt::Memory> memory_;
  std::vector<size_t> bytes_;
  std::vector<std::vector<unsigned char>> tiles_;
};

/// One element of a buffer as a double (integers exactly).
double elementAt(const LoomBufferDesc &b, const unsigned char *data,
                 size_t index) {
  switch (b.elem) {
  case LOOM_ELEM_F32: {
    float v;
    std::memcpy(&v, data + 4 * index, 4);
    return v;
  }
  case LOOM_ELEM_BF16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * index, 2);
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case LOOM_ELEM_F16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * index, 2);
    const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    const double sign = h & 0x8000 ? -1.0 : 1.0;
    if (exponent == 0x1F)
      return mantissa ? std::nan("") : sign * INFINITY;
    if (exponent == 0)
      return sign * std::ldexp(mantissa, -24);
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
  }
  case LOOM_ELEM_I32: {
    int32_t v;
    std::memcpy(&v, data + 4 * index, 4);
    return v;
  }
  case LOOM_ELEM_I64: {
    int64_t v;
    std::memcpy(&v, data + 8 * index, 8);
    return static_cast<double>(v);
  }
  }
  return std::nan("");
}

/// Compares `got` with `want` (the runtime's own launches), element by
/// element: floats within 2% (reductions may add in another order), NaN
/// only where the reference has NaN, integers exactly.
void expectSameOutputs(const std::vector<const LoomBufferDesc *> &descs,
                       const std::vector<std::vector<unsigned char>> &want,
                       const std::vector<std::vector<unsigned char>> &got,
                       const std::string &run) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const LoomBufferDesc &b = *descs[i];
    const size_t n = want[i].size() / loomrt_elem_bytes(b.elem);
    size_t wrong = 0;
    std::string first;
    for (size_t k = 0; k < n; ++k) {
      const double w = elementAt(b, want[i].data(), k);
      const double g = elementAt(b, got[i].data(), k);
      const bool same =
          std::isnan(w)   ? std::isnan(g)
          : std::isinf(w) ? g == w
          : b.elem >= LOOM_ELEM_I32
              ? g == w
              : std::fabs(g - w) <= 2e-2 * std::max(1.0, std::fabs(w));
      if (!same && wrong++ == 0)
        first = "[" + std::to_string(k) + "] is " + std::to_string(g) +
                ", the runtime's launches give " + std::to_string(w);
    }
    EXPECT_EQ(wrong, 0u) << run << ": output '" << b.name << "' differs in "
                         << wrong << " of " << n
                         << " elements; first: " << first;
  }
}

/// Some output of the reference is not the poison: a run that writes
/// nothing cannot match it.
bool anyWritten(const std::vector<std::vector<unsigned char>> &outputs) {
  for (const auto &bytes : outputs)
    for (unsigned char c : bytes)
      if (c != 0xFF)
        return true;
  return false;
}

TEST(CudaGpu, StreamLaunchesAndGraphReplay) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ARTIFACT(path);
  loomrt::Device device("cuda", 0);
  loomrt::Program program = device.load(path);
  const LoomProgramDesc &desc = program.desc();
  GpuBuffers buffers(device, program);
  const std::vector<const LoomBufferDesc *> outputs = buffers.outputDescs();
  ASSERT_FALSE(outputs.empty())
      << "program '" << desc.name << "' has no output to compare";
  auto expectCounts = [&](uint64_t launches, const char *when) {
    EXPECT_EQ(program.epoch(), launches) << when;
    for (int32_t e = 0; e < desc.num_events; ++e)
      ASSERT_EQ(program.eventCount(e),
                expectedEventCount(program.eventCount(e), desc.event_needs[e],
                                   launches))
          << when << ": event " << e;
  };

  // The references: the runtime's own launches, from the same state.
  auto runtimeRun = [&](int launches) {
    buffers.reset();
    for (int i = 0; i < launches; ++i)
      program.run();
    return buffers.outputs();
  };
  const auto ref3 = runtimeRun(3);
  const auto ref10 = runtimeRun(10);
  ASSERT_TRUE(anyWritten(ref3)) << "every output byte of '" << desc.name
                                << "' stays poisoned: nothing to compare";
  expectCounts(13, "after the runtime's launches");

  const CudaDriver *driver = nullptr;
  ASSERT_TRUE(loadCudaDriver(&driver).ok());
  const CudaDriver &d = *driver;
  ASSERT_TRUE(d.cuStreamBeginCapture && d.cuStreamEndCapture &&
              d.cuGraphInstantiate && d.cuGraphLaunch && d.cuGraphExecDestroy &&
              d.cuGraphDestroy)
      << d.path << " lacks the CUDA graph API";
  // The caller's stream (the loomrt calls above made the device's primary
  // context current on this thread).
  CUstream stream = nullptr;
  ASSERT_EQ(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  struct Release {
    const CudaDriver &d;
    CUstream &stream;
    CUgraph &graph;
    CUgraphExec &exec;
    ~Release() {
      if (exec)
        (void)d.cuGraphExecDestroy(exec);
      if (graph)
        (void)d.cuGraphDestroy(graph);
      if (stream)
        (void)d.cuStreamDestroy(stream);
    }
  } release{d, stream, graph, exec};

  // (a) Three launches back to back on the stream, no host wait between.
  buffers.reset();
  for (int i = 0; i < 3; ++i)
    program.launchOnStream(stream);
  ASSERT_EQ(d.cuStreamSynchronize(stream), CUDA_SUCCESS);
  program.checkLaunches();
  expectSameOutputs(outputs, ref3, buffers.outputs(), "3 launches on a stream");
  expectCounts(16, "after 3 launches on a stream");

  // (b) Ten launches captured into a graph, replayed twice.
  ASSERT_EQ(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  for (int i = 0; i < 10; ++i)
    if (loomrt_launch_on_stream(program.get(), stream) != LOOMRT_SUCCESS) {
      ADD_FAILURE() << "captured launch " << i << ": " << loomrt_last_error();
      break;
    }
  ASSERT_EQ(d.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  ASSERT_EQ(d.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  for (int replay = 1; replay <= 2; ++replay) {
    const std::string run = "graph replay " + std::to_string(replay);
    buffers.reset();
    const auto start = Clock::now();
    ASSERT_EQ(d.cuGraphLaunch(exec, stream), CUDA_SUCCESS) << run;
    ASSERT_EQ(d.cuStreamSynchronize(stream), CUDA_SUCCESS) << run;
    const double us =
        std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    EXPECT_EQ(loomrt_program_check(program.get()), LOOMRT_SUCCESS)
        << run << ": " << loomrt_last_error();
    expectSameOutputs(outputs, ref10, buffers.outputs(), run);
    expectCounts(16 + 10 * replay, run.c_str());
    std::printf("%s: 10 launches in %.1f us (%.2f us each)\n", run.c_str(), us,
                us / 10);
  }

  // (c) Back to the runtime's launches: they go on from the device's count.
  const auto again = runtimeRun(3);
  expectSameOutputs(outputs, ref3, again, "3 runtime launches after");
  expectCounts(39, "after the switch back");
}

} // namespace
