//===- LoomOps.td - Ops of the loom dialect ------------------*- tablegen -*-===//
#ifndef LOOM_OPS_TD
#define LOOM_OPS_TD

include "ir/LoomDialect.td"
include "ir/LoomAttrs.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Buffer kinds. Layer ops work on memrefs with the identity layout (dense,
// row-major); the verifiers check shapes, the constraints below element types.
//===----------------------------------------------------------------------===//

def Loom_ActBuf : MemRefOf<[BF16, F16, F32]>;
def Loom_F32Buf : MemRefOf<[F32]>;
def Loom_IntBuf : MemRefOf<[I32, I64]>;

/// A layer op: reads its `ins`, writes its `outs`, checks its shapes.
class Loom_LayerOp<string mnemonic, list<Trait> traits = []>
    : Loom_Op<mnemonic, traits> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structure: graph, return, alloc, slice
//===----------------------------------------------------------------------===//

def Loom_GraphOp : Loom_Op<"graph", [
    Symbol, IsolatedFromAbove, SingleBlockImplicitTerminator<"ReturnOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "One inference step: named buffers and the layer ops over them";
  let description = [{
    The unit Loom compiles into one persistent kernel. Each argument has a
    role (`input`, `weight`, `cache`, `output`, `meta`) and a name, printed as
    its SSA name. `target(...)` is the chip it is compiled for.

    `arg_bounds` (optional) gives, per argument, the most entries its
    dynamic leading dimension may have at run time (0 for static buffers):
    the runtime checks bindings against it and workspaces are sized by it.

    The verifier rejects writes (through any `loom.slice` view) to `input`,
    `weight` and `meta` buffers, `output` buffers that nothing writes, `meta`
    buffers that are not integers, and ops from outside the dialect.

    Example:
    ```mlir
    loom.graph @add target(#loom.target<...>) (
        input %a : memref<8x64xbf16>, input %b : memref<8x64xbf16>,
        output %c : memref<8x64xbf16>) {
      loom.add ins(%a, %b : memref<8x64xbf16>, memref<8x64xbf16>)
               outs(%c : memref<8x64xbf16>)
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Loom_TargetAttr:$target,
                       StrArrayAttr:$arg_names,
                       TypedArrayAttrBase<Loom_RoleAttr, "argument roles">:$arg_roles,
                       OptionalAttr<DenseI64ArrayAttr>:$arg_bounds);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "TargetAttr":$target,
                   "::llvm::ArrayRef<::llvm::StringRef>":$argNames,
                   "::llvm::ArrayRef<Role>":$roles,
                   "::mlir::TypeRange":$argTypes)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    Role getArgRole(unsigned i) {
      return ::llvm::cast<RoleAttr>(getArgRoles()[i]).getValue();
    }
    ::llvm::StringRef getArgName(unsigned i) {
      return ::llvm::cast<::mlir::StringAttr>(getArgNames()[i]).getValue();
    }
  }];
}

def Loom_ReturnOp : Loom_Op<"return", [Pure, Terminator, HasParent<"GraphOp">]> {
  let summary = "Ends a graph body";
  let assemblyFormat = "attr-dict";
}

def Loom_AllocOp : Loom_Op<"alloc", [
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "An intermediate buffer in the step's workspace";
  let description = [{
    A statically shaped intermediate. `loom-plan-memory` places every
    `loom.alloc` in one workspace arena, reusing space by liveness.

    ```mlir
    %h = loom.alloc : memref<32x4096xbf16>
    ```
  }];
  let results = (outs Res<AnyStaticShapeMemRef, "intermediate buffer",
                          [MemAlloc<DefaultResource>]>:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Loom_SliceOp : Loom_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A view of one entry along the leading dimension";
  let description = [{
    Selects entry `index` of the leading dimension: a contiguous view, the
    usual way to take one layer's weights or cache out of a stacked buffer.

    ```mlir
    %w3 = loom.slice %w[3] : memref<32x1024x4096xbf16> -> memref<1024x4096xbf16>
    ```
  }];
  let arguments = (ins AnyMemRef:$source, I64Attr:$index);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat =
      "$source `[` $index `]` attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

def Loom_RmsNormOp : Loom_LayerOp<"rmsnorm"> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `y[..., i] = x[..., i] / sqrt(mean(x[..., :]^2) + eps) * weight[i]`, in
    fp32. Works on rows (`[T, hidden]`) and on heads (`[T, H, D]`, Qwen3's q/k
    norm). `y` may be `x` (in place).

    ```mlir
    loom.rmsnorm ins(%x, %w : memref<?x4096xbf16>, memref<4096xbf16>)
                 outs(%y : memref<?x4096xbf16>) {eps = 1.0e-05 : f32}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "rows", [MemRead]>:$x,
                       Arg<Loom_ActBuf, "scale", [MemRead]>:$weight,
                       Arg<Loom_ActBuf, "normalised rows", [MemWrite]>:$y,
                       F32Attr:$eps);
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `:` type($x) `,` type($weight) `)`
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_LinearOp : Loom_LayerOp<"linear", [AttrSizedOperandSegments]> {
  let summary = "y = x * W^T (+ residual), x optionally RMS-normalised first";
  let description = [{
    `x` is `[M, K...]`, `weight` is `[N, K]` (row-major, one row per output
    feature), `y` is `[M, N...]`: trailing dimensions of `x` and `y` flatten to
    K and N, so a projection can write straight into a `[T, heads, head_dim]`
    layout. With `residual` (`[M, N...]`), `y = residual + x * W^T`; `y` may be
    the residual buffer itself. Accumulates in fp32.

    With `norm` (`[K]`) and `norm_eps`, the rows of `x` are RMS-normalised
    first, as `loom.rmsnorm` would (`x[m, k] / sqrt(mean(x[m, :]^2) + eps) *
    norm[k]`), without the normalised rows ever being stored: what
    `loom-fuse-rmsnorm` makes of an rmsnorm read only by linears.

    ```mlir
    loom.linear ins(%a, %wo : memref<?x4096xbf16>, memref<4096x4096xbf16>)
                residual(%r : memref<?x4096xbf16>)
                outs(%r : memref<?x4096xbf16>)
    loom.linear ins(%x, %wq : memref<?x4096xbf16>, memref<4096x4096xbf16>)
                norm(%g : memref<4096xbf16>)
                outs(%q : memref<?x4096xbf16>) {norm_eps = 1.0e-05 : f32}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "activations", [MemRead]>:$x,
                       Arg<Loom_ActBuf, "weight [N, K]", [MemRead]>:$weight,
                       Arg<Optional<Loom_ActBuf>, "RMS-norm scale [K]", [MemRead]>:$norm,
                       Arg<Optional<Loom_ActBuf>, "residual", [MemRead]>:$residual,
                       Arg<Loom_ActBuf, "result", [MemWrite]>:$y,
                       OptionalAttr<F32Attr>:$norm_eps);
  let builders = [
    OpBuilder<(ins "Value":$x, "Value":$weight, "Value":$residual, "Value":$y), [{
      build($_builder, $_state, x, weight, Value(), residual, y, FloatAttr());
    }]>
  ];
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `:` type($x) `,` type($weight) `)`
    (`norm` `(` $norm^ `:` type($norm) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_RopeOp : Loom_LayerOp<"rope"> {
  let summary = "Rotary position embedding, NeoX halves";
  let description = [{
    For each token t, head h and i < rotary_dim/2, with
    `f = theta^(-2i/rotary_dim) * positions[t]` (the inverse frequency
    scaled as Llama 3.1 does when `scaling_factor` is set, with
    `low_freq_factor`, `high_freq_factor` and `original_max_position`:
    kernels/common/Rope.h):
    `y[i] = x[i] cos f - x[i + r/2] sin f`,
    `y[i + r/2] = x[i + r/2] cos f + x[i] sin f`; dimensions past `rotary_dim`
    are copied. `x`, `y`: `[T, H, D]`; `positions`: `[T]`. `y` may be `x`.

    ```mlir
    loom.rope ins(%q, %pos : memref<?x32x128xbf16>, memref<?xi32>)
              outs(%q : memref<?x32x128xbf16>) {theta = 5.0e+05 : f32, rotary_dim = 128 : i64}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "heads", [MemRead]>:$x,
                       Arg<Loom_IntBuf, "token positions", [MemRead]>:$positions,
                       Arg<Loom_ActBuf, "rotated heads", [MemWrite]>:$y,
                       F32Attr:$theta, I64Attr:$rotary_dim,
                       OptionalAttr<F32Attr>:$scaling_factor,
                       OptionalAttr<F32Attr>:$low_freq_factor,
                       OptionalAttr<F32Attr>:$high_freq_factor,
                       OptionalAttr<I64Attr>:$original_max_position);
  let extraClassDeclaration = [{
    /// The four scaling attributes are all absent, or all present and in
    /// range.
    bool scalingValid();
  }];
  let assemblyFormat = [{
    `ins` `(` $x `,` $positions `:` type($x) `,` type($positions) `)`
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_KvAppendOp : Loom_LayerOp<"kv_append"> {
  let summary = "Write new K and V rows into a paged cache";
  let description = [{
    Token t goes to page `slot_mapping[t] / P`, slot `slot_mapping[t] % P`,
    where the caches are `[pages, P, H_kv, D]`. `k`, `v`: `[T, H_kv, D]`.

    ```mlir
    loom.kv_append ins(%k, %v, %slots : memref<?x8x128xbf16>, memref<?x8x128xbf16>, memref<?xi64>)
                   outs(%kc, %vc : memref<4096x16x8x128xbf16>, memref<4096x16x8x128xbf16>)
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "new keys", [MemRead]>:$k,
                       Arg<Loom_ActBuf, "new values", [MemRead]>:$v,
                       Arg<Loom_IntBuf, "cache slot per token", [MemRead]>:$slot_mapping,
                       Arg<Loom_ActBuf, "paged key cache", [MemWrite]>:$k_cache,
                       Arg<Loom_ActBuf, "paged value cache", [MemWrite]>:$v_cache);
  let assemblyFormat = [{
    `ins` `(` $k `,` $v `,` $slot_mapping `:` type($k) `,` type($v) `,` type($slot_mapping) `)`
    `outs` `(` $k_cache `,` $v_cache `:` type($k_cache) `,` type($v_cache) `)` attr-dict
  }];
}

def Loom_GqaDecodeOp : Loom_LayerOp<"gqa_decode"> {
  let summary = "Grouped-query decode attention over a paged KV cache";
  let description = [{
    One query token per request. Request b reads pages
    `kv_indices[kv_indptr[b] .. kv_indptr[b+1])` holding `kv_lens[b]` tokens;
    query head h uses KV head `h / (H_q / H_kv)`.
    `o[b, h] = softmax(sm_scale * q[b, h] . K^T) V`.
    `q`: `[B, H_q, D]`; caches: `[pages, P, H_kv, D]`; `o`: `[B, H_q, D]`.

    ```mlir
    loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : ...)
                    outs(%o : memref<?x32x128xbf16>) {sm_scale = 0.0883883461 : f32}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "queries", [MemRead]>:$q,
                       Arg<Loom_ActBuf, "paged key cache", [MemRead]>:$k_cache,
                       Arg<Loom_ActBuf, "paged value cache", [MemRead]>:$v_cache,
                       Arg<Loom_IntBuf, "page range per request", [MemRead]>:$kv_indptr,
                       Arg<Loom_IntBuf, "page ids", [MemRead]>:$kv_indices,
                       Arg<Loom_IntBuf, "tokens per request", [MemRead]>:$kv_lens,
                       Arg<Loom_ActBuf, "attention output", [MemWrite]>:$o,
                       F32Attr:$sm_scale);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k_cache `,` $v_cache `,` $kv_indptr `,` $kv_indices `,` $kv_lens `:`
          type($q) `,` type($k_cache) `,` type($v_cache) `,` type($kv_indptr) `,`
          type($kv_indices) `,` type($kv_lens) `)`
    `outs` `(` $o `:` type($o) `)` attr-dict
  }];
}

def Loom_MlaDecodeOp : Loom_LayerOp<"mla_decode"> {
  let summary = "Multi-head latent attention decode (absorbed), paged";
  let description = [{
    DeepSeek-style MLA with the up-projections absorbed into the query.
    Request b's tokens come from pages `kv_indices[kv_indptr[b] ..
    kv_indptr[b+1])`, `kv_lens[b]` tokens in all (the last page may be
    partial). With `Kc = ckv_cache[page, slot]`, `Kp = kpe_cache[page, slot]`:
    `s[h, t] = sm_scale * (q_nope[b, h] . Kc[t] + q_pe[b, h] . Kp[t])`,
    `o[b, h] = sum_t softmax(s)[t] Kc[t]`,
    `lse[b, h] = (m + ln sum_t exp(s - m)) / ln 2` (base 2). An empty request
    gives o = 0 and lse = -inf.
    `q_nope`: `[B, H, D_ckv]`; `q_pe`: `[B, H, D_kpe]`; `ckv_cache`:
    `[pages, P, D_ckv]`; `kpe_cache`: `[pages, P, D_kpe]`; `o`: `[B, H, D_ckv]`;
    `lse`: `[B, H]` f32.

    ```mlir
    loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens : ...)
                    outs(%o, %lse : memref<?x16x512xbf16>, memref<?x16xf32>)
                    {sm_scale = 0.135233775 : f32}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "queries, latent part", [MemRead]>:$q_nope,
                       Arg<Loom_ActBuf, "queries, rope part", [MemRead]>:$q_pe,
                       Arg<Loom_ActBuf, "paged compressed KV", [MemRead]>:$ckv_cache,
                       Arg<Loom_ActBuf, "paged rope keys", [MemRead]>:$kpe_cache,
                       Arg<Loom_IntBuf, "page range per request", [MemRead]>:$kv_indptr,
                       Arg<Loom_IntBuf, "page ids", [MemRead]>:$kv_indices,
                       Arg<Loom_IntBuf, "tokens per request", [MemRead]>:$kv_lens,
                       Arg<Loom_ActBuf, "attention output", [MemWrite]>:$o,
                       Arg<Loom_F32Buf, "base-2 log-sum-exp", [MemWrite]>:$lse,
                       F32Attr:$sm_scale);
  let assemblyFormat = [{
    `ins` `(` $q_nope `,` $q_pe `,` $ckv_cache `,` $kpe_cache `,` $kv_indptr `,`
          $kv_indices `,` $kv_lens `:` type($q_nope) `,` type($q_pe) `,`
          type($ckv_cache) `,` type($kpe_cache) `,` type($kv_indptr) `,`
          type($kv_indices) `,` type($kv_lens) `)`
    `outs` `(` $o `,` $lse `:` type($o) `,` type($lse) `)` attr-dict
  }];
}

def Loom_KdaPrefillOp : Loom_LayerOp<"kda_prefill"> {
  let summary = "Kimi Delta Attention prefill (chunked gated delta rule), varlen";
  let description = [{
    Sequences are packed along T; sequence n is tokens
    `cu_seqlens[n] .. cu_seqlens[n+1])`. Per sequence and head, with state
    S (K x V, fp32, from `initial_state` or zero):
    q and k are L2-normalised when `qk_l2norm` is set; the gate is
    `-exp(a_log[h]) * softplus(g + dt_bias[h])` (`unbounded`) or
    `lower_bound * sigmoid(exp(a_log[h]) * (g + dt_bias[h]))` (`bounded`);
    `beta = sigmoid(beta_raw)`; then per token
    `S = exp(g_t) S; S += beta_t k_t (v_t - S^T k_t)^T; o_t = S^T (scale q_t)`.
    The final S of each sequence goes to `final_state`. `chunk_size` is the
    chunk of the chunked (WY) form the bodies use.
    `q`, `k`, `g`: `[T, H, K]`; `v`, `o`: `[T, H, V]`; `beta`: `[T, H]`;
    `a_log`: `[H]`; `dt_bias`: `[H, K]`; `cu_seqlens`: `[N + 1]`;
    states: `[N, H, K, V]` f32.

    ```mlir
    loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu : ...)
                     initial_state(%s0 : memref<?x32x128x128xf32>)
                     outs(%o, %sT : ...)
                     {gate = #loom.gate<unbounded>, scale = 0.0883883461 : f32,
                      chunk_size = 64 : i64, qk_l2norm = true}
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "queries", [MemRead]>:$q,
                       Arg<Loom_ActBuf, "keys", [MemRead]>:$k,
                       Arg<Loom_ActBuf, "values", [MemRead]>:$v,
                       Arg<Loom_ActBuf, "raw gate", [MemRead]>:$g,
                       Arg<Loom_ActBuf, "raw beta", [MemRead]>:$beta,
                       Arg<Loom_F32Buf, "log decay rate per head", [MemRead]>:$a_log,
                       Arg<Loom_F32Buf, "gate bias", [MemRead]>:$dt_bias,
                       Arg<Loom_IntBuf, "sequence starts", [MemRead]>:$cu_seqlens,
                       Arg<Optional<Loom_F32Buf>, "initial state", [MemRead]>:$initial_state,
                       Arg<Loom_ActBuf, "output", [MemWrite]>:$o,
                       Arg<Loom_F32Buf, "final state", [MemWrite]>:$final_state,
                       Loom_GateAttr:$gate, OptionalAttr<F32Attr>:$lower_bound,
                       F32Attr:$scale, I64Attr:$chunk_size, BoolAttr:$qk_l2norm);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v `,` $g `,` $beta `,` $a_log `,` $dt_bias `,` $cu_seqlens `:`
          type($q) `,` type($k) `,` type($v) `,` type($g) `,` type($beta) `,`
          type($a_log) `,` type($dt_bias) `,` type($cu_seqlens) `)`
    (`initial_state` `(` $initial_state^ `:` type($initial_state) `)`)?
    `outs` `(` $o `,` $final_state `:` type($o) `,` type($final_state) `)` attr-dict
  }];
}

def Loom_SiluMulOp : Loom_LayerOp<"silu_mul"> {
  let summary = "y = silu(gate) * up";
  let description = [{
    The SwiGLU activation: `y = gate / (1 + exp(-gate)) * up`, elementwise,
    in fp32. All three buffers have the same shape.

    ```mlir
    loom.silu_mul ins(%g, %u : memref<32x14336xbf16>, memref<32x14336xbf16>)
                  outs(%a : memref<32x14336xbf16>)
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "gate", [MemRead]>:$gate,
                       Arg<Loom_ActBuf, "up", [MemRead]>:$up,
                       Arg<Loom_ActBuf, "result", [MemWrite]>:$y);
  let assemblyFormat = [{
    `ins` `(` $gate `,` $up `:` type($gate) `,` type($up) `)`
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_AddOp : Loom_LayerOp<"add"> {
  let summary = "y = a + b, elementwise";
  let description = [{
    All three buffers have the same shape; `y` may be `a` or `b`.

    ```mlir
    loom.add ins(%a, %b : memref<8x64xbf16>, memref<8x64xbf16>) outs(%c : memref<8x64xbf16>)
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "lhs", [MemRead]>:$a,
                       Arg<Loom_ActBuf, "rhs", [MemRead]>:$b,
                       Arg<Loom_ActBuf, "sum", [MemWrite]>:$y);
  let assemblyFormat = [{
    `ins` `(` $a `,` $b `:` type($a) `,` type($b) `)`
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_EmbeddingOp : Loom_LayerOp<"embedding"> {
  let summary = "Gather rows of an embedding table";
  let description = [{
    `y[b] = table[ids[b]]`. `table`: `[vocab, D]`; `ids`: `[B]`; `y`: `[B, D]`.

    ```mlir
    loom.embedding ins(%table, %ids : memref<128256x4096xbf16>, memref<?xi32>)
                   outs(%x : memref<32x4096xbf16>)
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "table [vocab, D]", [MemRead]>:$table,
                       Arg<Loom_IntBuf, "token ids", [MemRead]>:$ids,
                       Arg<Loom_ActBuf, "rows", [MemWrite]>:$y);
  let assemblyFormat = [{
    `ins` `(` $table `,` $ids `:` type($table) `,` type($ids) `)`
    `outs` `(` $y `:` type($y) `)` attr-dict
  }];
}

def Loom_ArgmaxOp : Loom_LayerOp<"argmax"> {
  let summary = "Index of the largest entry of each row";
  let description = [{
    `indices[b] = argmax_v x[b, v]`, the lowest index on ties; a NaN counts
    as the largest value. `x`: `[B, V]`; `indices`: `[B]`.

    ```mlir
    loom.argmax ins(%logits : memref<32x128256xf32>) outs(%next : memref<?xi32>)
    ```
  }];
  let arguments = (ins Arg<Loom_ActBuf, "rows", [MemRead]>:$x,
                       Arg<Loom_IntBuf, "indices", [MemWrite]>:$indices);
  let assemblyFormat = [{
    `ins` `(` $x `:` type($x) `)` `outs` `(` $indices `:` type($indices) `)` attr-dict
  }];
}

include "ir/LoomProgramOps.td"

#endif // LOOM_OPS_TD
