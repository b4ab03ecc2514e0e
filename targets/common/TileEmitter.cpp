//===- TileEmitter.cpp - One function per (layer op, phase) ----------------===//
#include "targets/common/TileEmitter.h"

#include "passes/TaskModel.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

std::string cxxType(Type type) {
  if (type.isBF16())
    return "loom::bf16";
  if (type.isF16())
    return "loom::f16";
  if (type.isF32())
    return "float";
  if (type.isInteger(32))
    return "int32_t";
  return "int64_t";
}

std::string floatLiteral(double v) {
  return llvm::formatv("{0:e}f", v).str();
}

/// A double literal of an f32 attribute's value, all its digits.
std::string doubleLiteral(double v) {
  return llvm::formatv("{0:e9}", v).str();
}

/// Where a buffer lives: a graph argument or a loom.alloc (`root`), and the
/// loom.slice indices that select it.
struct BufferPlace {
  Value root;
  SmallVector<int64_t> indices;
  bool isArgument() const { return root && isa<BlockArgument>(root); }
};

BufferPlace placeOf(Value v) {
  BufferPlace place;
  while (auto slice = v.getDefiningOp<SliceOp>()) {
    place.indices.insert(place.indices.begin(), slice.getIndex());
    v = slice.getSource();
  }
  if (isa<BlockArgument>(v) || v.getDefiningOp<AllocOp>())
    place.root = v;
  return place;
}

/// Whether two places may share memory: the same root, one selecting the
/// other or within it. Intermediates never share the graph arguments'
/// memory; unknown places are taken to overlap anything.
bool mayOverlap(const BufferPlace &a, const BufferPlace &b) {
  if (!a.root || !b.root)
    return true;
  if (a.root != b.root)
    return false;
  const size_t n = std::min(a.indices.size(), b.indices.size());
  return std::equal(a.indices.begin(), a.indices.begin() + n,
                    b.indices.begin());
}

/// The writes of the ops before `op` in its block that may reach `values`
/// (the writer and the value it names); failure when one of `values` is
/// not in a graph argument or an op does not say what it writes.
FailureOr<SmallVector<std::pair<Operation *, Value>>>
writesBefore(Operation *op, ArrayRef<Value> values) {
  SmallVector<BufferPlace> places;
  for (Value v : values) {
    places.push_back(placeOf(v));
    if (!places.back().isArgument())
      return failure();
  }
  SmallVector<std::pair<Operation *, Value>> writes;
  for (Operation &before : *op->getBlock()) {
    if (&before == op)
      break;
    auto effects = dyn_cast<MemoryEffectOpInterface>(before);
    if (!effects)
      return failure();
    SmallVector<MemoryEffects::EffectInstance> fx;
    effects.getEffects(fx);
    for (const MemoryEffects::EffectInstance &e : fx) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      if (!e.getValue())
        return failure(); // writes somewhere it does not say
      const BufferPlace written = placeOf(e.getValue());
      if (llvm::any_of(places, [&](const BufferPlace &p) {
            return mayOverlap(p, written);
          }))
        writes.push_back({&before, e.getValue()});
    }
  }
  return writes;
}

/// Whether gqa_decode `o`'s split may issue its loads before its wait
/// (gqaDecodePreload), and then the kv_append whose rows it reads again
/// after the wait (null: none writes the caches). It may when the caches,
/// the page table and the append's slot_mapping live in graph arguments
/// that no op before `o` writes, but for one kv_append of exactly `o`'s
/// caches.
FailureOr<KvAppendOp> gqaPreloadAppend(GqaDecodeOp o) {
  auto writes = writesBefore(o, {o.getKCache(), o.getVCache(), o.getKvIndptr(),
                                 o.getKvIndices(), o.getKvLens()});
  if (failed(writes))
    return failure();
  KvAppendOp append;
  for (auto [op, value] : *writes) {
    auto a = dyn_cast<KvAppendOp>(op);
    if (!a || (append && append != a) || a.getKCache() != o.getKCache() ||
        a.getVCache() != o.getVCache() ||
        (value != a.getKCache() && value != a.getVCache()))
      return failure();
    append = a;
  }
  if (append) {
    auto slotWrites = writesBefore(o, {append.getSlotMapping()});
    if (failed(slotWrites) || !slotWrites->empty())
      return failure();
  }
  return append;
}

/// Writes the tile functions of one graph.
class TileWriter {
public:
  TileWriter(GraphOp graph, const TileDialect &dialect, llvm::raw_ostream &out)
      : graph(graph), dialect(dialect), out(out) {
    bounds = GraphBounds::of(graph);
    // The runtime leading size (batch, or packed tokens).
    runtimeArg = runtimeSizeArg(graph);
  }

  /// `(T *)` pointer expression of a buffer operand.
  std::string ptr(Value v, bool isConst = true) {
    auto type = cast<MemRefType>(v.getType());
    std::string t = (isConst ? "const " : "") + cxxType(type.getElementType());
    return "((" + t + " *)" + address(v) + ")";
  }

  /// `char *` of the buffer's first byte.
  std::string address(Value v) {
    if (addresses)
      return addressParam(baseOf(v));
    if (auto slice = v.getDefiningOp<SliceOp>())
      return "(" + address(slice.getSource()) + " + " +
             std::to_string(slice.getIndex() *
                            boundedBytes(slice.getType(), bounds)) +
             "LL)";
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "((char *)b[" + std::to_string(arg.getArgNumber()) + "].data)";
    auto alloc = v.getDefiningOp<AllocOp>();
    int64_t offset = alloc->getAttrOfType<IntegerAttr>(kOffsetAttr).getInt();
    return "(ws + " + std::to_string(offset) + "LL)";
  }

  /// Prefix of a body call: passes a non-zero status on where bodies
  /// return one.
  const char *call() const {
    return dialect.bodiesReturnStatus ? "if (int32_t e = " : "";
  }
  /// Suffix closing what call() opened.
  const char *endCall() const {
    return dialect.bodiesReturnStatus ? ") return e" : "";
  }
  /// The event counters parameter of tile functions (TileDialect::passEvents).
  const char *eventsParam() const {
    return dialect.passEvents ? ", unsigned long long *events" : "";
  }

  std::string scratch(Operation *op) {
    auto offset = op->getAttrOfType<IntegerAttr>(kScratchOffsetAttr);
    if (addresses)
      return "((float *)" +
             addressParam({-1, offset ? offset.getInt() : 0}) + ")";
    return "((float *)(ws + " + std::to_string(offset ? offset.getInt() : 0) +
           "LL))";
  }

  /// The binding (-1: workspace) and byte offset of a buffer operand.
  TileAddress baseOf(Value v) {
    if (auto slice = v.getDefiningOp<SliceOp>()) {
      TileAddress base = baseOf(slice.getSource());
      base.offset += slice.getIndex() * boundedBytes(slice.getType(), bounds);
      return base;
    }
    if (auto arg = dyn_cast<BlockArgument>(v))
      return {int64_t(arg.getArgNumber()), 0};
    auto alloc = v.getDefiningOp<AllocOp>();
    return {-1, alloc->getAttrOfType<IntegerAttr>(kOffsetAttr).getInt()};
  }

  /// shareFunctions: the local `addr<k>` holding `a` (one per distinct
  /// address of the function, so aliasing operands stay visibly equal).
  std::string addressParam(TileAddress a) {
    size_t k = 0;
    while (k < addresses->size() && ((*addresses)[k].binding != a.binding ||
                                     (*addresses)[k].offset != a.offset))
      ++k;
    if (k == addresses->size())
      addresses->push_back(a);
    return "addr" + std::to_string(k);
  }

  std::string bindingOf(Value v) {
    while (auto slice = v.getDefiningOp<SliceOp>())
      v = slice.getSource();
    return "b[" + std::to_string(cast<BlockArgument>(v).getArgNumber()) + "]";
  }

  int64_t dim(Value v, int64_t i) {
    int64_t d = cast<MemRefType>(v.getType()).getDimSize(i);
    return ShapedType::isDynamic(d) ? bounds.dynamicExtent() : d;
  }

  int64_t trailing(Value v, int64_t from) {
    int64_t n = 1;
    for (int64_t i = from; i < cast<MemRefType>(v.getType()).getRank(); ++i)
      n *= dim(v, i);
    return n;
  }

  LogicalResult emitFunctions(TileCalls *calls, TilePreloads *preloads) {
    std::string rt =
        runtimeArg >= 0
            ? "  const int64_t rt = b[" + std::to_string(runtimeArg) + "].dims[0];\n"
            : "  const int64_t rt = " + std::to_string(bounds.dynamicExtent()) + ";\n";
    // shareFunctions: the distinct bodies, in order of first use.
    struct Shared {
      std::string text; // address locals + body
      std::string what; // "loom.linear, phase 0"
      std::vector<int64_t> ops;
    };
    std::vector<Shared> shared;
    llvm::StringMap<int64_t> sharedIndex;
    if (dialect.shareFunctions)
      out << "// A buffer address of a task: binding `binding`'s data (the "
             "workspace\n// if binding < 0) plus `offset` bytes.\n"
          << "struct LoomAddressRef {\n  int32_t binding;\n  int64_t offset;\n};\n"
          << dialect.helperQualifier
          << " char *loomAddress(const " << dialect.bindingType
          << " *b, char *ws, "
             "const LoomAddressRef &r) {\n"
             "  return (r.binding < 0 ? ws : (char *)b[r.binding].data) + "
             "r.offset;\n}\n\n";

    for (Operation &op : graph.getBodyBlock()) {
      auto id = op.getAttrOfType<IntegerAttr>(kOpIdAttr);
      auto partition = op.getAttrOfType<PartitionAttr>(kPartitionAttr);
      if (!id || !partition)
        continue;
      for (int64_t phase = 0; phase < int64_t(partition.getTasks().size()); ++phase) {
        body.clear();
        std::vector<TileAddress> list;
        addresses = dialect.shareFunctions ? &list : nullptr;
        LogicalResult emitted = emitBody(&op, partition, phase);
        addresses = nullptr;
        if (failed(emitted))
          return failure();
        os.flush();
        if (!dialect.shareFunctions) {
          out << "// " << op.getName().getStringRef() << " #" << id.getInt()
              << ", phase " << phase << "\n";
          out << dialect.qualifier << " int32_t " << tileFunctionName(id.getInt(), phase)
              << "(int64_t tile, const " << dialect.bindingType << " *b, char *ws"
              << dialect.extraParams << eventsParam()
              << (dialect.preload ? ", bool preloaded" : "") << ") {\n";
          out << "  (void)b; (void)ws;\n" << (dialect.passEvents ? "  (void)events;\n" : "")
              << (dialect.preload ? "  (void)preloaded;\n" : "") << rt << "  (void)rt;\n" << body
              << "  return 0;\n}\n\n";
          if (dialect.preload && preloads)
            emitPreload(op, partition, phase, id.getInt(), rt, *preloads);
          continue;
        }
        std::string text;
        for (size_t k = 0; k < list.size(); ++k)
          text += "  char *const addr" + std::to_string(k) +
                  " = loomAddress(b, ws, r[" + std::to_string(k) + "]);\n";
        text += body;
        auto [it, inserted] = sharedIndex.try_emplace(text, shared.size());
        if (inserted)
          shared.push_back({text,
                            (op.getName().getStringRef() + ", phase " + Twine(phase)).str(),
                            {}});
        shared[it->second].ops.push_back(id.getInt());
        (*calls)[{id.getInt(), phase}] = TileCall{it->second, std::move(list)};
      }
    }
    for (auto [index, fn] : llvm::enumerate(shared)) {
      out << "// " << fn.what << ": op" << (fn.ops.size() > 1 ? "s" : "");
      for (auto [i, opId] : llvm::enumerate(fn.ops))
        out << (i ? ", #" : " #") << opId;
      out << "\n"
          << dialect.qualifier << " int32_t " << sharedTileFunctionName(index)
          << "(int64_t tile, const " << dialect.bindingType
          << " *b, char *ws, const LoomAddressRef *r"
          << dialect.extraParams << eventsParam() << ") {\n"
          << "  (void)b; (void)ws; (void)r;\n"
          << (dialect.passEvents ? "  (void)events;\n" : "")
          << rt << "  (void)rt;\n"
          << fn.text << "  return 0;\n}\n\n";
    }
    return success();
  }

  /// The preload function of (op, phase), when its body has one
  /// (TileDialect::preload: a linear tile's, phase 0; a one-phase
  /// gqa_decode split's where gqaPreloadAppend allows): the tile's
  /// arithmetic, then the body's preload.
  void emitPreload(Operation &op, PartitionAttr partition, int64_t phase,
                   int64_t id, const std::string &rt, TilePreloads &preloads) {
    if (phase != 0)
      return;
    if (auto gqa = dyn_cast<GqaDecodeOp>(op)) {
      if (partition.getTasks().size() != 1 || failed(gqaPreloadAppend(gqa)))
        return;
    } else if (!isa<LinearOp>(op)) {
      return;
    }
    body.clear();
    preloadOnly = true;
    LogicalResult emitted = emitBody(&op, partition, phase);
    preloadOnly = false;
    os.flush();
    if (failed(emitted))
      return;
    out << dialect.qualifier << " bool " << preloadFunctionName(id, phase)
        << "(int64_t tile, const " << dialect.bindingType << " *b, char *ws"
        << dialect.extraParams << ") {\n"
        << "  (void)b; (void)ws;\n" << rt << "  (void)rt;\n" << body << "}\n\n";
    preloads.push_back({id, phase});
  }

  /// Rows [r0, r1) of a `perTask`-row tile, clamped to `total` and to the
  /// runtime rows `runtime`.
  void rowRange(int64_t perTask, int64_t total, const std::string &runtime) {
    os << "  const int64_t r0 = tile * " << perTask << "LL;\n"
       << "  const int64_t r1 = std::min<int64_t>(std::min<int64_t>(" << total
       << "LL, r0 + " << perTask << "LL), " << runtime << ");\n"
       << "  if (r0 >= r1) return 0;\n";
  }

  /// The counters of a one-phase op whose bodies count arrivals on them
  /// (loom.counters, passed as `events + first`); an error if it has none or
  /// the target's tile functions take no event counters.
  LogicalResult onePhaseCounters(Operation *op, DenseI64ArrayAttr &counters) {
    counters = op->getAttrOfType<DenseI64ArrayAttr>(kCountersAttr);
    if (counters && dialect.passEvents)
      return success();
    return op->emitOpError("is partitioned into one phase, which needs ")
           << (counters ? "a target whose bodies take the event counters"
                        : "its counters; run loom-derive-events first");
  }

  LogicalResult emitBody(Operation *op, PartitionAttr p, int64_t phase) {
    ArrayRef<int64_t> params = p.getParams();
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](RmsNormOp o) {
          int64_t d = dim(o.getX(), cast<MemRefType>(o.getX().getType()).getRank() - 1);
          int64_t perRow = trailing(o.getX(), 1) / d; // rows per leading entry
          rowRange(params[0], dim(o.getX(), 0) * perRow,
                   "rt * " + std::to_string(perRow) + "LL");
          os << "  " << call() << dialect.bodies << "rmsnormRows" << dialect.bodyTemplate << "(" << ptr(o.getX()) << ", "
             << ptr(o.getWeight()) << ", " << ptr(o.getY(), false) << ", " << d
             << "LL, " << floatLiteral(o.getEps().convertToDouble())
             << ", r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](LinearOp o) {
          int64_t k = trailing(o.getX(), 1), n = trailing(o.getY(), 1);
          int64_t maxM = dim(o.getX(), 0), nTile = params[0], splits = params[1];
          std::string yT = cxxType(cast<MemRefType>(o.getY().getType()).getElementType());
          std::string residual = o.getResidual()
                                     ? ptr(o.getResidual())
                                     : "static_cast<const " + yT + " *>(nullptr)";
          os << "  const int64_t m = std::min<int64_t>(rt, " << maxM << "LL);\n";
          os << "  const int64_t nt = tile" << (phase == 0 ? " / " + std::to_string(splits) + "LL" : "") << ";\n"
             << "  const int64_t n0 = nt * " << nTile << "LL, n1 = std::min<int64_t>(" << n
             << "LL, n0 + " << nTile << "LL);\n";
          const char *preloaded = dialect.preload ? ", preloaded" : "";
          int64_t kPer = (k + splits - 1) / splits;
          if (phase == 0 && splits > 1)
            os << "  const int64_t s = tile % " << splits << "LL;\n"
               << "  const int64_t k0 = s * " << kPer << "LL, k1 = std::min<int64_t>(" << k
               << "LL, k0 + " << kPer << "LL);\n";
          if (preloadOnly) {
            os << "  return " << dialect.bodies << "linearPreload" << dialect.bodyTemplate << "(" << ptr(o.getX()) << ", " << ptr(o.getWeight())
               << ", m, " << k << "LL, n0, n1, " << (splits == 1 ? "0LL, " + std::to_string(k) + "LL" : std::string("k0, k1"))
               << dialect.extraArgs << ");\n";
            return success();
          }
          // With a norm, x's rows are RMS-normalised as the tile loads them:
          // the same bodies under another name, the scale and eps after x.
          const std::string normed = o.getNorm() ? "Norm" : "";
          const std::string xArgs =
              ptr(o.getX()) +
              (o.getNorm() ? ", " + ptr(o.getNorm()) + ", " +
                                 floatLiteral(o.getNormEps()->convertToDouble())
                           : std::string());
          if (splits == 1) {
            os << "  " << call() << dialect.bodies << "linear" << normed << "Tile" << dialect.bodyTemplate << "(" << xArgs << ", " << ptr(o.getWeight())
               << ", " << residual << ", " << ptr(o.getY(), false) << ", m, " << k
               << "LL, " << n << "LL, n0, n1" << dialect.extraArgs << preloaded << ")" << endCall() << ";\n";
            return success();
          }
          if (phase == 0) {
            os << "  " << call() << dialect.bodies << "linear" << normed << "Partial" << dialect.bodyTemplate << "(" << xArgs << ", " << ptr(o.getWeight())
               << ", " << scratch(op) << " + s * " << maxM * n << "LL, m, " << k << "LL, "
               << n << "LL, n0, n1, k0, k1" << dialect.extraArgs << preloaded << ")" << endCall() << ";\n";
          } else {
            os << "  " << call() << dialect.bodies << "linearReduce" << dialect.bodyTemplate << "(" << scratch(op) << ", " << splits << "LL, "
               << maxM * n << "LL, " << residual << ", " << ptr(o.getY(), false) << ", m, "
               << n << "LL, n0, n1" << dialect.extraArgs << ")" << endCall() << ";\n";
          }
          return success();
        })
        .Case([&](RopeOp o) {
          int64_t h = dim(o.getX(), 1), d = dim(o.getX(), 2);
          rowRange(params[0], dim(o.getX(), 0) * h, "rt * " + std::to_string(h) + "LL");
          // Llama 3.1's scaling (kernels/common/Rope.h), or none.
          std::string scaling = "loom::RopeScaling{}";
          if (o.getScalingFactor())
            scaling = "loom::RopeScaling{" +
                      doubleLiteral(o.getScalingFactor()->convertToDouble()) + ", " +
                      doubleLiteral(o.getLowFreqFactor()->convertToDouble()) + ", " +
                      doubleLiteral(o.getHighFreqFactor()->convertToDouble()) + ", " +
                      std::to_string(*o.getOriginalMaxPosition()) + ".0}";
          os << "  " << call() << dialect.bodies << "rope" << dialect.bodyTemplate << "(" << ptr(o.getX()) << ", " << ptr(o.getPositions())
             << ", " << ptr(o.getY(), false) << ", " << h << "LL, " << d << "LL, "
             << o.getRotaryDim() << "LL, " << floatLiteral(o.getTheta().convertToDouble())
             << ", " << scaling << ", r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](KvAppendOp o) {
          rowRange(params[0], dim(o.getK(), 0), "rt");
          os << "  " << call() << dialect.bodies << "kvAppend" << dialect.bodyTemplate << "(" << ptr(o.getK()) << ", " << ptr(o.getV()) << ", "
             << ptr(o.getSlotMapping()) << ", " << ptr(o.getKCache(), false) << ", "
             << ptr(o.getVCache(), false) << ", " << dim(o.getK(), 1) << "LL, "
             << dim(o.getK(), 2) << "LL, " << dim(o.getV(), 2) << "LL, "
             << dim(o.getKCache(), 1) << "LL, " << dim(o.getKCache(), 0)
             << "LL, r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](GqaDecodeOp o) {
          int64_t hq = dim(o.getQ(), 1), hkv = dim(o.getKCache(), 2), s = params[0];
          int64_t maxB = dim(o.getQ(), 0);
          os << "  const int64_t batch = std::min<int64_t>(rt, " << maxB << "LL);\n";
          // One phase: the last split of a pair merges it, counting arrivals
          // on per-pair counters among the launch's events.
          const bool onePhase = p.getTasks().size() == 1;
          DenseI64ArrayAttr counters;
          if (onePhase && failed(onePhaseCounters(o, counters)))
            return failure();
          // What a split task and its preload both take: the cache and page
          // table (ptr() in operand order: the shared-function dialect
          // numbers addresses as it is called), the sizes after the head
          // counts, and the task's (b, hk, s).
          std::string tables, sizes, task;
          if (phase == 0) {
            for (Value v : {o.getQ(), o.getKCache(), o.getVCache(), o.getKvIndptr(),
                            o.getKvIndices(), o.getKvLens()})
              tables += (tables.empty() ? "" : ", ") + ptr(v);
            sizes = std::to_string(dim(o.getQ(), 2)) + "LL, " +
                    std::to_string(dim(o.getVCache(), 3)) + "LL, " +
                    std::to_string(dim(o.getKCache(), 1)) + "LL, " +
                    std::to_string(dim(o.getKCache(), 0)) + "LL, " +
                    bindingOf(o.getKvIndices()) + ".dims[0], " + std::to_string(s) + "LL";
            task = "pair / " + std::to_string(hkv) + "LL, pair % " + std::to_string(hkv) +
                   "LL, s";
            os << "  const int64_t pair = tile / " << s << "LL, s = tile % " << s << "LL;\n";
          }
          if (phase == 0 && preloadOnly) {
            KvAppendOp append = *gqaPreloadAppend(o);
            std::string slots = "static_cast<const int64_t *>(nullptr)", appended = "0LL";
            if (append) {
              slots = ptr(append.getSlotMapping());
              appended = "std::min<int64_t>(rt, " + std::to_string(dim(append.getK(), 0)) + "LL)";
            }
            os << "  return " << dialect.bodies << "gqaDecodePreload" << dialect.bodyTemplate << "(" << tables
               << ", " << slots << ", " << appended << ", batch, " << maxB << "LL, " << hkv << "LL, "
               << sizes << ", " << task << dialect.extraArgs << ");\n";
            return success();
          }
          if (phase == 0) {
            os << "  " << call() << dialect.bodies << (onePhase ? "gqaDecode" : "gqaDecodeSplit") << dialect.bodyTemplate << "(" << tables
               << ", " << scratch(op) << ", batch, " << maxB << "LL, " << hq << "LL, " << hkv << "LL, "
               << sizes << ", " << floatLiteral(o.getSmScale().convertToDouble()) << ", " << task;
            if (onePhase)
              os << ", " << ptr(o.getO(), false) << ", events + " << counters[0] << "LL";
            os << dialect.extraArgs << (onePhase && dialect.preload ? ", preloaded" : "") << ")" << endCall() << ";\n";
          } else {
            os << "  " << call() << dialect.bodies << "gqaDecodeMerge" << dialect.bodyTemplate << "(" << scratch(op) << ", "
               << ptr(o.getKvLens()) << ", " << ptr(o.getO(), false)
               << ", batch, " << maxB << "LL, " << hq << "LL, " << hkv << "LL, "
               << dim(o.getVCache(), 3) << "LL, " << s << "LL, tile / " << hkv
               << "LL, tile % " << hkv << "LL" << dialect.extraArgs << ")" << endCall() << ";\n";
          }
          return success();
        })
        .Case([&](MlaDecodeOp o) {
          std::string t = cxxType(cast<MemRefType>(o.getQNope().getType()).getElementType());
          int64_t h = dim(o.getQNope(), 1), dc = dim(o.getQNope(), 2);
          int64_t slots = params[0], merges = params[1], maxB = dim(o.getQNope(), 0);
          os << "  " << dialect.bodies << "MlaParams<" << t << "> p;\n"
             << "  p.qNope = " << ptr(o.getQNope()) << "; p.qPe = " << ptr(o.getQPe()) << ";\n"
             << "  p.ckvCache = " << ptr(o.getCkvCache()) << "; p.kpeCache = "
             << ptr(o.getKpeCache()) << ";\n"
             << "  p.kvIndptr = " << ptr(o.getKvIndptr()) << "; p.kvIndices = "
             << ptr(o.getKvIndices()) << "; p.kvLens = " << ptr(o.getKvLens()) << ";\n"
             << "  p.o = " << ptr(o.getO(), false) << "; p.lse = " << ptr(o.getLse(), false) << ";\n"
             << "  p.batch = std::min<int64_t>(" << bindingOf(o.getQNope()) << ".dims[0], "
             << maxB << "LL);\n"
             << "  p.numHeads = " << h << "; p.dimCkv = " << dc << "; p.dimKpe = "
             << dim(o.getQPe(), 2) << "; p.pageSize = " << dim(o.getCkvCache(), 1) << ";\n"
             << "  p.numPages = " << dim(o.getCkvCache(), 0) << "; p.numIndices = "
             << bindingOf(o.getKvIndices()) << ".dims[0];\n"
             << "  p.smScale = " << floatLiteral(o.getSmScale().convertToDouble()) << ";\n"
             << "  float *partialO = " << scratch(op) << ";\n"
             // The partial outputs of all (slot + request) pieces, then
             // their LSEs (kernels' MLA workspace layout).
             << "  float *partialLse = partialO + " << (slots + maxB) * h * dc
             << "LL;\n";
          if (merges == 0) {
            // One phase: the slots merge split requests themselves, with
            // per-request counters among the launch's events.
            DenseI64ArrayAttr counters;
            if (failed(onePhaseCounters(o, counters)))
              return failure();
            os << "  " << call() << dialect.bodies << "mlaDecode" << dialect.bodyTemplate
               << "(p, tile, " << slots << "LL, partialO, partialLse, events + "
               << counters[0] << "LL" << dialect.extraArgs << ")" << endCall() << ";\n";
          } else if (phase == 0)
            os << "  " << call() << dialect.bodies << "mlaSplit" << dialect.bodyTemplate << "(p, tile, " << slots << "LL, partialO, partialLse" << dialect.extraArgs << ")" << endCall() << ";\n";
          else
            os << "  " << call() << dialect.bodies << "mlaMerge" << dialect.bodyTemplate << "(p, tile, " << merges << "LL, " << slots
               << "LL, partialO, partialLse" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](KdaPrefillOp o) {
          std::string t = cxxType(cast<MemRefType>(o.getQ().getType()).getElementType());
          int64_t h = dim(o.getQ(), 1), k = dim(o.getQ(), 2), v = dim(o.getV(), 2);
          int64_t c = o.getChunkSize();
          std::optional<APFloat> lb = o.getLowerBound();
          os << "  " << dialect.bodies << "KdaParams<" << t << "> p;\n"
             << "  p.q = " << ptr(o.getQ()) << "; p.k = " << ptr(o.getK()) << "; p.v = "
             << ptr(o.getV()) << "; p.g = " << ptr(o.getG()) << "; p.beta = "
             << ptr(o.getBeta()) << ";\n"
             << "  p.aLog = " << ptr(o.getALog()) << "; p.dtBias = " << ptr(o.getDtBias())
             << "; p.cuSeqlens = " << ptr(o.getCuSeqlens()) << ";\n"
             << "  p.initialState = "
             << (o.getInitialState() ? ptr(o.getInitialState()) : std::string("nullptr")) << ";\n"
             << "  p.o = " << ptr(o.getO(), false) << "; p.finalState = "
             << ptr(o.getFinalState(), false) << ";\n"
             << "  p.numTokens = " << bindingOf(o.getQ()) << ".dims[0];\n"
             << "  p.numSeqs = " << bindingOf(o.getCuSeqlens()) << ".dims[0] - 1;\n"
             << "  p.numHeads = " << h << "; p.dimK = " << k << "; p.dimV = " << v
             << "; p.chunkSize = " << c << ";\n"
             << "  p.gate = " << dialect.bodies << "KdaGate::"
             << (o.getGate() == Gate::Bounded ? "Bounded" : "Unbounded") << ";\n"
             << "  p.lowerBound = " << floatLiteral(lb ? lb->convertToDouble() : -5.0) << ";\n"
             << "  p.scale = " << floatLiteral(o.getScale().convertToDouble()) << ";\n"
             << "  p.qkL2norm = " << (o.getQkL2norm() ? "true" : "false") << ";\n"
             << "  p.maxChunks = " << bounds.tokens / c + bounds.seqs << "LL;\n"
             << "  float *work = " << scratch(op) << ";\n"
             // Checked (MetaGuard.h): a refused cu_seqlens reads no token.
             << "  const int64_t chunks = " << dialect.bodies << "kdaCheckedChunks(p.cuSeqlens, p.numSeqs, "
             << c << "LL, p.numTokens, p.maxChunks);\n"
             << "  if (chunks < 0) return 0;\n";
          if (phase == 0) {
            // Balance the runtime (head, chunk) items over the tasks.
            int64_t tasks = params[0];
            os << "  const int64_t items = chunks * " << h << "LL;\n"
               << "  int64_t i = tile * items / " << tasks << "LL;\n"
               << "  const int64_t end = (tile + 1) * items / " << tasks << "LL;\n"
               << "  while (i < end) {\n"
               << "    const int64_t head = i / chunks, c0 = i % chunks;\n"
               << "    const int64_t c1 = std::min<int64_t>(chunks, c0 + (end - i));\n"
               << "    " << call() << dialect.bodies << "kdaIntraChunk" << dialect.bodyTemplate << "(p, c0, c1, head, work" << dialect.extraArgs << ")" << endCall() << ";\n"
               << "    i += c1 - c0;\n"
               << "  }\n";
          } else {
            int64_t tasks = params[1], vBlocks = params[2];
            os << "  const int64_t items = p.numSeqs * " << h * vBlocks << "LL;\n"
               << "  for (int64_t i = tile; i < items; i += " << tasks << "LL) {\n"
               << "    const int64_t n = i / " << h * vBlocks << "LL, head = (i / " << vBlocks
               << "LL) % " << h << "LL, vb = i % " << vBlocks << "LL;\n"
               << "    " << call() << dialect.bodies << "kdaStateScan" << dialect.bodyTemplate << "(p, n, head, vb * " << v << "LL / " << vBlocks
               << "LL, (vb + 1) * " << v << "LL / " << vBlocks << "LL, work" << dialect.extraArgs << ")" << endCall() << ";\n"
               << "  }\n"
               << "  (void)chunks;\n";
          }
          return success();
        })
        .Case([&](SiluMulOp o) {
          int64_t perRow = trailing(o.getY(), 1);
          rowRange(params[0], dim(o.getY(), 0) * perRow, "rt * " + std::to_string(perRow) + "LL");
          os << "  " << call() << dialect.bodies << "siluMul" << dialect.bodyTemplate << "(" << ptr(o.getGate()) << ", " << ptr(o.getUp()) << ", "
             << ptr(o.getY(), false) << ", r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](AddOp o) {
          int64_t perRow = trailing(o.getY(), 1);
          rowRange(params[0], dim(o.getY(), 0) * perRow, "rt * " + std::to_string(perRow) + "LL");
          os << "  " << call() << dialect.bodies << "add" << dialect.bodyTemplate << "(" << ptr(o.getA()) << ", " << ptr(o.getB()) << ", "
             << ptr(o.getY(), false) << ", r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Case([&](EmbeddingOp o) {
          rowRange(params[0], dim(o.getY(), 0), "rt");
          os << "  if (!" << dialect.bodies << "embedding" << dialect.bodyTemplate << "(" << ptr(o.getTable()) << ", " << ptr(o.getIds())
             << ", " << ptr(o.getY(), false) << ", " << dim(o.getTable(), 0) << "LL, "
             << dim(o.getTable(), 1) << "LL, r0, r1" << dialect.extraArgs << "))\n"
             << "    return 1; // a token id out of range\n";
          return success();
        })
        .Case([&](ArgmaxOp o) {
          rowRange(params[0], dim(o.getX(), 0), "rt");
          os << "  " << call() << dialect.bodies << "argmaxRows" << dialect.bodyTemplate << "(" << ptr(o.getX()) << ", "
             << ptr(o.getIndices(), false) << ", " << dim(o.getX(), 1) << "LL, r0, r1" << dialect.extraArgs << ")" << endCall() << ";\n";
          return success();
        })
        .Default([&](Operation *other) {
          return other->emitOpError("has no host body");
        });
  }

private:
  GraphOp graph;
  const TileDialect &dialect;
  llvm::raw_ostream &out;
  /// The body of the function being written (emitBody writes to `os`).
  std::string body;
  llvm::raw_string_ostream os{body};
  /// shareFunctions: the addresses of the function being written.
  std::vector<TileAddress> *addresses = nullptr;
  /// emitBody writes the (op, phase)'s preload call instead of its body
  /// (emitPreload: only for those that have one).
  bool preloadOnly = false;
  GraphBounds bounds;
  int64_t runtimeArg = -1;
};

} // namespace

std::string mlir::loom::tileFunctionName(int64_t opId, int64_t phase) {
  return llvm::formatv("op{0}_phase{1}", opId, phase).str();
}

std::string mlir::loom::preloadFunctionName(int64_t opId, int64_t phase) {
  return tileFunctionName(opId, phase) + "_preload";
}

std::string mlir::loom::metaChecksDefine(bool trustMeta) {
  return trustMeta ? "// loomc --trust-meta: the caller validates the meta "
                     "values.\n#define LOOM_TRUST_META 1\n"
                   : "";
}

std::string mlir::loom::sharedTileFunctionName(int64_t index) {
  return llvm::formatv("tile{0}", index).str();
}

LogicalResult mlir::loom::emitTileFunctions(GraphOp graph,
                                            const TileDialect &dialect,
                                            llvm::raw_ostream &os,
                                            TileCalls *calls,
                                            TilePreloads *preloads) {
  assert((!dialect.shareFunctions || calls) && "shared functions need calls");
  return TileWriter(graph, dialect, os).emitFunctions(calls, preloads);
}
