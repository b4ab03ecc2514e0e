//===- LoomOps.h - Ops of the loom dialect -----------------------*- C++ -*-===//
#ifndef LOOM_IR_LOOMOPS_H
#define LOOM_IR_LOOMOPS_H

#include "ir/LoomDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/LoomOps.h.inc"

#endif // LOOM_IR_LOOMOPS_H
