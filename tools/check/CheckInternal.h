//===- CheckInternal.h - The device session and family checkers -*- C++ -*-===//
//
// Session owns the loomrt device and program and the device memory of every
// buffer; it checks the program's buffers against what the spec says they
// must be, binds them, poisons outputs (with a poisoned guard region after
// each one, checked after the launch), uploads and downloads. A Family
// (MLA, KDA, decoder) draws the inputs of each launch and checks its
// outputs against the oracle.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_CHECK_CHECKINTERNAL_H
#define LOOM_TOOLS_CHECK_CHECKINTERNAL_H

#include "tools/check/Check.h"
#include "tools/check/CheckUtil.h"

#include "loom/loomrt.hpp"

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace loom::check::detail {

/// What the spec says one graph argument is (BuildGraph.cpp); dims < 0 are
/// dynamic.
struct ExpectedBuffer {
  std::string name;
  int32_t role;
  int32_t elem;
  std::vector<int64_t> dims;
};

/// LoomElem of a spec dtype.
int32_t elemOf(loom::spec::DType dtype);

class Session {
public:
  Session(const RunOptions &options, const std::string &programPath);
  ~Session();

  /// Throws unless the program's buffers are exactly `expected` (same names,
  /// roles, element types and dims), listing every difference.
  void expectBuffers(const std::vector<ExpectedBuffer> &expected,
                     const std::string &what);

  const LoomBufferDesc &desc(const std::string &name) const;
  /// The bound of a buffer's dynamic leading dim (0 if static).
  int64_t bound(const std::string &name) const;

  /// Allocates device memory for a buffer (once; `bytes` >= 1). Outputs get
  /// a guard region after them that is poisoned before every launch and
  /// must still be poisoned after it.
  void *allocate(const std::string &name, size_t bytes);
  void *ptr(const std::string &name) const;
  size_t bytes(const std::string &name) const;

  void upload(const std::string &name, const void *src, size_t bytes,
              size_t offsetBytes = 0);
  void upload(const std::string &name, const HostTensor &t,
              size_t offsetBytes = 0) {
    upload(name, t.data(), t.sizeBytes(), offsetBytes);
  }
  /// `dims` elements of `elem` starting at `offsetBytes`.
  HostTensor download(const std::string &name, int32_t elem,
                      std::vector<int64_t> dims, size_t offsetBytes = 0);

  /// Overwrites entry `index` of meta buffer `name` (i32 or i64) with
  /// `value`; throws unless the entry is within the buffer's binding.
  void setMeta(const std::string &name, int64_t index, int64_t value);

  /// Binds at `dims` (after checking each dynamic dim against its bound);
  /// empty `dims` binds a static buffer at its declared dims.
  void bind(const std::string &name, const std::vector<int64_t> &dims = {});

  /// Read-only contents to find unchanged after the launch: `contents` at
  /// `offsetBytes` of buffer `name` (copied), or, for large weights, a hash
  /// of `bytes` bytes there. Per-launch expectations are dropped by
  /// clearExpectations(); persistent ones (weights drawn once) stay.
  void expectUnchanged(const std::string &name, const HostTensor &contents,
                       size_t offsetBytes = 0);
  void expectUnchangedHash(const std::string &name, size_t offsetBytes,
                           size_t bytes);
  void clearExpectations();
  /// Elements (for hashed regions: regions) that differ from the
  /// expectations; `where` names them.
  int64_t changedInputs(std::string *where);

  /// Poisons every output that was bound (its bound bytes and its guard).
  void poisonOutputs();
  /// Elements of the guard regions that lost their poison.
  int64_t damagedGuards(std::string *where);
  /// Elements of the bound outputs that are NaN (floats: any NaN, the
  /// poison included) or the poison pattern (ints): what an unchecked run
  /// can still find wrong, cheaply.
  int64_t unwrittenOutputs(std::string *where);

  /// --rotate: makes `copies - 1` more copies (device to device) of every
  /// allocated input, cache and meta buffer; returns the bytes of one set.
  /// Throws when that would need more than `maxBytes` in all.
  size_t makeRotation(int copies, size_t maxBytes);
  /// Rebinds every rotated buffer to copy `index` % copies (0: the
  /// original) with the dims it was last bound at.
  void bindRotation(int index);
  int rotationCopies() const { return rotation_; }

  /// Launches once and waits; the launch's wall time in ns. Throws
  /// loomrt::Error when the launch fails.
  uint64_t launch();

  std::string programSummary() const;
  loomrt::Device &device() { return device_; }
  loomrt::Program &program() { return program_; }
  const LoomProgramDesc &programDesc() const { return program_.desc(); }
  const std::string &path() const { return path_; }
  /// "cuda device 0 (NVIDIA H200, ...)".
  std::string deviceDescription() const { return device_.describe(); }

private:
  struct Buffer {
    loomrt::Memory memory;
    size_t bytes = 0;
    size_t boundBytes = 0; ///< bytes covered by the current binding
    bool output = false;
    int32_t role = 0;
    std::vector<int64_t> boundDims; ///< of the last bind; empty: static
    std::vector<loomrt::Memory> copies; ///< --rotate: copies 1..K-1
  };
  static constexpr size_t kGuardBytes = 4096;

  struct Expectation {
    std::string name;
    size_t offsetBytes = 0;
    HostTensor contents; ///< empty for a hashed region
    size_t bytes = 0;    ///< hashed regions
    uint64_t hash = 0;
    bool persistent = false;
  };
  uint64_t hashRegion(const std::string &name, size_t offsetBytes,
                      size_t bytes);

  loomrt::Device device_;
  loomrt::Program program_;
  std::string path_;
  std::map<std::string, Buffer> buffers_;
  std::vector<Expectation> expectations_;
  int rotation_ = 1;
};

/// A 64-bit hash of `bytes` bytes (word-wise; for "unchanged" checks only).
uint64_t hashBytes(const void *data, size_t bytes, uint64_t seed = 0);

/// One kernel family's inputs and checks.
class Family {
public:
  virtual ~Family() = default;
  /// The run-time sizes, one line.
  virtual std::string sizes() const = 0;
  /// Draws this launch's inputs, writes them to the device and binds.
  virtual void prepare(Rng &rng, int launch) = 0;
  /// Reads the outputs back and compares them with the oracle.
  virtual void verify(CheckSet &checks, int launch) = 0;
};

std::unique_ptr<Family> makeMlaFamily(Session &session,
                                      const loom::spec::Spec &spec,
                                      const RunOptions &options);
std::unique_ptr<Family> makeKdaFamily(Session &session,
                                      const loom::spec::Spec &spec,
                                      const RunOptions &options);
/// Draws the weights (once, from `rng`) and writes them to the device.
std::unique_ptr<Family> makeDecoderFamily(Session &session,
                                          const loom::spec::Spec &spec,
                                          const RunOptions &options, Rng &rng);

/// Throws std::runtime_error(message).
[[noreturn]] void fail(const std::string &message);

//--- Bench.cpp --------------------------------------------------------------//
/// min / median / p90 (nearest rank) / mean.
TimeStats timeStats(std::vector<double> ms);
/// --bench: warm-up, then options.bench timed launches (rotating the inputs
/// with --rotate); fills report.bench*, describes it on `text`.
void runBench(Session &session, const RunOptions &options, RunReport &report,
              std::ostream &text);
/// --trace: reads the last launch's per-task timing, writes the Chrome trace
/// to options.tracePath and its summary to `text`.
void writeTrace(Session &session, const RunOptions &options,
                const std::string &title, std::ostream &text);
/// The RESULT line's JSON.
std::string resultJson(const loom::spec::Spec &spec, const Session &session,
                       const RunOptions &options, const RunReport &report,
                       const std::string &sizes,
                       const std::vector<double> &launchMs);

} // namespace loom::check::detail

#endif // LOOM_TOOLS_CHECK_CHECKINTERNAL_H
