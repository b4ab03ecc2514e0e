//===- SpecFuzzer.cpp - libFuzzer target of the spec loader ---------------===//
//
// Any bytes are a spec file to tools/spec: the loader must answer with a
// spec or with errors (never both, never neither), every error located at a
// line and column of the input, and never crash, hang, overflow or leak
// (built with ASan and UBSan). Inputs that once broke it are kept in
// spec-corpus/ and run on every ctest.
//
//===----------------------------------------------------------------------===//

#include "tools/spec/Spec.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  const loom::spec::LoadResult result =
      loom::spec::parseSpec(text, "fuzz.yaml");
  if (result.spec.has_value() == !result.errors.empty())
    std::abort(); // a spec with errors, or neither
  for (const loom::spec::Diagnostic &d : result.errors)
    if (d.file != "fuzz.yaml" || d.line < 1 || d.column < 1 ||
        d.message.empty())
      std::abort();
  return 0;
}
