//===- ChipTable.h - Facts about the chips Loom compiles for ----*- C++ -*-===//
//
// Every per-chip number Loom uses lives in one table (ChipTable.cpp). Passes,
// emitters and the runtime read facts from here instead of branching on chip
// names. This library is plain C++: the runtime links it without LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_CHIPS_CHIPTABLE_H
#define LOOM_TARGETS_CHIPS_CHIPTABLE_H

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

/// The vendor family a chip belongs to; selects the emitter and runtime.
enum class Vendor { Nvidia, Amd, Host };

/// One row of the chip table: the cost model's inputs and the limits the
/// schedule must respect.
struct ChipInfo {
  const char *name;        ///< user-facing name: "h200", "mi350x", "host"
  const char *arch;        ///< code-object architecture: "sm_90a", "gfx950"
  Vendor vendor;
  int64_t workers;         ///< SMs / CUs (one persistent worker each)
  int64_t lanesPerWarp;    ///< warp (NVIDIA) or wavefront (AMD) width
  int64_t smemPerBlock;    ///< bytes of shared memory / LDS one block may use
  int64_t regsPerWorker;   ///< 32-bit registers per SM / CU
  int64_t hbmGBps;         ///< peak memory bandwidth, GB/s
  int64_t bf16Tflops;      ///< peak dense bf16 matrix rate, TFLOP/s
};

/// All known chips, in a stable order.
const std::vector<ChipInfo> &chipTable();

/// The chip with this user-facing name, or nullptr.
const ChipInfo *findChip(const std::string &name);

/// True if `arch` is the architecture of some known chip.
bool isKnownArch(const std::string &arch);

/// The vendor whose code objects `arch` names (sm_90a: Nvidia); false when
/// no chip has that arch.
bool vendorOfArch(const std::string &arch, Vendor &vendor);

/// "h100, h200, b200, mi350x, host" — for error messages and --help.
std::string knownChipNames();

} // namespace loom

#endif // LOOM_TARGETS_CHIPS_CHIPTABLE_H
