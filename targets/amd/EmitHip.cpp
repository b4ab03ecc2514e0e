//===- EmitHip.cpp - Scheduled loom.graph to a persistent HIP kernel -------===//
//
// HIP's spelling of targets/common/DeviceEmitter: the schedule as
// `__device__` arrays, one tile function per (layer op, phase)
// (targets/common/TileEmitter, calling the bodies in kernels/amd/<arch>),
// a switch from task id to tile function, and the kernel, which hands all
// of it to the persistent loop (kernels/amd/Interpreter.h). The source
// needs no ROCm: kernels/amd/HipDevice.h is the device header, and loomc
// compiles it with clang++ -x hip --cuda-device-only into an hsaco, which
// the host library embeds the same way the CUDA one embeds its cubin.
//
// Chip facts come from the graph's #loom.target (the chip table): the
// dynamic LDS is smem_per_block less the static reserve, the grid is the
// scheduled worker count (one workgroup per CU), and the wave width must be
// the 64 lanes the bodies are written for.
//
//===----------------------------------------------------------------------===//
#include "targets/amd/EmitHip.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

namespace {
/// The wave width kernels/amd is written for (loom::amd::kWaveSize).
constexpr int64_t kBodiesWaveLanes = 64;
} // namespace

LogicalResult mlir::loom::emitHipKernel(GraphOp graph, std::string &source,
                                        DeviceKernelInfo &info) {
  TargetAttr target = graph.getTarget();
  if (target.getLanes() != kBodiesWaveLanes)
    return graph.emitOpError("targets '")
           << target.getName() << "' (" << target.getArch() << ") with "
           << target.getLanes() << "-lane waves; the AMD bodies in "
           << "kernels/amd are written for wave" << kBodiesWaveLanes;
  if (info.threadsPerBlock % target.getLanes() != 0)
    return graph.emitOpError("cannot launch ")
           << info.threadsPerBlock << " threads per workgroup on '"
           << target.getName() << "': not whole " << target.getLanes()
           << "-lane waves";
  if (target.getSmemPerBlock() <= kStaticSmemReserve)
    return graph.emitOpError("targets '")
           << target.getName() << "' with " << target.getSmemPerBlock()
           << " bytes of LDS per workgroup; the persistent loop alone "
              "reserves "
           << kStaticSmemReserve;

  // The bodies of an AMD chip live in kernels/amd/<arch>, namespace
  // loom::<arch> (gfx950 is the one written so far).
  std::string arch = target.getArch().str();
  DeviceSpelling spelling;
  spelling.includes = {"kernels/amd/Interpreter.h",
                       "kernels/amd/" + arch + "/DecoderBodies.h",
                       "kernels/amd/" + arch + "/KdaBodies.h",
                       "kernels/amd/" + arch + "/MlaBodies.h", "<algorithm>"};
  // Everything inlined into the loop: a call on AMDGPU goes through the
  // stack ABI (callee-saved registers, a stack in scratch memory), which
  // the persistent kernel must not have. The loop keeps its state in LDS
  // (Interpreter.h) so the bodies keep the registers. Shared functions (the
  // addresses as a per-task table) keep one inlined copy per distinct body:
  // a decoder's layers share theirs, so the kernel does not grow with the
  // depth (one copy per layer spilled thousands of VGPRs at 4 layers and
  // took over 20 minutes to compile at 32).
  spelling.tiles = {"loom::" + arch + "::", "static __device__ __forceinline__",
                    ", char *lds", ", lds", "<kThreads>",
                    /*bodiesReturnStatus=*/true, /*shareFunctions=*/true};
  spelling.runTaskQualifier = "__device__ __forceinline__";
  spelling.kernelBounds = "LOOM_AMD_KERNEL_BOUNDS(kThreads)";
  spelling.persistentLoop = "loom::amd::loomPersistentLoop";
  spelling.bodiesFolder = "kernels/amd/" + arch;
  spelling.preamble = llvm::formatv(
      "// #loom.target<name = \"{0}\">: wave{1}, {2} CUs, {3} B of LDS per "
      "workgroup:\n"
      "// the launch gives {4} B of dynamic LDS, {5} B stay for static LDS.\n"
      "static_assert(loom::amd::kWaveSize == {1}, \"the chip's wave width\");\n"
      "static_assert(kThreads % loom::amd::kWaveSize == 0, \"whole waves\");\n\n",
      target.getName(), target.getLanes(), target.getWorkers(),
      target.getSmemPerBlock(), target.getSmemPerBlock() - kStaticSmemReserve,
      kStaticSmemReserve);
  return emitDeviceKernel(graph, spelling, source, info);
}

LogicalResult mlir::loom::emitHipHostLibrary(GraphOp graph,
                                             const DeviceKernelInfo &info,
                                             const std::string &hsacoPath,
                                             std::string &source) {
  return emitDeviceHostLibrary(graph, info, "hsaco", hsacoPath, source);
}
