//===- Binding.cpp - Checking a buffer binding against its declaration ----===//

#include "runtime/src/Binding.h"

#include <cstring>
#include <limits>

namespace loom {
namespace rt {

namespace {

const char *elemName(int32_t elem) {
  switch (elem) {
  case LOOM_ELEM_BF16:
    return "bf16";
  case LOOM_ELEM_F16:
    return "f16";
  case LOOM_ELEM_F32:
    return "f32";
  case LOOM_ELEM_I32:
    return "i32";
  case LOOM_ELEM_I64:
    return "i64";
  }
  return "?";
}

} // namespace

std::string formatShape(const LoomBufferDesc &buffer) {
  std::string shape = elemName(buffer.elem);
  shape += "[";
  for (int32_t k = 0; k < buffer.rank; ++k) {
    if (k)
      shape += ", ";
    shape += buffer.dims[k] < 0 ? "?<=" + std::to_string(buffer.bound)
                                : std::to_string(buffer.dims[k]);
  }
  return shape + "]";
}

Status checkBinding(const ProgramTable &table, int32_t index, void *data,
                    const int64_t *dims, int32_t rank, LoomBinding *out) {
  const LoomBufferDesc &b = table.buffer(index);
  auto fail = [&](const auto &...parts) {
    return makeError(LOOMRT_ERROR_BINDING, "program ", quoted(table.name()),
                     ": cannot bind buffer ", quoted(b.name), " (index ", index,
                     ", ", formatShape(b), "): ", parts...);
  };
  if (!data)
    return fail("data is null");
  LoomBinding binding{};
  binding.data = data;
  if (!dims) {
    for (int32_t k = 0; k < b.rank; ++k) {
      if (b.dims[k] < 0)
        return fail("dim ", k, " is dynamic, so its dims must be given");
      binding.dims[k] = b.dims[k];
    }
    *out = binding;
    return Status();
  }
  if (rank != b.rank)
    return fail("rank ", rank, " given, declared rank ", b.rank);
  for (int32_t k = 0; k < rank; ++k) {
    int64_t dim = dims[k];
    if (b.dims[k] >= 0 && dim != b.dims[k])
      return fail("dim ", k, " is ", dim, ", declared ", b.dims[k]);
    if (b.dims[k] < 0 && dim < 0)
      return fail("dim ", k, " is ", dim, ", must be >= 0");
    if (b.dims[k] < 0 && dim > b.bound)
      return fail("dim ", k, " is ", dim, ", above its bound ", b.bound);
    binding.dims[k] = dim;
  }
  *out = binding;
  return Status();
}

Status boundBytes(const ProgramTable &table, int32_t index, size_t *bytes) {
  const LoomBufferDesc &b = table.buffer(index);
  size_t total = loomrt_elem_bytes(b.elem);
  for (int32_t k = 0; k < b.rank; ++k) {
    size_t dim = static_cast<size_t>(b.dims[k] < 0 ? b.bound : b.dims[k]);
    if (dim && total > std::numeric_limits<size_t>::max() / dim)
      return makeError(LOOMRT_ERROR_INVALID_PROGRAM, "program ",
                       quoted(table.name()), ": buffer ", quoted(b.name), " (",
                       formatShape(b), ") does not fit in size_t");
    total *= dim;
  }
  *bytes = total;
  return Status();
}

uint64_t bindingBytes(const LoomBufferDesc &desc, const LoomBinding &binding) {
  uint64_t bytes = loomrt_elem_bytes(desc.elem);
  for (int32_t k = 0; k < desc.rank; ++k)
    bytes *= static_cast<uint64_t>(binding.dims[k]);
  return bytes;
}

std::string launchName(uint64_t epoch) {
  return epoch ? "launch " + std::to_string(epoch) : "launch on a stream";
}

Status DeviceBindingChecker::check(
    const ProgramTable &table, uint64_t epoch, const LoomBinding *bindings,
    const DeviceAllocations &allocations,
    const std::function<std::string(const void *)> &unknownPointer,
    const char *runtimeName, const std::string &device) {
  const int32_t n = table.numBuffers();
  const uint64_t generation = allocations.generation();
  if (valid_ && checkedGeneration_ == generation &&
      checked_.size() == static_cast<size_t>(n) &&
      (n == 0 ||
       std::memcmp(checked_.data(), bindings, n * sizeof(LoomBinding)) == 0))
    return Status();
  valid_ = false;
  for (int32_t i = 0; i < n; ++i) {
    const LoomBufferDesc &b = table.buffer(i);
    const LoomBinding &binding = bindings[i];
    const auto ptr = reinterpret_cast<uintptr_t>(binding.data);
    const uint64_t bytes = bindingBytes(b, binding);
    std::string dims;
    for (int32_t k = 0; k < b.rank; ++k)
      dims += (k ? ", " : "") + std::to_string(binding.dims[k]);
    auto fail = [&](const auto &...parts) {
      return makeError(LOOMRT_ERROR_BINDING, "program ", quoted(table.name()),
                       " ", launchName(epoch), ": buffer ", quoted(b.name),
                       " (index ", i, ", ", formatShape(b), ") bound to ",
                       binding.data, " with dims [", dims, "] (", bytes,
                       " bytes) ", parts...);
    };
    uintptr_t base = 0;
    size_t size = 0;
    if (allocations.find(ptr, &base, &size)) {
      if (ptr + bytes > base + size)
        return fail("runs past the end of its allocation (", size,
                    " bytes from ", reinterpret_cast<void *>(base), ")");
      continue;
    }
    // Not from loomrt_malloc (e.g. another library's allocator): the vendor
    // runtime must at least know it. Its extent is not checked: such
    // allocations may be assembled from several mappings.
    if (std::string why = unknownPointer(binding.data); !why.empty())
      return fail("is not memory the ", runtimeName, " knows (", why,
                  "): bind memory from loomrt_malloc on ", device);
  }
  checked_.assign(bindings, bindings + n);
  checkedGeneration_ = generation;
  valid_ = true;
  return Status();
}

} // namespace rt
} // namespace loom
