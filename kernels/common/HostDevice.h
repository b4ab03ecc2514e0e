//===- HostDevice.h - Functions for the host and the device ------*- C++ -*-===//
//
// LOOM_HOST_DEVICE marks a function that nvcc and clang's HIP mode also
// compile for the device: the formulas in kernels/common (slot and chunk
// arithmetic, workspace layouts) are shared by the host, CUDA and HIP bodies,
// so phases of one program agree on them whatever target runs them.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_HOSTDEVICE_H
#define LOOM_KERNELS_COMMON_HOSTDEVICE_H

#ifndef LOOM_HOST_DEVICE
#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__
#elif defined(__HIPCC__) || defined(__HIP__)
// Spelled out: Loom's HIP bodies build without hip_runtime.h's macros.
#define LOOM_HOST_DEVICE __attribute__((host, device))
#else
#define LOOM_HOST_DEVICE
#endif
#endif

#endif // LOOM_KERNELS_COMMON_HOSTDEVICE_H
