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
  if (workers <= 0 || workers > kMaxWorkers)
    return emitError() << "target 'workers' must be in [1, " << kMaxWorkers
                       << "], got " << workers;
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

LogicalResult
PartitionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      ArrayRef<int64_t> tasks, ArrayRef<int64_t> params,
                      ArrayRef<int64_t> costNs, int64_t scratchBytes) {
  if (tasks.empty())
    return emitError() << "a partition needs at least one phase";
  if (costNs.size() != tasks.size())
    return emitError() << "a partition needs one cost per phase: "
                       << tasks.size() << " phases, " << costNs.size()
                       << " costs";
  for (int64_t count : tasks)
    if (count <= 0)
      return emitError() << "every phase needs at least one task, got "
                         << count;
  for (int64_t cost : costNs)
    if (cost < 0)
      return emitError() << "task costs must not be negative, got " << cost;
  if (scratchBytes < 0)
    return emitError() << "'scratch_bytes' must not be negative, got "
                       << scratchBytes;
  return success();
}

TargetAttr mlir::loom::getTargetAttr(MLIRContext *context,
                                     const ::loom::ChipInfo &chip) {
  return TargetAttr::get(context, chip.name, chip.arch, chip.workers,
                         chip.lanesPerWarp, chip.smemPerBlock,
                         chip.regsPerWorker, chip.hbmGBps, chip.bf16Tflops);
}
