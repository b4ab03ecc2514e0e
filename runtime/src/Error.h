//===- Error.h - Status values and the per-thread last error ----*- C++ -*-===//
//
// Inside the runtime every fallible step returns a Status: a code and a
// finished sentence. The C API boundary stores the sentence in the calling
// thread's last-error slot; errors found on worker threads travel inside a
// Status to whichever thread synchronizes.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_ERROR_H
#define LOOM_RUNTIME_SRC_ERROR_H

#include "loom/loomrt.h"

#include <sstream>
#include <string>
#include <utility>

namespace loom {
namespace rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(loomrt_status code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == LOOMRT_SUCCESS; }
  loomrt_status code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  loomrt_status code_ = LOOMRT_SUCCESS;
  std::string message_;
};

/// Builds a Status whose message is the concatenation of `parts`.
template <typename... Parts>
Status makeError(loomrt_status code, const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status(code, os.str());
}

/// `'text'`, or `<null>` for a null string: names in messages are quoted so
/// empty and odd names stay visible.
std::string quoted(const char *text);
std::string quoted(const std::string &text);

/// Stores `status`'s message as this thread's last error (when it failed)
/// and returns its code.
loomrt_status publish(const Status &status);

/// This thread's last error message ("" if none).
const char *lastError();

/// The enumerator's name, for messages and loomrt_status_name.
const char *statusName(loomrt_status status);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_ERROR_H
