//===- GraphOp.cpp - loom.graph: syntax, builder, verifier -----------------===//
//
// Syntax:
//   loom.graph @name target(#loom.target<...>) (
//       input %x : memref<...>, weight %w : memref<...>, output %y : ...)
//       [attributes {...}] { body }
//
// The argument's SSA name is its user-facing name (stored in `arg_names`), so
// the buffer names of a spec survive printing and parsing.
//
//===----------------------------------------------------------------------===//
#include "ir/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::loom;

void GraphOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    TargetAttr target, ArrayRef<StringRef> argNames,
                    ArrayRef<Role> roles, TypeRange argTypes) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getTargetAttrName(state.name), target);
  state.addAttribute(getArgNamesAttrName(state.name),
                     builder.getStrArrayAttr(argNames));
  SmallVector<Attribute> roleAttrs;
  for (Role role : roles)
    roleAttrs.push_back(RoleAttr::get(builder.getContext(), role));
  state.addAttribute(getArgRolesAttrName(state.name),
                     builder.getArrayAttr(roleAttrs));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type type : argTypes)
    block->addArgument(type, state.location);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(block);
  builder.create<ReturnOp>(state.location);
}

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringAttr symName;
  if (parser.parseSymbolName(symName, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();

  TargetAttr target;
  if (parser.parseKeyword("target") || parser.parseLParen() ||
      parser.parseAttribute(target) || parser.parseRParen())
    return failure();
  result.addAttribute(getTargetAttrName(result.name), target);

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Attribute> names, roles;
  auto parseArg = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef roleWord;
    if (parser.parseKeyword(&roleWord))
      return failure();
    std::optional<Role> role = symbolizeRole(roleWord);
    if (!role)
      return parser.emitError(loc)
             << "expected an argument role (input, weight, cache, output, "
                "meta), got '"
             << roleWord << "'";
    OpAsmParser::Argument &arg = args.emplace_back();
    if (parser.parseArgument(arg, /*allowType=*/true))
      return failure();
    names.push_back(b.getStringAttr(arg.ssaName.name.drop_front()));
    roles.push_back(RoleAttr::get(b.getContext(), *role));
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseArg))
    return failure();
  result.addAttribute(getArgNamesAttrName(result.name), b.getArrayAttr(names));
  result.addAttribute(getArgRolesAttrName(result.name), b.getArrayAttr(roles));

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args))
    return failure();
  GraphOp::ensureTerminator(*body, b, result.location);
  return success();
}

void GraphOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " target(" << getTarget() << ") (";
  p.increaseIndent();
  for (BlockArgument arg : getBodyBlock().getArguments()) {
    if (arg.getArgNumber() != 0)
      p << ",";
    p.printNewline();
    p << stringifyRole(getArgRole(arg.getArgNumber())) << ' ';
    p.printRegionArgument(arg);
  }
  p.decreaseIndent();
  p << ")";
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSymNameAttrName(), getTargetAttrName(),
                            getArgNamesAttrName(), getArgRolesAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

void GraphOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  if (region.empty() || getArgNames().size() != region.getNumArguments())
    return;
  for (BlockArgument arg : region.getArguments())
    setNameFn(arg, getArgName(arg.getArgNumber()));
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

static bool isIdentifier(StringRef name) {
  if (name.empty() || !(isalpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return isalnum(c) || c == '_'; });
}

/// The buffer a value views: follows `loom.slice` to its source.
/// Bytes of `type` with a dynamic leading dimension taken at `bound`, or
/// nullopt when the product overflows 64 bits.
static std::optional<int64_t> checkedBytes(MemRefType type, int64_t bound) {
  int64_t bytes = (type.getElementTypeBitWidth() + 7) / 8;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t dim = type.isDynamicDim(i) ? bound : type.getDimSize(i);
    if (llvm::MulOverflow(bytes, dim, bytes))
      return std::nullopt;
  }
  return bytes;
}

/// Fails `op` when a buffer of `type` (`what`) holds more than the compiler's
/// cap (kMaxBufferBytes) or a size that overflows.
static LogicalResult checkBufferSize(Operation *op, const Twine &what,
                                     MemRefType type, int64_t bound) {
  if (!type.getElementType().isIntOrFloat())
    return success();
  std::optional<int64_t> bytes = checkedBytes(type, bound);
  if (bytes && *bytes <= kMaxBufferBytes)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << what << " (" << type << ")";
  if (bytes)
    diag << " holds " << *bytes << " bytes";
  else
    diag << " holds more bytes than 64 bits count";
  return diag << ", more than the " << kMaxBufferBytes
              << " (1 TiB) a buffer may hold";
}

static Value rootBuffer(Value value) {
  while (auto slice = value.getDefiningOp<SliceOp>())
    value = slice.getSource();
  return value;
}

LogicalResult GraphOp::verifyRegions() {
  Block &block = getBodyBlock();
  unsigned numArgs = block.getNumArguments();
  if (getArgNames().size() != numArgs || getArgRoles().size() != numArgs)
    return emitOpError() << "has " << numArgs << " arguments but "
                         << getArgNames().size() << " names and "
                         << getArgRoles().size() << " roles";

  if (std::optional<ArrayRef<int64_t>> bounds = getArgBounds()) {
    if (bounds->size() != numArgs)
      return emitOpError() << "has " << numArgs << " arguments but "
                           << bounds->size() << " entries in 'arg_bounds'";
    for (auto [i, bound] : llvm::enumerate(*bounds)) {
      auto type = cast<MemRefType>(block.getArgument(i).getType());
      bool dynamic = type.getRank() > 0 && type.isDynamicDim(0);
      if (dynamic ? bound <= 0 : bound != 0)
        return emitOpError() << "argument '" << getArgName(i) << "' has bound "
                             << bound << "; a dynamic leading dimension needs "
                             << "a positive bound, a static one 0";
    }
  }

  llvm::StringSet<> seen;
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    StringRef name = getArgName(i);
    if (!isIdentifier(name))
      return emitOpError() << "argument #" << i << " name '" << name
                           << "' is not an identifier";
    if (!seen.insert(name).second)
      return emitOpError() << "argument name '" << name
                           << "' is used twice";
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return emitOpError() << "argument '" << name
                           << "' must be a memref, got " << arg.getType();
    if (!type.getLayout().isIdentity())
      return emitOpError() << "argument '" << name
                           << "' must have the identity (row-major) layout";
    if (getArgRole(i) == Role::Meta && !type.getElementType().isInteger())
      return emitOpError() << "meta argument '" << name
                           << "' must hold integers, got "
                           << type.getElementType();
    std::optional<ArrayRef<int64_t>> bounds = getArgBounds();
    if (failed(checkBufferSize(*this, "argument '" + name + "'", type,
                               bounds ? (*bounds)[i] : 1)))
      return failure();
  }

  llvm::DenseSet<Value> written;
  for (Operation &op : block.without_terminator()) {
    if (op.getDialect() != (*this)->getDialect())
      return op.emitOpError()
             << "is not a loom op; a graph holds loom ops only";
    if (auto alloc = dyn_cast<AllocOp>(op))
      if (failed(checkBufferSize(alloc, "its buffer", alloc.getType(), 1)))
        return failure();
    auto effects = dyn_cast<MemoryEffectOpInterface>(&op);
    if (!effects)
      continue;
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (!isa<MemoryEffects::Write>(effect.getEffect()) || !effect.getValue())
        continue;
      Value root = rootBuffer(effect.getValue());
      written.insert(root);
      auto arg = dyn_cast<BlockArgument>(root);
      if (!arg || arg.getOwner() != &block)
        continue;
      Role role = getArgRole(arg.getArgNumber());
      if (role == Role::Input || role == Role::Weight || role == Role::Meta)
        return op.emitOpError()
               << "writes '" << getArgName(arg.getArgNumber()) << "', "
               << (role == Role::Input ? "an " : "a ") << stringifyRole(role)
               << " buffer; only output and cache "
               << "arguments and loom.alloc buffers may be written";
    }
  }
  for (BlockArgument arg : block.getArguments())
    if (getArgRole(arg.getArgNumber()) == Role::Output && !written.count(arg))
      return emitOpError() << "output '" << getArgName(arg.getArgNumber())
                           << "' is never written";
  return success();
}
