//===- loom-opt.cpp - Run Loom's passes on .mlir files ---------------------===//
//
// mlir-opt with the loom dialect and the upstream dialects and passes Loom's
// IR uses (memref for buffer types, func/arith around graphs in tests).
//
//===----------------------------------------------------------------------===//
#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect>();
  mlir::registerTransformsPasses();
  mlir::loom::registerLoomPasses();
  mlir::loom::registerLoomPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Loom optimizer driver: runs Loom and MLIR passes\n",
      registry));
}
