//===- TaskModel.cpp - Tiling, cost model and task regions per layer op ---===//
#include "passes/TaskModel.h"
#include "targets/chips/ChipTable.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Fixed cost of one task (wait, dispatch, trigger), in ns: keeps the cost
/// model from cutting work into pieces smaller than their overhead.
constexpr int64_t kTaskOverheadNs = 500;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

MemRefType typeOf(Value v) { return cast<MemRefType>(v.getType()); }

int64_t elemBytes(Value v) {
  return std::max<int64_t>(1, typeOf(v).getElementTypeBitWidth() / 8);
}

int64_t dimOf(Value v, int64_t i, const GraphBounds &bounds) {
  int64_t d = typeOf(v).getDimSize(i);
  return ShapedType::isDynamic(d) ? bounds.dynamicExtent() : d;
}

/// Rows of `v` seen as [rows, last dimension].
int64_t rowsOf(Value v, const GraphBounds &bounds) {
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < typeOf(v).getRank(); ++i)
    rows *= dimOf(v, i, bounds);
  return rows;
}

/// Elements per row after dimension `from` (a linear's K or N).
int64_t trailing(Value v, int64_t from, const GraphBounds &bounds) {
  int64_t n = 1;
  for (int64_t i = from; i < typeOf(v).getRank(); ++i)
    n *= dimOf(v, i, bounds);
  return n;
}

int64_t costNs(TargetAttr target, double bytes, double flops) {
  double bytesPerNs = double(target.getHbmGbps()) / target.getWorkers();
  double flopsPerNs = double(target.getBf16Tflops()) * 1e3 / target.getWorkers();
  return int64_t(std::max(bytes / bytesPerNs, flops / flopsPerNs)) +
         kTaskOverheadNs;
}

PartitionAttr makePartition(MLIRContext *ctx, ArrayRef<int64_t> tasks,
                            ArrayRef<int64_t> params, ArrayRef<int64_t> costs,
                            int64_t scratchBytes = 0) {
  return PartitionAttr::get(ctx, tasks, params, costs, scratchBytes);
}

/// One task per `rowsPerTask` rows, as many tasks as workers at most.
PartitionAttr partitionRows(Operation *op, TargetAttr target, int64_t rows,
                            double bytesPerRow, double flopsPerRow) {
  int64_t perTask = ceilDiv(rows, target.getWorkers());
  int64_t tasks = ceilDiv(rows, perTask);
  return makePartition(op->getContext(), {tasks}, {perTask},
                       {costNs(target, bytesPerRow * perTask,
                               flopsPerRow * perTask)});
}

PartitionAttr partitionElements(Operation *op, TargetAttr target,
                                int64_t elements, double bytesPerElement) {
  int64_t perTask =
      std::max<int64_t>(256, roundUp(ceilDiv(elements, target.getWorkers()), 256));
  int64_t tasks = ceilDiv(elements, perTask);
  return makePartition(op->getContext(), {tasks}, {perTask},
                       {costNs(target, bytesPerElement * perTask, 0)});
}

/// Weight bytes of a linear.
double linearWeightBytes(LinearOp op, const GraphBounds &b) {
  return double(trailing(op.getY(), 1, b)) * trailing(op.getX(), 1, b) *
         elemBytes(op.getWeight());
}

/// The workers a linear gets: linears that read the same x (a layer's Q, K
/// and V; gate and up) are ready together, so they share the chip in
/// proportion to their weight bytes instead of each splitting K to fill it.
int64_t linearWorkers(LinearOp op, TargetAttr target, const GraphBounds &b) {
  double all = 0;
  for (Operation *user : op.getX().getUsers())
    if (auto sibling = dyn_cast<LinearOp>(user);
        sibling && sibling.getX() == op.getX())
      all += linearWeightBytes(sibling, b);
  double share = all > 0 ? linearWeightBytes(op, b) / all : 1.0;
  return std::max<int64_t>(1, std::llround(share * target.getWorkers()));
}

PartitionAttr partitionLinear(LinearOp op, TargetAttr target,
                              const GraphBounds &b) {
  int64_t m = dimOf(op.getX(), 0, b), k = trailing(op.getX(), 1, b);
  int64_t n = trailing(op.getY(), 1, b), workers = linearWorkers(op, target, b);
  // N tiles first: each task streams whole weight rows once.
  int64_t nTile = std::clamp<int64_t>(roundUp(ceilDiv(n, workers), 16), 16, 512);
  int64_t nTiles = ceilDiv(n, nTile);
  // Too few N tiles to fill the chip: split K too, and reduce afterwards.
  int64_t kSplits = 1;
  if (2 * nTiles < workers && k >= 512)
    kSplits = std::max<int64_t>(1, std::min(workers / nTiles, k / 256));
  int64_t wBytes = elemBytes(op.getWeight());
  double bytes0 = double(nTile) * ceilDiv(k, kSplits) * wBytes +
                  double(m) * ceilDiv(k, kSplits) * elemBytes(op.getX());
  double flops0 = 2.0 * m * nTile * ceilDiv(k, kSplits);
  MLIRContext *ctx = op->getContext();
  if (kSplits == 1)
    return makePartition(ctx, {nTiles}, {nTile, 1},
                         {costNs(target, bytes0 + double(m) * nTile * 2, flops0)});
  int64_t scratch = kSplits * m * n * 4;
  double bytes1 = double(kSplits) * m * nTile * 4 + double(m) * nTile * 4;
  return makePartition(ctx, {nTiles * kSplits, nTiles}, {nTile, kSplits},
                       {costNs(target, bytes0, flops0), costNs(target, bytes1, 0)},
                       scratch);
}

/// Whether the target's decode bodies merge split work in the split tasks
/// themselves (one phase, arrival counters: NVIDIA's gqa_decode and
/// mla_decode) instead of a merge phase (the host and gfx950 bodies).
bool mergesInOnePhase(TargetAttr target) {
  ::loom::Vendor vendor;
  return ::loom::vendorOfArch(target.getArch().str(), vendor) &&
         vendor == ::loom::Vendor::Nvidia;
}

/// Split tasks N = batch x hkv x splits, with splits chosen so N reaches the
/// workers even at the largest batch. N is fixed, but the bodies map tasks
/// to (request, kv head, token range) at run time from the runtime batch and
/// kv_lens (kernels/common/GqaSplits.h), so a small batch spreads over all N
/// tasks instead of leaving those of absent requests idle. The emitted code
/// and the bodies recover N from params[0] as batch x hkv x splits.
PartitionAttr partitionGqa(GqaDecodeOp op, TargetAttr target,
                           const GraphBounds &b) {
  int64_t batch = dimOf(op.getQ(), 0, b), hq = dimOf(op.getQ(), 1, b);
  int64_t d = dimOf(op.getQ(), 2, b), hkv = dimOf(op.getKCache(), 2, b);
  int64_t splits =
      std::clamp<int64_t>(ceilDiv(target.getWorkers(), batch * hkv), 1, 16);
  int64_t tasks = batch * hkv * splits;
  // A task's share of a typical decode step: 4K tokens for every request.
  double tokens = 4096.0 * batch * hkv / tasks;
  double kvBytes = 2.0 * tokens * d * elemBytes(op.getKCache());
  double flops = 4.0 * tokens * d * (hq / hkv);
  int64_t scratch = tasks * (hq / hkv) * (d + 1) * 4;
  // A merge reads its pair's splits: `splits` at the full batch, more below.
  double mergeBytes = double(splits) * (hq / hkv) * (d + 1) * 4;
  // NVIDIA's splits merge their pair themselves, the last to arrive
  // (kernels/nvidia/sm90/GqaDecodeBodies.cuh, gqaDecode): no merge phase,
  // no whole-phase event.
  if (mergesInOnePhase(target))
    return makePartition(op->getContext(), {tasks}, {splits},
                         {costNs(target, kvBytes, flops) +
                          costNs(target, mergeBytes, 0) / double(splits)},
                         scratch);
  return makePartition(op->getContext(), {tasks, batch * hkv}, {splits},
                       {costNs(target, kvBytes, flops),
                        costNs(target, mergeBytes, 0)},
                       scratch);
}

PartitionAttr partitionMla(MlaDecodeOp op, TargetAttr target,
                           const GraphBounds &b) {
  int64_t batch = dimOf(op.getQNope(), 0, b), h = dimOf(op.getQNope(), 1, b);
  int64_t dc = dimOf(op.getQNope(), 2, b), dp = dimOf(op.getQPe(), 2, b);
  // Merge tasks: one per worker, each taking (request, head group) units of
  // the runtime batch (kernels/common/MlaSlots.h, MlaMergeSplit).
  int64_t slots = target.getWorkers(), merges = slots;
  // A slot's share of a typical 4K-token batch.
  double tokens = 4096.0 * batch / slots;
  double bytes = tokens * (dc + dp) * elemBytes(op.getCkvCache());
  double flops = tokens * h * 2.0 * (2 * dc + dp);
  int64_t scratch = (slots + batch) * h * (dc + 1) * 4;
  // NVIDIA's bodies merge in the same tasks (kernels/nvidia/sm90/
  // MlaBodies.cuh, mlaDecode): no merge phase, no whole-phase event.
  if (mergesInOnePhase(target))
    return makePartition(
        op->getContext(), {slots}, {slots, 0},
        {costNs(target, bytes, flops) +
         costNs(target, double(ceilDiv(batch, slots)) * 3 * h * dc * 4, 0)},
        scratch);
  return makePartition(op->getContext(), {slots, merges}, {slots, merges},
                       {costNs(target, bytes, flops),
                        costNs(target, double(ceilDiv(batch, merges)) * 3 * h * dc * 4, 0)},
                       scratch);
}

/// Floats of phase-0 output per (chunk, head): the chunk-local terms the
/// state scan consumes (see kernels' KDA workspace layout).
int64_t kdaFloatsPerChunkHead(int64_t c, int64_t k, int64_t v) {
  return c * (3 * k + v + c) + k;
}

PartitionAttr partitionKda(KdaPrefillOp op, TargetAttr target,
                           const GraphBounds &b) {
  int64_t h = dimOf(op.getQ(), 1, b), k = dimOf(op.getQ(), 2, b);
  int64_t v = dimOf(op.getV(), 2, b), c = op.getChunkSize();
  int64_t workers = target.getWorkers();
  int64_t maxChunks = b.tokens / c + b.seqs;
  int64_t vBlocks = 1;
  while (vBlocks * 2 * h <= workers && vBlocks * 2 * 16 <= v)
    vBlocks *= 2;
  int64_t intraTasks = 2 * workers;
  int64_t scanTasks = std::min(b.seqs * h * vBlocks, workers);
  double chunkFlops = 2.0 * c * c * (2 * k + v) + 2.0 * c * k * v;
  double chunkBytes = double(c) * (3 * k + v) * elemBytes(op.getQ()) +
                      kdaFloatsPerChunkHead(c, k, v) * 4.0;
  // Cost for a typical 8K-token prefill spread over the tasks.
  double items = 8192.0 / c * h;
  int64_t scratch = maxChunks * h * kdaFloatsPerChunkHead(c, k, v) * 4;
  return makePartition(
      op->getContext(), {intraTasks, scanTasks}, {intraTasks, scanTasks, vBlocks},
      {costNs(target, chunkBytes * items / intraTasks, chunkFlops * items / intraTasks),
       costNs(target, chunkBytes * items / scanTasks / vBlocks,
              4.0 * c * k * v / vBlocks * items / scanTasks)},
      scratch);
}

//===----------------------------------------------------------------------===//
// Regions
//===----------------------------------------------------------------------===//

constexpr int64_t kMaxColumnRows = 4;

struct AccessBuilder {
  SmallVectorImpl<Access> &out;
  const GraphBounds &bounds;

  void whole(Value v, bool write) {
    if (v)
      out.push_back({v, write, {}});
  }

  /// Rows [r0, r1) of `v` seen as [rows, last dimension].
  void rows(Value v, bool write, int64_t r0, int64_t r1) {
    int64_t rowBytes = typeOf(v).getDimSize(typeOf(v).getRank() - 1) * elemBytes(v);
    out.push_back({v, write, {{r0 * rowBytes, r1 * rowBytes}}});
  }

  /// Columns [c0, c1) of every row of `v` seen as [rows, cols]: one range
  /// per row. Past a few rows this is the whole buffer instead: consumers of
  /// a column-tiled result almost always need every tile, and a range per
  /// row per tile would make event derivation slow on large batches.
  void columns(Value v, bool write, int64_t rowCount, int64_t cols,
               int64_t c0, int64_t c1) {
    if (rowCount > kMaxColumnRows) {
      whole(v, write);
      return;
    }
    Access a{v, write, {}};
    int64_t eb = elemBytes(v);
    for (int64_t r = 0; r < rowCount; ++r)
      a.ranges.push_back({(r * cols + c0) * eb, (r * cols + c1) * eb});
    out.push_back(std::move(a));
  }

  void elements(Value v, bool write, int64_t e0, int64_t e1) {
    out.push_back({v, write, {{e0 * elemBytes(v), e1 * elemBytes(v)}}});
  }

  void scratch(bool write) { out.push_back({Value(), write, {}}); }

  void scratchRange(bool write, int64_t begin, int64_t end) {
    out.push_back({Value(), write, {{begin, end}}});
  }
};

int64_t tileBegin(int64_t tile, int64_t perTask) { return tile * perTask; }
int64_t tileEnd(int64_t tile, int64_t perTask, int64_t total) {
  return std::min(total, (tile + 1) * perTask);
}

} // namespace

GraphBounds GraphBounds::of(GraphOp graph) {
  GraphBounds b;
  auto get = [&](StringRef name, int64_t &field) {
    if (auto attr = graph->getAttrOfType<IntegerAttr>(name))
      field = attr.getInt();
  };
  get("max_batch", b.batch);
  get("max_tokens", b.tokens);
  get("max_seqs", b.seqs);
  return b;
}

int64_t mlir::loom::boundedBytes(MemRefType type, const GraphBounds &bounds) {
  int64_t n = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  for (int64_t d : type.getShape())
    n *= ShapedType::isDynamic(d) ? bounds.dynamicExtent() : d;
  return n;
}

bool mlir::loom::isLayerOp(Operation *op) {
  return isa<RmsNormOp, LinearOp, RopeOp, KvAppendOp, GqaDecodeOp, MlaDecodeOp,
             KdaPrefillOp, SiluMulOp, AddOp, EmbeddingOp, ArgmaxOp>(op);
}

PartitionAttr mlir::loom::choosePartition(Operation *op, TargetAttr target,
                                          const GraphBounds &b) {
  return TypeSwitch<Operation *, PartitionAttr>(op)
      .Case([&](RmsNormOp o) {
        int64_t d = typeOf(o.getX()).getShape().back();
        return partitionRows(op, target, rowsOf(o.getX(), b),
                             2.0 * d * elemBytes(o.getX()), 4.0 * d);
      })
      .Case([&](LinearOp o) { return partitionLinear(o, target, b); })
      .Case([&](RopeOp o) {
        int64_t d = typeOf(o.getX()).getShape().back();
        return partitionRows(op, target, rowsOf(o.getX(), b),
                             2.0 * d * elemBytes(o.getX()), 6.0 * d);
      })
      .Case([&](KvAppendOp o) {
        int64_t row = trailing(o.getK(), 1, b) * elemBytes(o.getK()) +
                      trailing(o.getV(), 1, b) * elemBytes(o.getV());
        return partitionRows(op, target, dimOf(o.getK(), 0, b), 2.0 * row, 0);
      })
      .Case([&](GqaDecodeOp o) { return partitionGqa(o, target, b); })
      .Case([&](MlaDecodeOp o) { return partitionMla(o, target, b); })
      .Case([&](KdaPrefillOp o) { return partitionKda(o, target, b); })
      .Case([&](SiluMulOp o) {
        return partitionElements(op, target, boundedBytes(typeOf(o.getY()), b) /
                                                 elemBytes(o.getY()),
                                 3.0 * elemBytes(o.getY()));
      })
      .Case([&](AddOp o) {
        return partitionElements(op, target, boundedBytes(typeOf(o.getY()), b) /
                                                 elemBytes(o.getY()),
                                 3.0 * elemBytes(o.getY()));
      })
      .Case([&](EmbeddingOp o) {
        int64_t d = dimOf(o.getY(), 1, b);
        return partitionRows(op, target, dimOf(o.getY(), 0, b),
                             2.0 * d * elemBytes(o.getY()), 0);
      })
      .Case([&](ArgmaxOp o) {
        int64_t v = dimOf(o.getX(), 1, b);
        return partitionRows(op, target, dimOf(o.getX(), 0, b),
                             double(v) * elemBytes(o.getX()), double(v));
      })
      .Default([](Operation *) { return PartitionAttr(); });
}

int64_t mlir::loom::taskCounters(Operation *op, PartitionAttr partition,
                                 const GraphBounds &bounds) {
  if (partition.getTasks().size() != 1)
    return 0;
  if (auto mla = dyn_cast<MlaDecodeOp>(op))
    return dimOf(mla.getQNope(), 0, bounds); // one per request
  if (auto gqa = dyn_cast<GqaDecodeOp>(op)) // one per (request, kv head)
    return dimOf(gqa.getQ(), 0, bounds) * dimOf(gqa.getKCache(), 2, bounds);
  return 0;
}

bool mlir::loom::countersWait(Operation *op) { return !isa<GqaDecodeOp>(op); }

SmallVector<SmallVector<int64_t>>
mlir::loom::coRunningTasks(ProgramOp program) {
  DenseMap<int64_t, int64_t> groupOf; // op id -> index in `groups`
  for (Operation &op : program->getParentOp()->getRegion(0).front())
    if (op.hasAttr(kCountersAttr) && countersWait(&op))
      if (auto id = op.getAttrOfType<IntegerAttr>(kOpIdAttr))
        groupOf.try_emplace(id.getInt(), groupOf.size());
  SmallVector<SmallVector<int64_t>> groups(groupOf.size());
  for (TaskOp task : program.getBodyBlock().getOps<TaskOp>()) {
    auto it = groupOf.find(task.getOp());
    if (it != groupOf.end())
      groups[it->second].push_back(task.getId());
  }
  return groups;
}

void mlir::loom::getTaskAccesses(Operation *op, PartitionAttr p, int64_t phase,
                                 int64_t tile, const GraphBounds &b,
                                 SmallVectorImpl<Access> &accesses) {
  AccessBuilder a{accesses, b};
  ArrayRef<int64_t> params = p.getParams();
  TypeSwitch<Operation *>(op)
      .Case([&](RmsNormOp o) {
        int64_t rows = rowsOf(o.getX(), b);
        int64_t r0 = tileBegin(tile, params[0]), r1 = tileEnd(tile, params[0], rows);
        a.rows(o.getX(), false, r0, r1);
        a.whole(o.getWeight(), false);
        a.rows(o.getY(), true, r0, r1);
      })
      .Case([&](LinearOp o) {
        int64_t m = dimOf(o.getX(), 0, b), n = trailing(o.getY(), 1, b);
        int64_t k = trailing(o.getX(), 1, b);
        int64_t nTile = params[0], kSplits = params[1];
        int64_t nt = phase == 0 ? tile / kSplits : tile;
        int64_t n0 = nt * nTile, n1 = std::min(n, n0 + nTile);
        int64_t wRow = k * elemBytes(o.getWeight());
        if (phase == 0) {
          a.whole(o.getX(), false);
          if (o.getNorm())
            a.whole(o.getNorm(), false);
          accesses.push_back({o.getWeight(), false, {{n0 * wRow, n1 * wRow}}});
        }
        if (kSplits == 1 || phase == 1) {
          if (o.getResidual())
            a.columns(o.getResidual(), false, m, n, n0, n1);
          a.columns(o.getY(), true, m, n, n0, n1);
        }
        if (kSplits > 1) {
          // Split s's partial sums are the slab [s][m][n0:n1) of floats.
          auto slab = [&](int64_t s, bool write) {
            if (m > kMaxColumnRows) {
              a.scratchRange(write, s * m * n * 4, (s + 1) * m * n * 4);
              return;
            }
            for (int64_t r = 0; r < m; ++r)
              a.scratchRange(write, ((s * m + r) * n + n0) * 4,
                             ((s * m + r) * n + n1) * 4);
          };
          if (phase == 0)
            slab(tile % kSplits, true);
          else
            for (int64_t s = 0; s < kSplits; ++s)
              slab(s, false);
        }
      })
      .Case([&](RopeOp o) {
        int64_t rows = rowsOf(o.getX(), b);
        int64_t r0 = tileBegin(tile, params[0]), r1 = tileEnd(tile, params[0], rows);
        a.rows(o.getX(), false, r0, r1);
        a.whole(o.getPositions(), false);
        a.rows(o.getY(), true, r0, r1);
      })
      .Case([&](KvAppendOp o) {
        int64_t t = dimOf(o.getK(), 0, b);
        int64_t t0 = tileBegin(tile, params[0]), t1 = tileEnd(tile, params[0], t);
        a.rows(o.getK(), false, t0 * dimOf(o.getK(), 1, b), t1 * dimOf(o.getK(), 1, b));
        a.rows(o.getV(), false, t0 * dimOf(o.getV(), 1, b), t1 * dimOf(o.getV(), 1, b));
        a.whole(o.getSlotMapping(), false);
        // Slots come from the meta buffer at run time: the whole cache.
        a.whole(o.getKCache(), true);
        a.whole(o.getVCache(), true);
      })
      .Case([&](GqaDecodeOp o) {
        if (phase == 0) {
          // A split task's request, kv head and tokens come from the runtime
          // batch and kv_lens (GqaSplits.h): any request's Q rows and K/V.
          for (Value v : {o.getQ(), o.getKCache(), o.getVCache(),
                          o.getKvIndptr(), o.getKvIndices(), o.getKvLens()})
            a.whole(v, false);
          a.scratch(true);
          if (p.getTasks().size() == 1) {
            // One phase: the last split of a pair merges it (any pair's).
            a.scratch(false);
            a.whole(o.getO(), true);
          }
          return;
        }
        // Merge task = pair (request, kv head); its splits are any tasks'.
        int64_t hq = dimOf(o.getQ(), 1, b), hkv = dimOf(o.getKCache(), 2, b);
        int64_t group = hq / hkv, req = tile / hkv, hk = tile % hkv;
        a.whole(o.getKvLens(), false);
        a.scratch(false);
        a.rows(o.getO(), true, req * hq + hk * group, req * hq + (hk + 1) * group);
      })
      .Case([&](MlaDecodeOp o) {
        bool oneBody = p.getTasks().size() == 1;
        if (phase == 0) {
          // A slot's tokens depend on the runtime lengths: any request.
          for (Value v : {o.getQNope(), o.getQPe(), o.getCkvCache(),
                          o.getKpeCache(), o.getKvIndptr(), o.getKvIndices(),
                          o.getKvLens()})
            a.whole(v, false);
          a.scratch(true);
          if (!oneBody)
            return;
          // One phase: a slot also writes (part of) any request's output.
        }
        // A merge task's units depend on the runtime batch: any row.
        a.whole(o.getKvLens(), false);
        a.scratch(false);
        Access out{o.getO(), true, {}}, lse{o.getLse(), true, {}};
        out.ranges.push_back({0, boundedBytes(typeOf(o.getO()), b)});
        lse.ranges.push_back({0, boundedBytes(typeOf(o.getLse()), b)});
        accesses.push_back(std::move(out));
        accesses.push_back(std::move(lse));
      })
      .Case([&](KdaPrefillOp o) {
        if (phase == 0) {
          for (Value v : {o.getQ(), o.getK(), o.getV(), o.getG(), o.getBeta(),
                          o.getALog(), o.getDtBias(), o.getCuSeqlens()})
            a.whole(v, false);
          a.scratch(true);
          return;
        }
        a.whole(o.getCuSeqlens(), false);
        a.whole(o.getInitialState(), false);
        a.scratch(false);
        a.whole(o.getO(), true);
        a.whole(o.getFinalState(), true);
      })
      .Case([&](SiluMulOp o) {
        int64_t e = boundedBytes(typeOf(o.getY()), b) / elemBytes(o.getY());
        int64_t e0 = tileBegin(tile, params[0]), e1 = tileEnd(tile, params[0], e);
        a.elements(o.getGate(), false, e0, e1);
        a.elements(o.getUp(), false, e0, e1);
        a.elements(o.getY(), true, e0, e1);
      })
      .Case([&](AddOp o) {
        int64_t e = boundedBytes(typeOf(o.getY()), b) / elemBytes(o.getY());
        int64_t e0 = tileBegin(tile, params[0]), e1 = tileEnd(tile, params[0], e);
        a.elements(o.getA(), false, e0, e1);
        a.elements(o.getB(), false, e0, e1);
        a.elements(o.getY(), true, e0, e1);
      })
      .Case([&](EmbeddingOp o) {
        int64_t rows = dimOf(o.getY(), 0, b);
        int64_t r0 = tileBegin(tile, params[0]), r1 = tileEnd(tile, params[0], rows);
        a.whole(o.getTable(), false);
        a.whole(o.getIds(), false);
        a.rows(o.getY(), true, r0, r1);
      })
      .Case([&](ArgmaxOp o) {
        int64_t rows = dimOf(o.getX(), 0, b);
        int64_t r0 = tileBegin(tile, params[0]), r1 = tileEnd(tile, params[0], rows);
        a.rows(o.getX(), false, r0, r1);
        a.elements(o.getIndices(), true, r0, r1);
      });
}

void mlir::loom::getTaskLoads(Operation *op, PartitionAttr p, int64_t phase,
                              int64_t tile, const GraphBounds &b,
                              SmallVectorImpl<TaskLoad> &loads) {
  auto linear = dyn_cast<LinearOp>(op);
  if (!linear || phase != 0)
    return;
  // The rows and K range TileEmitter hands linearTile / linearPartial.
  ArrayRef<int64_t> params = p.getParams();
  int64_t n = trailing(linear.getY(), 1, b), k = trailing(linear.getX(), 1, b);
  int64_t nTile = params[0], kSplits = params[1];
  int64_t n0 = (tile / kSplits) * nTile, n1 = std::min(n, n0 + nTile);
  int64_t kPer = ceilDiv(k, kSplits), k0 = (tile % kSplits) * kPer;
  int64_t k1 = std::min(k, k0 + kPer);
  int64_t eb = elemBytes(linear.getWeight()), wRow = k * eb;
  if (n0 >= n1 || k0 >= k1)
    return;
  if (kSplits == 1) {
    loads.push_back({linear.getWeight(), n0 * wRow, (n1 - n0) * wRow, 1, 0});
    return;
  }
  loads.push_back(
      {linear.getWeight(), n0 * wRow + k0 * eb, (k1 - k0) * eb, n1 - n0, wRow});
}

std::optional<std::pair<int64_t, int64_t>>
mlir::loom::locateRoot(Value view, const GraphBounds &bounds) {
  int64_t offset = 0;
  while (auto slice = view.getDefiningOp<SliceOp>()) {
    offset += slice.getIndex() * boundedBytes(slice.getType(), bounds);
    view = slice.getSource();
  }
  if (auto arg = dyn_cast<BlockArgument>(view))
    return std::make_pair(int64_t(arg.getArgNumber()), offset);
  if (auto alloc = view.getDefiningOp<AllocOp>()) {
    auto placed = alloc->getAttrOfType<IntegerAttr>(kOffsetAttr);
    if (!placed)
      return std::nullopt;
    return std::make_pair(kArenaRoot, offset + placed.getInt());
  }
  return std::nullopt;
}

int64_t mlir::loom::firstRuntimeRow(Operation *op, PartitionAttr p,
                                    int64_t phase, int64_t tile,
                                    const GraphBounds &b) {
  // The row tiles of TileEmitter: rows [tile * per, ...) of `rowsPer` rows
  // per leading entry are empty once the runtime size is at most the entry
  // of their first row.
  const int64_t per = p.getParams().empty() ? 0 : p.getParams()[0];
  auto first = [&](int64_t rowsPer) { return tile * per / rowsPer; };
  return TypeSwitch<Operation *, int64_t>(op)
      .Case([&](RmsNormOp o) {
        int64_t d = typeOf(o.getX()).getShape().back();
        return first(trailing(o.getX(), 1, b) / d);
      })
      .Case([&](RopeOp o) { return first(dimOf(o.getX(), 1, b)); })
      .Case([&](SiluMulOp o) { return first(trailing(o.getY(), 1, b)); })
      .Case([&](AddOp o) { return first(trailing(o.getY(), 1, b)); })
      .Case<KvAppendOp, EmbeddingOp, ArgmaxOp>(
          [&](Operation *) { return first(1); })
      .Case([&](GqaDecodeOp o) {
        // Merge task = (request, kv head); the splits balance over the
        // runtime lengths.
        return phase == 1 ? tile / dimOf(o.getKCache(), 2, b) : int64_t(0);
      })
      .Default([](Operation *) { return int64_t(0); });
}

int64_t mlir::loom::runtimeSizeArg(GraphOp graph) {
  for (BlockArgument arg : graph.getBodyBlock().getArguments()) {
    auto type = cast<MemRefType>(arg.getType());
    if (graph.getArgRole(arg.getArgNumber()) == Role::Input &&
        type.getRank() > 0 && type.isDynamicDim(0))
      return arg.getArgNumber();
  }
  return -1;
}
