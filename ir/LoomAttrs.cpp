//===- LoomAttrs.cpp - Attributes of the loom dialect ----------------------===//
#include "ir/LoomDialect.h"
#include "targets/chips/ChipTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::loom;

#include "ir/LoomEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/LoomAttrs.cpp.inc"

void LoomDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/LoomAttrs.cpp.inc"
      >();
}

LogicalResult
TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringRef name, StringRef arch, int64_t workers,
                   int64_t lanes, int64_t smemPerBlock, int64_t regsPerWorker,
                   int64_t hbmGbps, int64_t bf16Tflops) {
  if (name.empty())
    return emitError() << "target name must not be empty";
  if (!::loom::isKnownArch(arch.str()))
    return emitError() << "unknown target arch '" << arch
                       << "'; Loom emits for sm_90a, sm_100a, gfx950 and host";
  if (workers <= 0)
    return emitError() << "target 'workers' must be positive, got " << workers;
  if (lanes != 1 && lanes != 32 && lanes != 64)
    return emitError() << "target 'lanes' must be 1, 32 or 64, got " << lanes;
  if (smemPerBlock <= 0)
    return emitError() << "target 'smem_per_block' must be positive, got "
                       << smemPerBlock;
  if (regsPerWorker < 0)
    return emitError() << "target 'regs_per_worker' must not be negative, got "
                       << regsPerWorker;
  if (hbmGbps <= 0)
    return emitError() << "target 'hbm_gbps' must be positive, got "
                       << hbmGbps;
  if (bf16Tflops <= 0)
    return emitError() << "target 'bf16_tflops' must be positive, got "
                       << bf16Tflops;
  return success();
}

TargetAttr mlir::loom::getTargetAttr(MLIRContext *context,
                                     const ::loom::ChipInfo &chip) {
  return TargetAttr::get(context, chip.name, chip.arch, chip.workers,
                         chip.lanesPerWarp, chip.smemPerBlock,
                         chip.regsPerWorker, chip.hbmGBps, chip.bf16Tflops);
}
