//===- CudaSupport.cuh - Helpers of the standalone CUDA programs --*- CUDA -*-===//
//
// What the device self-check (tests/gpu/NvidiaBodiesTest.cu) and the engine
// benchmark (bench/engine/EngineBench.cu) share: a checked CUDA call and a
// device buffer. Both build with nvcc alone on a GPU machine.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TESTS_GPU_CUDASUPPORT_CUH
#define LOOM_TESTS_GPU_CUDASUPPORT_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

/// Exits with the call, the file and line and CUDA's words when it fails.
#define CUDA_CHECK(expr)                                                       \
  do {                                                                         \
    cudaError_t err_ = (expr);                                                 \
    if (err_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,       \
                   cudaGetErrorString(err_));                                  \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

namespace loom {
namespace cudatest {

/// `n` elements of device memory, copied in and out whole.
template <typename T> struct Dev {
  T *p = nullptr;
  size_t n = 0;
  Dev() = default;
  explicit Dev(size_t count) : n(count) {
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  }
  explicit Dev(const std::vector<T> &v) : Dev(v.size()) { put(v); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  Dev(Dev &&o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  Dev &operator=(Dev &&o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T> &v) {
    CUDA_CHECK(
        cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> get() const {
    std::vector<T> v(n);
    CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  void zero() { CUDA_CHECK(cudaMemset(p, 0, n * sizeof(T))); }
};

} // namespace cudatest
} // namespace loom

#endif // LOOM_TESTS_GPU_CUDASUPPORT_CUH
