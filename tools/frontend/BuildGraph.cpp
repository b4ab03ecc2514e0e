//===- BuildGraph.cpp - Kernel spec to loom.graph --------------------------===//
#include "tools/frontend/BuildGraph.h"

#include "ir/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;
using namespace mlir::loom;

namespace loom {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// Declares a graph's arguments, then creates it and hands out the
/// arguments by name while the body is built.
class GraphBuilder {
public:
  GraphBuilder(MLIRContext &context, const ChipInfo &chip)
      : b(&context), module(ModuleOp::create(b.getUnknownLoc())),
        target(getTargetAttr(&context, chip)) {}

  Type elementType(spec::DType dtype) {
    switch (dtype) {
    case spec::DType::BF16:
      return b.getBF16Type();
    case spec::DType::F16:
      return b.getF16Type();
    case spec::DType::F32:
      return b.getF32Type();
    }
    llvm_unreachable("unknown dtype");
  }

  MemRefType buf(ArrayRef<int64_t> shape, Type element) {
    return MemRefType::get(shape, element);
  }

  /// `bound`: most entries of the dynamic leading dimension at run time.
  void arg(StringRef name, Role role, MemRefType type, int64_t bound = 0) {
    names.push_back(name);
    roles.push_back(role);
    types.push_back(type);
    bounds.push_back(type.getRank() > 0 && type.isDynamicDim(0) ? bound : 0);
  }

  /// Creates the graph with the declared arguments; the body goes before its
  /// terminator.
  void create(StringRef symbol) {
    b.setInsertionPointToEnd(module->getBody());
    graph = b.create<GraphOp>(b.getUnknownLoc(), symbol, target, names, roles,
                              types);
    graph.setArgBounds(bounds);
    for (auto [name, value] :
         llvm::zip(names, graph.getBodyBlock().getArguments()))
      args[name] = value;
    b.setInsertionPoint(graph.getBodyBlock().getTerminator());
  }

  Value get(StringRef name) {
    assert(args.count(name) && "undeclared graph argument");
    return args.lookup(name);
  }

  void bound(StringRef name, int64_t value) {
    graph->setAttr(name, b.getI64IntegerAttr(value));
  }

  Value alloc(ArrayRef<int64_t> shape, Type element) {
    return b.create<AllocOp>(loc(), buf(shape, element));
  }

  /// Entry `index` of a stacked buffer.
  Value slice(Value stacked, int64_t index) {
    auto type = cast<MemRefType>(stacked.getType());
    auto sliced = MemRefType::get(type.getShape().drop_front(),
                                  type.getElementType());
    return b.create<SliceOp>(loc(), sliced, stacked, index);
  }

  FloatAttr f32(double value) { return b.getF32FloatAttr(value); }
  Location loc() { return b.getUnknownLoc(); }

  /// Verifies the module and hands it over (null if it does not verify).
  OwningOpRef<ModuleOp> finish() {
    if (failed(verify(*module)))
      return nullptr;
    return std::move(module);
  }

  OpBuilder b;

private:
  OwningOpRef<ModuleOp> module;
  TargetAttr target;
  GraphOp graph;
  SmallVector<StringRef> names;
  SmallVector<Role> roles;
  SmallVector<Type> types;
  SmallVector<int64_t> bounds;
  llvm::StringMap<Value> args;
};

void buildMlaDecode(GraphBuilder &g, const spec::Spec &s,
                    const spec::MlaDecodeSpec &m) {
  Type act = g.elementType(m.dtype);
  Type i32 = g.b.getI32Type(), f32 = g.b.getF32Type();
  int64_t h = m.numHeads, dc = m.headDimCkv, dp = m.headDimKpe;
  int64_t batch = m.maxBatch;
  g.arg("q_nope", Role::Input, g.buf({kDyn, h, dc}, act), batch);
  g.arg("q_pe", Role::Input, g.buf({kDyn, h, dp}, act), batch);
  g.arg("ckv_cache", Role::Cache, g.buf({m.maxPages, m.pageSize, dc}, act));
  g.arg("kpe_cache", Role::Cache, g.buf({m.maxPages, m.pageSize, dp}, act));
  g.arg("kv_indptr", Role::Meta, g.buf({kDyn}, i32), batch + 1);
  g.arg("kv_indices", Role::Meta, g.buf({kDyn}, i32), m.maxPages);
  g.arg("kv_lens", Role::Meta, g.buf({kDyn}, i32), batch);
  g.arg("o", Role::Output, g.buf({kDyn, h, dc}, act), batch);
  g.arg("lse", Role::Output, g.buf({kDyn, h}, f32), batch);
  g.create(s.name);
  g.bound("max_batch", m.maxBatch);
  g.b.create<MlaDecodeOp>(g.loc(), g.get("q_nope"), g.get("q_pe"),
                          g.get("ckv_cache"), g.get("kpe_cache"),
                          g.get("kv_indptr"), g.get("kv_indices"),
                          g.get("kv_lens"), g.get("o"), g.get("lse"),
                          g.f32(m.smScale));
}

void buildKdaPrefill(GraphBuilder &g, const spec::Spec &s,
                     const spec::KdaPrefillSpec &k) {
  Type act = g.elementType(k.dtype);
  Type i32 = g.b.getI32Type(), f32 = g.b.getF32Type();
  int64_t h = k.numHeads, dk = k.headDimK, dv = k.headDimV;
  int64_t tokens = k.maxTokens, seqs = k.maxSeqs;
  g.arg("q", Role::Input, g.buf({kDyn, h, dk}, act), tokens);
  g.arg("k", Role::Input, g.buf({kDyn, h, dk}, act), tokens);
  g.arg("v", Role::Input, g.buf({kDyn, h, dv}, act), tokens);
  g.arg("g", Role::Input, g.buf({kDyn, h, dk}, act), tokens);
  g.arg("beta", Role::Input, g.buf({kDyn, h}, act), tokens);
  g.arg("a_log", Role::Weight, g.buf({h}, f32));
  g.arg("dt_bias", Role::Weight, g.buf({h, dk}, f32));
  g.arg("cu_seqlens", Role::Meta, g.buf({kDyn}, i32), seqs + 1);
  if (k.initialState)
    g.arg("initial_state", Role::Input, g.buf({kDyn, h, dk, dv}, f32), seqs);
  g.arg("o", Role::Output, g.buf({kDyn, h, dv}, act), tokens);
  g.arg("final_state", Role::Output, g.buf({kDyn, h, dk, dv}, f32), seqs);
  g.create(s.name);
  g.bound("max_tokens", k.maxTokens);
  g.bound("max_seqs", k.maxSeqs);

  bool bounded = k.gate == spec::KdaGate::Bounded;
  FloatAttr lowerBound = bounded ? g.f32(*k.lowerBound) : FloatAttr();
  double scale = k.scale ? *k.scale : 1.0 / std::sqrt(double(dk));
  Value init = k.initialState ? g.get("initial_state") : Value();
  g.b.create<KdaPrefillOp>(
      g.loc(), g.get("q"), g.get("k"), g.get("v"), g.get("g"), g.get("beta"),
      g.get("a_log"), g.get("dt_bias"), g.get("cu_seqlens"), init, g.get("o"),
      g.get("final_state"),
      GateAttr::get(g.b.getContext(), bounded ? Gate::Bounded
                                              : Gate::Unbounded),
      lowerBound, g.f32(scale), g.b.getI64IntegerAttr(k.chunkSize),
      g.b.getBoolAttr(k.qkL2Norm));
}

/// Per-layer weights, stacked along a leading `layers` dimension.
struct LayerWeights {
  Value attnNorm, wq, wk, wv, wo, qNorm, kNorm, ffnNorm, wGate, wUp, wDown,
      kCache, vCache;
};

void buildDecoder(GraphBuilder &g, const spec::Spec &s,
                  const spec::DecoderSpec &d) {
  Type act = g.elementType(d.dtype);
  Type i32 = g.b.getI32Type(), f32 = g.b.getF32Type();
  int64_t L = d.layers, hid = d.hidden, hq = d.numQHeads, hkv = d.numKvHeads,
          hd = d.headDim, ffn = d.ffn, B = d.maxBatch;

  if (d.head) {
    g.arg("token_ids", Role::Input, g.buf({kDyn}, i32), B);
    g.arg("embed", Role::Weight, g.buf({d.vocab, hid}, act));
  } else {
    g.arg("hidden", Role::Input, g.buf({kDyn, hid}, act), B);
  }
  g.arg("attn_norm", Role::Weight, g.buf({L, hid}, act));
  g.arg("w_q", Role::Weight, g.buf({L, hq * hd, hid}, act));
  g.arg("w_k", Role::Weight, g.buf({L, hkv * hd, hid}, act));
  g.arg("w_v", Role::Weight, g.buf({L, hkv * hd, hid}, act));
  g.arg("w_o", Role::Weight, g.buf({L, hid, hq * hd}, act));
  if (d.qkNorm) {
    g.arg("q_norm", Role::Weight, g.buf({L, hd}, act));
    g.arg("k_norm", Role::Weight, g.buf({L, hd}, act));
  }
  g.arg("ffn_norm", Role::Weight, g.buf({L, hid}, act));
  g.arg("w_gate", Role::Weight, g.buf({L, ffn, hid}, act));
  g.arg("w_up", Role::Weight, g.buf({L, ffn, hid}, act));
  g.arg("w_down", Role::Weight, g.buf({L, hid, ffn}, act));
  if (d.head) {
    g.arg("final_norm", Role::Weight, g.buf({hid}, act));
    g.arg("lm_head", Role::Weight, g.buf({d.vocab, hid}, act));
  }
  g.arg("k_cache", Role::Cache, g.buf({L, d.maxPages, d.pageSize, hkv, hd}, act));
  g.arg("v_cache", Role::Cache, g.buf({L, d.maxPages, d.pageSize, hkv, hd}, act));
  g.arg("positions", Role::Meta, g.buf({kDyn}, i32), B);
  g.arg("slot_mapping", Role::Meta, g.buf({kDyn}, i32), B);
  g.arg("kv_indptr", Role::Meta, g.buf({kDyn}, i32), B + 1);
  g.arg("kv_indices", Role::Meta, g.buf({kDyn}, i32), d.maxPages);
  g.arg("kv_lens", Role::Meta, g.buf({kDyn}, i32), B);
  if (d.head)
    g.arg("next_tokens", Role::Output, g.buf({kDyn}, i32), B);
  else
    g.arg("hidden_out", Role::Output, g.buf({kDyn, hid}, act), B);
  g.create(s.name);
  g.bound("max_batch", B);

  OpBuilder &b = g.b;
  Location loc = g.loc();
  FloatAttr eps = g.f32(d.rmsEps);
  Value x; // the residual stream entering the current layer
  if (d.head) {
    x = g.alloc({B, hid}, act);
    b.create<EmbeddingOp>(loc, g.get("embed"), g.get("token_ids"), x);
  } else {
    x = g.get("hidden");
  }

  for (int64_t l = 0; l < L; ++l) {
    LayerWeights w;
    w.attnNorm = g.slice(g.get("attn_norm"), l);
    w.wq = g.slice(g.get("w_q"), l);
    w.wk = g.slice(g.get("w_k"), l);
    w.wv = g.slice(g.get("w_v"), l);
    w.wo = g.slice(g.get("w_o"), l);
    if (d.qkNorm) {
      w.qNorm = g.slice(g.get("q_norm"), l);
      w.kNorm = g.slice(g.get("k_norm"), l);
    }
    w.ffnNorm = g.slice(g.get("ffn_norm"), l);
    w.wGate = g.slice(g.get("w_gate"), l);
    w.wUp = g.slice(g.get("w_up"), l);
    w.wDown = g.slice(g.get("w_down"), l);
    w.kCache = g.slice(g.get("k_cache"), l);
    w.vCache = g.slice(g.get("v_cache"), l);

    // Attention block.
    Value h = g.alloc({B, hid}, act);
    b.create<RmsNormOp>(loc, x, w.attnNorm, h, eps);
    Value q = g.alloc({B, hq, hd}, act);
    Value k = g.alloc({B, hkv, hd}, act);
    Value v = g.alloc({B, hkv, hd}, act);
    b.create<LinearOp>(loc, h, w.wq, Value(), q);
    b.create<LinearOp>(loc, h, w.wk, Value(), k);
    b.create<LinearOp>(loc, h, w.wv, Value(), v);
    if (d.qkNorm) {
      b.create<RmsNormOp>(loc, q, w.qNorm, q, eps);
      b.create<RmsNormOp>(loc, k, w.kNorm, k, eps);
    }
    for (Value heads : {q, k}) {
      auto rope = b.create<RopeOp>(loc, heads, g.get("positions"), heads,
                                   g.f32(d.ropeTheta), b.getI64IntegerAttr(hd),
                                   FloatAttr(), FloatAttr(), FloatAttr(),
                                   IntegerAttr());
      if (const auto &rs = d.ropeScaling; rs.factor > 0) {
        rope.setScalingFactorAttr(g.f32(rs.factor));
        rope.setLowFreqFactorAttr(g.f32(rs.lowFreqFactor));
        rope.setHighFreqFactorAttr(g.f32(rs.highFreqFactor));
        rope.setOriginalMaxPositionAttr(
            b.getI64IntegerAttr(rs.originalMaxPosition));
      }
    }
    b.create<KvAppendOp>(loc, k, v, g.get("slot_mapping"), w.kCache, w.vCache);
    Value attn = g.alloc({B, hq, hd}, act);
    b.create<GqaDecodeOp>(loc, q, w.kCache, w.vCache, g.get("kv_indptr"),
                          g.get("kv_indices"), g.get("kv_lens"), attn,
                          g.f32(1.0 / std::sqrt(double(hd))));
    Value x1 = g.alloc({B, hid}, act);
    b.create<LinearOp>(loc, attn, w.wo, x, x1);

    // MLP block.
    Value h2 = g.alloc({B, hid}, act);
    b.create<RmsNormOp>(loc, x1, w.ffnNorm, h2, eps);
    Value gate = g.alloc({B, ffn}, act);
    Value up = g.alloc({B, ffn}, act);
    b.create<LinearOp>(loc, h2, w.wGate, Value(), gate);
    b.create<LinearOp>(loc, h2, w.wUp, Value(), up);
    Value a = g.alloc({B, ffn}, act);
    b.create<SiluMulOp>(loc, gate, up, a);
    bool lastWritesOutput = l == L - 1 && !d.head;
    Value x2 = lastWritesOutput ? g.get("hidden_out") : g.alloc({B, hid}, act);
    b.create<LinearOp>(loc, a, w.wDown, x1, x2);
    x = x2;
  }

  if (d.head) {
    Value hf = g.alloc({B, hid}, act);
    b.create<RmsNormOp>(loc, x, g.get("final_norm"), hf, eps);
    Value logits = g.alloc({B, d.vocab}, f32);
    b.create<LinearOp>(loc, hf, g.get("lm_head"), Value(), logits);
    b.create<ArgmaxOp>(loc, logits, g.get("next_tokens"));
  }
}

} // namespace

OwningOpRef<ModuleOp> buildGraph(MLIRContext &context, const spec::Spec &spec,
                                 const ChipInfo &chip) {
  context.getOrLoadDialect<LoomDialect>();
  GraphBuilder g(context, chip);
  std::visit(
      [&](const auto &family) {
        using T = std::decay_t<decltype(family)>;
        if constexpr (std::is_same_v<T, spec::MlaDecodeSpec>)
          buildMlaDecode(g, spec, family);
        else if constexpr (std::is_same_v<T, spec::KdaPrefillSpec>)
          buildKdaPrefill(g, spec, family);
        else
          buildDecoder(g, spec, family);
      },
      spec.family);
  return g.finish();
}

} // namespace loom
