//===- Binding.h - Checking bindings against declarations ------*- C++ -*-===//
//
// A wrong shape is the cheapest bug to catch and the most expensive to find
// once a kernel has read past a buffer, so every binding is checked against
// the declared rank, static dims and dynamic bound before it is accepted.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_BINDING_H
#define LOOM_RUNTIME_SRC_BINDING_H

#include "runtime/src/ProgramTable.h"

#include <cstddef>
#include <string>

namespace loom {
namespace rt {

/// "f32[?<=16, 8]": element type and dims, a dynamic dim with its bound.
std::string formatShape(const LoomBufferDesc &buffer);

/// Checks binding `data` with `dims` (`rank` entries; null: the declared
/// static dims) to buffer `index` of `table`, and fills `out`.
Status checkBinding(const ProgramTable &table, int32_t index, void *data,
                    const int64_t *dims, int32_t rank, LoomBinding *out);

/// Bytes of buffer `buffer` with dynamic dims at their bound; fails on
/// overflow.
Status boundBytes(const ProgramTable &table, int32_t index, size_t *bytes);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_BINDING_H
