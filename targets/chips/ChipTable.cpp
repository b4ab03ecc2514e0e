//===- ChipTable.cpp - The chip table ------------------------------------===//
//
// Sources: vendor datasheets (dense bf16 rates without sparsity; SXM/OAM
// parts). The host row is nominal: the host target sizes tasks for a few CPU
// threads, and its numbers only steer the cost model.
//
//===----------------------------------------------------------------------===//
#include "targets/chips/ChipTable.h"

namespace loom {

const std::vector<ChipInfo> &chipTable() {
  // name, arch, vendor, workers, lanes, smem/block, regs/worker, GB/s, TFLOP/s
  static const std::vector<ChipInfo> table = {
      {"h100", "sm_90a", Vendor::Nvidia, 132, 32, 232448, 65536, 3350, 989},
      {"h200", "sm_90a", Vendor::Nvidia, 132, 32, 232448, 65536, 4800, 989},
      {"b200", "sm_100a", Vendor::Nvidia, 148, 32, 232448, 65536, 8000, 2250},
      // MI350X: 4 SIMDs x 512 VGPRs x 64 lanes per CU, 160 KB LDS per CU.
      {"mi350x", "gfx950", Vendor::Amd, 256, 64, 163840, 131072, 8000, 2300},
      {"host", "host", Vendor::Host, 8, 1, 1 << 20, 0, 50, 1},
  };
  return table;
}

const ChipInfo *findChip(const std::string &name) {
  for (const ChipInfo &chip : chipTable())
    if (name == chip.name)
      return &chip;
  return nullptr;
}

bool isKnownArch(const std::string &arch) {
  for (const ChipInfo &chip : chipTable())
    if (arch == chip.arch)
      return true;
  return false;
}

bool vendorOfArch(const std::string &arch, Vendor &vendor) {
  for (const ChipInfo &chip : chipTable())
    if (arch == chip.arch) {
      vendor = chip.vendor;
      return true;
    }
  return false;
}

std::string knownChipNames() {
  std::string names;
  for (const ChipInfo &chip : chipTable()) {
    if (!names.empty())
      names += ", ";
    names += chip.name;
  }
  return names;
}

} // namespace loom
