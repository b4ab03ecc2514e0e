//===- MetaFault.cpp - Naming a meta value a body refused -----------------===//

#include "runtime/src/MetaFault.h"

#include "loom/loomrt.h"
#include "runtime/src/Binding.h"
#include "runtime/src/Error.h"

#include <cstdio>
#include <sstream>

namespace loom {
namespace rt {

namespace {

const char *reasonText(int32_t reason) {
  switch (reason) {
  case LOOM_META_PAGE_ID:
    return "a page id outside the cache's pages";
  case LOOM_META_INDPTR:
    return "kv_indptr must be non-decreasing from 0 or more and end within "
           "kv_indices";
  case LOOM_META_KV_LEN:
    return "a length must be at least 0 and fit the request's pages";
  case LOOM_META_SLOT:
    return "a cache slot past the cache's pages x page size (negative "
           "slots are skipped)";
  case LOOM_META_CU_SEQLENS:
    return "cu_seqlens must be non-decreasing from 0 or more and end within "
           "the tokens bound";
  case LOOM_META_CHUNKS:
    return "more chunks than the program's bound on tokens and sequences";
  case LOOM_META_TOKEN_ID:
    return "a token id outside the vocabulary";
  }
  return "a meta value out of range";
}

} // namespace

std::string describeMetaFault(const ProgramTable &table,
                              const std::vector<LoomBinding> &bindings,
                              const LoomMetaFault &fault) {
  std::ostringstream os;
  const auto where = reinterpret_cast<uintptr_t>(fault.where);
  os << "refused ";
  bool named = false;
  for (size_t i = 0; i < bindings.size() &&
                     i < static_cast<size_t>(table.numBuffers());
       ++i) {
    const LoomBufferDesc &desc = table.buffer(static_cast<int32_t>(i));
    const auto base = reinterpret_cast<uintptr_t>(bindings[i].data);
    const size_t elem = loomrt_elem_bytes(desc.elem);
    if (!elem || where < base || where >= base + bindingBytes(desc, bindings[i]))
      continue;
    os << desc.name << "[" << (where - base) / elem << "]";
    named = true;
    break;
  }
  if (!named) {
    char address[32];
    std::snprintf(address, sizeof address, "%#llx",
                  static_cast<unsigned long long>(where));
    os << "the meta value at " << address;
  }
  os << " = " << fault.value << " (" << reasonText(fault.reason) << ")";
  return os.str();
}

} // namespace rt
} // namespace loom
