//===- YamlProbe.h - Whether yaml-cpp returns from a text ---------*- C++ -*-===//
//
// yaml-cpp 0.7 never returns from some malformed inputs, allocating as it
// loops; the spec loader's pre-scans catch the families of them found so
// far, and fuzzing keeps finding more. So before the spec loader and
// loomc --hf-config parse a text, it is parsed once in a child process whose
// address space is capped and which is killed past a time bound
// (LOOM_SPEC_PARSE_TIMEOUT_MS).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_SPEC_YAMLPROBE_H
#define LOOM_TOOLS_SPEC_YAMLPROBE_H

#include <optional>
#include <string>

namespace loom::spec {

/// Nothing when yaml-cpp returns from `text` (its parse ends or throws a
/// YAML error), or when no child process could be made or the bound is 0;
/// else why not, as a diagnostic message ("the YAML parser did not finish
/// within 5000 ms ...", "... ran out of memory ...", "... crashed ...").
std::optional<std::string> yamlParseTrouble(const std::string &text);

} // namespace loom::spec

#endif // LOOM_TOOLS_SPEC_YAMLPROBE_H
