//===- LoomOps.cpp - Verifiers of the loom layer ops -----------------------===//
//
// Each layer op checks ranks, dimensions that must agree, element types and
// attribute ranges. Dynamic dimensions (`?`, runtime batch or token counts)
// agree with anything; the runtime checks them against the meta buffers.
//
//===----------------------------------------------------------------------===//
#include "ir/LoomOps.h"
#include "kernels/common/BodyLimits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

/// A named operand of a layer op, for shape checks and their messages.
struct Buf {
  Value value;
  const char *name;

  MemRefType type() const { return cast<MemRefType>(value.getType()); }
  int64_t rank() const { return type().getRank(); }
  int64_t dim(int64_t i) const {
    return type().getDimSize(i < 0 ? rank() + i : i);
  }
  Type elementType() const { return type().getElementType(); }
};

/// Reports the first failed check of one op. Checks after a failure are
/// skipped, so the op gets exactly one diagnostic.
class Checker {
public:
  explicit Checker(Operation *op) : op(op) {}

  /// Every buffer is dense and row-major.
  Checker &layouts(std::initializer_list<Buf> bufs) {
    for (const Buf &b : bufs)
      if (ok && b.value && !b.type().getLayout().isIdentity())
        fail() << "'" << b.name << "' must have the identity (row-major) "
                  "layout, got "
               << b.value.getType();
    return *this;
  }

  Checker &rank(const Buf &b, int64_t rank) {
    if (ok && b.rank() != rank)
      fail() << "'" << b.name << "' must have rank " << rank << ", got "
             << b.value.getType();
    return *this;
  }

  Checker &minRank(const Buf &b, int64_t rank) {
    if (ok && b.rank() < rank)
      fail() << "'" << b.name << "' must have rank at least " << rank
             << ", got " << b.value.getType();
    return *this;
  }

  /// Dimension `ai` of `a` equals dimension `bi` of `b` (negative: from the end).
  Checker &sameDim(const Buf &a, int64_t ai, const Buf &b, int64_t bi) {
    if (!ok)
      return *this;
    int64_t x = a.dim(ai), y = b.dim(bi);
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      fail() << "dimension " << (ai < 0 ? a.rank() + ai : ai) << " of '"
             << a.name << "' (" << x << ") must equal dimension "
             << (bi < 0 ? b.rank() + bi : bi) << " of '" << b.name << "' ("
             << y << ")";
    return *this;
  }

  /// Dimension `i` of `a` is at most `max` (what every target's bodies run,
  /// kernels/common/BodyLimits.h); `what` names it.
  Checker &dimAtMost(const Buf &a, int64_t i, int64_t max, const char *what) {
    if (!ok)
      return *this;
    int64_t x = a.dim(i);
    if (!ShapedType::isDynamic(x) && x > max)
      fail() << what << " (dimension " << i << " of '" << a.name << "', "
             << x << ") must be at most " << max
             << ", the largest the bodies run";
    return *this;
  }

  /// Dimension `ai` of `a` is `expected` plus dimension `bi` of `b`.
  Checker &dimIsPlus(const Buf &a, int64_t ai, const Buf &b, int64_t bi,
                     int64_t plus, const char *why) {
    if (!ok)
      return *this;
    int64_t x = a.dim(ai), y = b.dim(bi);
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) &&
        x != y + plus)
      fail() << "'" << a.name << "' has " << x << " entries but " << why
             << " needs " << y + plus;
    return *this;
  }

  /// Same rank and agreeing dimensions.
  Checker &sameShape(const Buf &a, const Buf &b) {
    if (ok && a.rank() != b.rank())
      fail() << "'" << b.name << "' must have the shape of '" << a.name
             << "': " << b.value.getType() << " vs " << a.value.getType();
    for (int64_t i = 0; ok && i < a.rank(); ++i)
      sameDim(a, i, b, i);
    return *this;
  }

  Checker &sameElementType(const Buf &a, const Buf &b) {
    if (ok && a.elementType() != b.elementType())
      fail() << "'" << a.name << "' and '" << b.name
             << "' must have the same element type, got " << a.elementType()
             << " and " << b.elementType();
    return *this;
  }

  Checker &positive(double value, const char *attr) {
    if (ok && !(value > 0))
      fail() << "'" << attr << "' must be positive, got " << value;
    return *this;
  }

  /// A free-form condition with its message.
  Checker &require(bool cond, const Twine &message) {
    if (ok && !cond)
      fail() << message;
    return *this;
  }

  bool isOk() const { return ok; }
  LogicalResult result() const { return success(ok); }

private:
  InFlightDiagnostic fail() {
    ok = false;
    return op->emitOpError();
  }

  Operation *op;
  bool ok = true;
};

/// Product of dimensions [from, rank), or dynamic if any is dynamic.
int64_t trailingProduct(const Buf &b, int64_t from) {
  int64_t product = 1;
  for (int64_t i = from; i < b.rank(); ++i) {
    if (ShapedType::isDynamic(b.dim(i)))
      return ShapedType::kDynamic;
    product *= b.dim(i);
  }
  return product;
}

bool known(int64_t dim) { return !ShapedType::isDynamic(dim); }

/// A dimension for a message: its size, or `?` when dynamic.
std::string dimString(int64_t dim) {
  return known(dim) ? std::to_string(dim) : "?";
}

} // namespace

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

void AllocOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getBuffer(), "buf");
}

/// `%w_q_3` for entry 3 of the graph argument `w_q`.
void SliceOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  auto arg = dyn_cast<BlockArgument>(getSource());
  auto graph = arg ? dyn_cast<GraphOp>(arg.getOwner()->getParentOp()) : GraphOp();
  if (graph && arg.getArgNumber() < graph.getArgNames().size())
    setNameFn(getResult(), (graph.getArgName(arg.getArgNumber()) + "_" +
                            Twine(getIndex())).str());
  else
    setNameFn(getResult(), "slice");
}

LogicalResult AllocOp::verify() {
  return Checker(*this).layouts({{getBuffer(), "buffer"}}).result();
}

LogicalResult SliceOp::verify() {
  Buf src{getSource(), "source"}, res{getResult(), "result"};
  Checker c(*this);
  c.layouts({src, res}).minRank(src, 1).rank(res, src.rank() - 1);
  for (int64_t i = 0; c.isOk() && i < res.rank(); ++i)
    c.sameDim(src, i + 1, res, i);
  c.sameElementType(src, res);
  if (!c.isOk())
    return failure();
  int64_t index = getIndex();
  c.require(index >= 0 && (!known(src.dim(0)) || index < src.dim(0)),
            "index " + Twine(index) + " is out of range for a leading "
            "dimension of " + dimString(src.dim(0)));
  return c.result();
}

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::verify() {
  Buf x{getX(), "x"}, w{getWeight(), "weight"}, y{getY(), "y"};
  return Checker(*this)
      .layouts({x, w, y})
      .minRank(x, 1)
      .rank(w, 1)
      .sameDim(w, 0, x, -1)
      .sameShape(x, y)
      .positive(getEps().convertToDouble(), "eps")
      .result();
}

LogicalResult LinearOp::verify() {
  Buf x{getX(), "x"}, w{getWeight(), "weight"}, y{getY(), "y"};
  Buf r{getResidual(), "residual"};
  Checker c(*this);
  c.layouts({x, w, y, r}).minRank(x, 2).rank(w, 2).minRank(y, 2);
  c.sameElementType(x, w).sameDim(x, 0, y, 0);
  if (!c.isOk())
    return failure();
  int64_t k = trailingProduct(x, 1), n = trailingProduct(y, 1);
  c.require(!known(k) || !known(w.dim(1)) || k == w.dim(1),
            "'x' has " + Twine(k) + " input features but 'weight' has " +
                Twine(w.dim(1)) + " columns");
  c.require(!known(n) || !known(w.dim(0)) || n == w.dim(0),
            "'y' has " + Twine(n) + " output features but 'weight' has " +
                Twine(w.dim(0)) + " rows");
  if (r.value)
    c.sameShape(y, r);
  Buf g{getNorm(), "norm"};
  c.require(!g.value == !getNormEps(),
            "'norm' and 'norm_eps' must be given together");
  if (g.value && getNormEps()) {
    c.layouts({g}).rank(g, 1).sameElementType(x, g);
    if (c.isOk())
      c.require(!known(k) || !known(g.dim(0)) || g.dim(0) == k,
                "'norm' has " + Twine(g.dim(0)) + " entries but 'x' has " +
                    Twine(k) + " input features");
    c.positive(getNormEps()->convertToDouble(), "norm_eps");
  }
  return c.result();
}

LogicalResult RopeOp::verify() {
  Buf x{getX(), "x"}, pos{getPositions(), "positions"}, y{getY(), "y"};
  int64_t rot = getRotaryDim(), headDim = x.rank() == 3 ? x.dim(2) : 0;
  return Checker(*this)
      .layouts({x, pos, y})
      .rank(x, 3)
      .rank(pos, 1)
      .sameShape(x, y)
      .sameDim(pos, 0, x, 0)
      .require(!known(headDim) || headDim % 2 == 0,
               "head dimension must be even, got " + Twine(headDim))
      .require(rot > 0 && rot % 2 == 0 && (!known(headDim) || rot <= headDim),
               "'rotary_dim' must be even and in (0, " + dimString(headDim) +
                   "], got " + Twine(rot))
      .positive(getTheta().convertToDouble(), "theta")
      .require(scalingValid(), "Llama 3.1 scaling needs all of "
                               "'scaling_factor' (>= 1), 'low_freq_factor' > 0, "
                               "'high_freq_factor' above it and "
                               "'original_max_position' > 0, or none")
      .result();
}

bool RopeOp::scalingValid() {
  const bool any = getScalingFactor() || getLowFreqFactor() ||
                   getHighFreqFactor() || getOriginalMaxPosition();
  if (!any)
    return true;
  if (!getScalingFactor() || !getLowFreqFactor() || !getHighFreqFactor() ||
      !getOriginalMaxPosition())
    return false;
  const double factor = getScalingFactor()->convertToDouble();
  const double low = getLowFreqFactor()->convertToDouble();
  const double high = getHighFreqFactor()->convertToDouble();
  return factor >= 1 && low > 0 && high > low && *getOriginalMaxPosition() > 0;
}

LogicalResult KvAppendOp::verify() {
  Buf k{getK(), "k"}, v{getV(), "v"}, slots{getSlotMapping(), "slot_mapping"};
  Buf kc{getKCache(), "k_cache"}, vc{getVCache(), "v_cache"};
  return Checker(*this)
      .layouts({k, v, slots, kc, vc})
      .rank(k, 3).rank(v, 3).rank(slots, 1).rank(kc, 4).rank(vc, 4)
      .sameDim(k, 0, v, 0).sameDim(slots, 0, k, 0).sameDim(k, 1, v, 1)
      .sameDim(kc, 0, vc, 0).sameDim(kc, 1, vc, 1)
      .sameDim(kc, 2, k, 1).sameDim(kc, 3, k, 2)
      .sameDim(vc, 2, v, 1).sameDim(vc, 3, v, 2)
      .sameElementType(k, kc).sameElementType(v, vc)
      .result();
}

/// The page-table operands shared by the paged decode ops: `indptr` has one
/// more entry than requests, `lens` one per request.
static Checker &checkPageTable(Checker &c, const Buf &queries,
                               const Buf &indptr, const Buf &indices,
                               const Buf &lens) {
  return c.rank(indptr, 1)
      .rank(indices, 1)
      .rank(lens, 1)
      .dimIsPlus(indptr, 0, queries, 0, 1, "one entry per request plus one")
      .sameDim(lens, 0, queries, 0);
}

LogicalResult GqaDecodeOp::verify() {
  Buf q{getQ(), "q"}, kc{getKCache(), "k_cache"}, vc{getVCache(), "v_cache"};
  Buf indptr{getKvIndptr(), "kv_indptr"}, indices{getKvIndices(), "kv_indices"};
  Buf lens{getKvLens(), "kv_lens"}, o{getO(), "o"};
  Checker c(*this);
  c.layouts({q, kc, vc, indptr, indices, lens, o})
      .rank(q, 3).rank(kc, 4).rank(vc, 4).rank(o, 3)
      .sameDim(kc, 0, vc, 0).sameDim(kc, 1, vc, 1).sameDim(kc, 2, vc, 2)
      .sameDim(q, 2, kc, 3).sameElementType(q, kc)
      .sameDim(o, 0, q, 0).sameDim(o, 1, q, 1).sameDim(o, 2, vc, 3);
  checkPageTable(c, q, indptr, indices, lens);
  if (c.isOk() && known(q.dim(1)) && known(kc.dim(2)))
    c.require(kc.dim(2) > 0 && q.dim(1) % kc.dim(2) == 0,
              "query heads (" + Twine(q.dim(1)) +
                  ") must be a multiple of the cache's KV heads (" +
                  Twine(kc.dim(2)) + ")");
  return c.positive(getSmScale().convertToDouble(), "sm_scale").result();
}

LogicalResult MlaDecodeOp::verify() {
  Buf qn{getQNope(), "q_nope"}, qp{getQPe(), "q_pe"};
  Buf ckv{getCkvCache(), "ckv_cache"}, kpe{getKpeCache(), "kpe_cache"};
  Buf indptr{getKvIndptr(), "kv_indptr"}, indices{getKvIndices(), "kv_indices"};
  Buf lens{getKvLens(), "kv_lens"}, o{getO(), "o"}, lse{getLse(), "lse"};
  Checker c(*this);
  c.layouts({qn, qp, ckv, kpe, indptr, indices, lens, o, lse})
      .rank(qn, 3).rank(qp, 3).rank(ckv, 3).rank(kpe, 3).rank(o, 3)
      .rank(lse, 2)
      .sameDim(qp, 0, qn, 0).sameDim(qp, 1, qn, 1)
      .sameDim(ckv, 0, kpe, 0).sameDim(ckv, 1, kpe, 1)
      .sameDim(ckv, 2, qn, 2).sameDim(kpe, 2, qp, 2)
      .sameElementType(qn, ckv).sameElementType(qp, kpe)
      .sameShape(qn, o).sameDim(lse, 0, qn, 0).sameDim(lse, 1, qn, 1)
      .dimAtMost(qn, 1, ::loom::kMlaMaxHeads, "the number of heads")
      .dimAtMost(qn, 2, ::loom::kMlaMaxDimCkv, "head_dim_ckv")
      .dimAtMost(qp, 2, ::loom::kMlaMaxDimKpe, "head_dim_kpe");
  checkPageTable(c, qn, indptr, indices, lens);
  return c.positive(getSmScale().convertToDouble(), "sm_scale").result();
}

LogicalResult KdaPrefillOp::verify() {
  Buf q{getQ(), "q"}, k{getK(), "k"}, v{getV(), "v"}, g{getG(), "g"};
  Buf beta{getBeta(), "beta"}, aLog{getALog(), "a_log"};
  Buf dtBias{getDtBias(), "dt_bias"}, cu{getCuSeqlens(), "cu_seqlens"};
  Buf init{getInitialState(), "initial_state"}, o{getO(), "o"};
  Buf fin{getFinalState(), "final_state"};
  Checker c(*this);
  c.layouts({q, k, v, g, beta, aLog, dtBias, cu, init, o, fin})
      .rank(q, 3).rank(v, 3).rank(beta, 2).rank(aLog, 1).rank(dtBias, 2)
      .rank(cu, 1).rank(fin, 4)
      .sameShape(q, k).sameShape(q, g).sameShape(v, o)
      .sameDim(v, 0, q, 0).sameDim(v, 1, q, 1)
      .sameDim(beta, 0, q, 0).sameDim(beta, 1, q, 1)
      .sameDim(aLog, 0, q, 1).sameDim(dtBias, 0, q, 1).sameDim(dtBias, 1, q, 2)
      .sameDim(fin, 1, q, 1).sameDim(fin, 2, q, 2).sameDim(fin, 3, v, 2)
      .dimIsPlus(cu, 0, fin, 0, 1, "one entry per sequence plus one");
  if (init.value)
    c.sameShape(fin, init);

  bool bounded = getGate() == Gate::Bounded;
  std::optional<APFloat> lowerBound = getLowerBound();
  c.require(!bounded || lowerBound.has_value(),
            "gate 'bounded' needs a 'lower_bound'");
  c.require(bounded || !lowerBound.has_value(),
            "'lower_bound' is only meaningful with gate 'bounded'");
  if (lowerBound) {
    double lb = lowerBound->convertToDouble();
    if (c.isOk() && !(lb >= -5.0 && lb < 0.0))
      return emitOpError() << "'lower_bound' must be in [-5, 0), got " << lb;
  }
  c.require(getChunkSize() == 16 || getChunkSize() == 64,
            "'chunk_size' must be 16 or 64, got " + Twine(getChunkSize()));
  return c.positive(getScale().convertToDouble(), "scale").result();
}

LogicalResult SiluMulOp::verify() {
  Buf gate{getGate(), "gate"}, up{getUp(), "up"}, y{getY(), "y"};
  return Checker(*this)
      .layouts({gate, up, y})
      .sameShape(gate, up)
      .sameShape(gate, y)
      .result();
}

LogicalResult AddOp::verify() {
  Buf a{getA(), "a"}, b{getB(), "b"}, y{getY(), "y"};
  return Checker(*this).layouts({a, b, y}).sameShape(a, b).sameShape(a, y)
      .result();
}

LogicalResult EmbeddingOp::verify() {
  Buf table{getTable(), "table"}, ids{getIds(), "ids"}, y{getY(), "y"};
  return Checker(*this)
      .layouts({table, ids, y})
      .rank(table, 2).rank(ids, 1).rank(y, 2)
      .sameDim(y, 0, ids, 0).sameDim(y, 1, table, 1)
      .result();
}

LogicalResult ArgmaxOp::verify() {
  Buf x{getX(), "x"}, idx{getIndices(), "indices"};
  return Checker(*this)
      .layouts({x, idx})
      .rank(x, 2).rank(idx, 1)
      .sameDim(idx, 0, x, 0)
      .result();
}

#define GET_OP_CLASSES
#include "ir/LoomOps.cpp.inc"
