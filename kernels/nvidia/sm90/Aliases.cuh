//===- Aliases.cuh - The short names every sm90 body header uses -*- CUDA -*-===//
//
// `nv` for loom::nvidia and its integer helpers by their short names, in
// namespace loom::sm90, said once for the decoder, MLA and KDA headers.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_ALIASES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_ALIASES_CUH

#include "kernels/nvidia/Numerics.cuh"

namespace loom {
namespace sm90 {

namespace nv = ::loom::nvidia;
using nv::ceilDiv;
using nv::imax;
using nv::imin;
using nv::roundUp;

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_ALIASES_CUH
