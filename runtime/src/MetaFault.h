//===- MetaFault.h - Naming a meta value a body refused ---------*- C++ -*-===//
//
// A body that refuses a meta value (kernels/common/MetaGuard.h) reports its
// address and value; the runtime finds the bound buffer holding that address
// and says which entry it was and what it should have been.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_METAFAULT_H
#define LOOM_RUNTIME_SRC_METAFAULT_H

#include "runtime/src/ProgramTable.h"

#include <string>
#include <vector>

namespace loom {
namespace rt {

/// "refused kv_indices[7] = -1 (a page id outside the cache's pages)";
/// a buffer's entry is its flat index. `bindings` (the launch's, may be
/// empty) name the buffer; without them, or for an address in none of
/// them, the address is given instead.
std::string describeMetaFault(const ProgramTable &table,
                              const std::vector<LoomBinding> &bindings,
                              const LoomMetaFault &fault);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_METAFAULT_H
