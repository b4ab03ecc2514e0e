//===- Error.cpp - Status values and the per-thread last error ------------===//

#include "runtime/src/Error.h"

namespace loom {
namespace rt {

namespace {
// One slot per thread, so concurrent callers never see each other's errors
// and the returned pointer stays valid until this thread fails again.
thread_local std::string lastErrorMessage;
} // namespace

std::string quoted(const char *text) {
  if (!text)
    return "<null>";
  return quoted(std::string(text));
}

std::string quoted(const std::string &text) { return "'" + text + "'"; }

loomrt_status publish(const Status &status) {
  if (!status.ok())
    lastErrorMessage = status.message();
  return status.code();
}

const char *lastError() { return lastErrorMessage.c_str(); }

const char *statusName(loomrt_status status) {
  switch (status) {
#define LOOMRT_STATUS_CASE(name)                                               \
  case name:                                                                   \
    return #name;
    LOOMRT_STATUS_CASE(LOOMRT_SUCCESS)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_INVALID_ARGUMENT)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_UNKNOWN_DEVICE)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_BACKEND_UNAVAILABLE)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_LOAD_FAILED)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_ABI_MISMATCH)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_INVALID_PROGRAM)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_NOT_FOUND)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_BINDING)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_NOT_BOUND)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_OUT_OF_MEMORY)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_RESOURCES)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_TIMEOUT)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_TASK_FAILED)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_PROGRAM_FAILED)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_BUSY)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_NOT_READY)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_DEVICE)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_UNSUPPORTED)
    LOOMRT_STATUS_CASE(LOOMRT_ERROR_INTERNAL)
#undef LOOMRT_STATUS_CASE
  }
  return "LOOMRT_UNKNOWN_STATUS";
}

} // namespace rt
} // namespace loom
