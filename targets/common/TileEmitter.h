//===- TileEmitter.h - One function per (layer op, phase) --------*- C++ -*-===//
//
// Every target runs a task the same way: compute the tile's range from the
// op's #loom.partition exactly as passes/TaskModel.cpp defines it, clamp it
// to the runtime sizes read from the bindings, and call the op's body with
// compile-time shapes. Only the spelling differs per target (namespace of
// the bodies, function qualifiers, extra arguments such as shared memory),
// which `TileDialect` carries.
//
// By default every (layer op, phase) gets its own function with its buffer
// addresses baked in. With TileDialect::shareFunctions the addresses become
// a table the caller passes (`const LoomAddressRef *r`), and (op, phase)s
// whose code is then the same — a decoder's layers — share one function:
// the source no longer grows with the layer count (AMD inlines every body
// into one kernel, where 32 copies of each would not compile).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_COMMON_TILEEMITTER_H
#define LOOM_TARGETS_COMMON_TILEEMITTER_H

#include "ir/LoomOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::loom {

struct TileDialect {
  std::string bodies;      ///< namespace of the bodies, "loom::host::"
  std::string qualifier;   ///< "static", "static __device__ __forceinline__"
  std::string extraParams; ///< appended to every tile function's parameters
  std::string extraArgs;   ///< appended to every body call's arguments
  std::string bodyTemplate;///< e.g. "<kThreads>": explicit template args of bodies
  /// Bodies return an int32_t status (0: ok) that the tile passes on.
  bool bodiesReturnStatus = false;
  /// Share functions between (op, phase)s, addresses as parameters.
  bool shareFunctions = false;
  /// Qualifiers of the small helpers shared functions use (loomAddress).
  std::string helperQualifier = "static inline";
  /// The type tile functions read bindings as (`.data`, `.dims[0]`).
  std::string bindingType = "LoomBinding";
  /// Tile functions also take the launch's event counters as `events`
  /// (runTask passes args.events), for bodies that keep counters of their
  /// own (kCountersAttr); false: no such body can be emitted.
  bool passEvents = false;
  /// Tile functions take `bool preloaded` last (after the events), and each
  /// (op, phase) whose body can issue loads before its inputs are ready
  /// (the linear ring's first stages; a one-phase gqa_decode split's
  /// mapping and first K/V tiles, when only a kv_append writes its caches
  /// before it) also gets a preload function (preloadFunctionName)
  /// returning that flag. Not with shareFunctions.
  bool preload = false;
};

/// One buffer address a shared tile function takes: the data of binding
/// `binding` (-1: the workspace) plus `offset` bytes. The emitted source
/// declares it as `struct LoomAddressRef { int32_t binding; int64_t offset; }`.
struct TileAddress {
  int64_t binding;
  int64_t offset;
};

/// How one (op, phase) runs in shareFunctions mode: which shared function,
/// with which addresses (its `r[0..n)`).
struct TileCall {
  int64_t function;
  std::vector<TileAddress> addresses;
};

/// (op id, phase) -> its call.
using TileCalls = llvm::DenseMap<std::pair<int64_t, int64_t>, TileCall>;

/// The (op id, phase)s that got a preload function, in emission order.
using TilePreloads = std::vector<std::pair<int64_t, int64_t>>;

/// Writes `static int32_t op<N>_phase<P>(int64_t tile, const <bindingType> *b,
/// char *ws <extraParams>)` for every (layer op, phase) of a scheduled graph.
/// With dialect.shareFunctions, writes LoomAddressRef and loomAddress(), then
/// `tile<F>(int64_t tile, const LoomBinding *b, char *ws,
/// const LoomAddressRef *r <extraParams>)` once per distinct body, and fills
/// `calls` (required then). With dialect.preload, also writes
/// `static bool <preloadFunctionName>(int64_t tile, const <bindingType> *b,
/// char *ws <extraParams>)` where the body has a preload, and lists them in
/// `preloads` (when given).
LogicalResult emitTileFunctions(GraphOp graph, const TileDialect &dialect,
                                llvm::raw_ostream &os,
                                TileCalls *calls = nullptr,
                                TilePreloads *preloads = nullptr);

/// The name of the tile function of (op id, phase).
std::string tileFunctionName(int64_t opId, int64_t phase);

/// The name of the preload function of (op id, phase).
std::string preloadFunctionName(int64_t opId, int64_t phase);

/// The name of shared tile function `index` (shareFunctions mode).
std::string sharedTileFunctionName(int64_t index);

/// The line a program source starts with when its bodies leave out their
/// checks of the meta values (loomc --trust-meta: `#define
/// LOOM_TRUST_META`, kernels/common/MetaGuard.h); empty otherwise.
std::string metaChecksDefine(bool trustMeta);

} // namespace mlir::loom

#endif // LOOM_TARGETS_COMMON_TILEEMITTER_H
