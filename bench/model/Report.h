//===- Report.h - The model's JSON and Markdown ----------------*- C++ -*-===//
//
// JSON (schema "loom-model/1", README.md documents every field) for the
// bench matrix and other programs, keyed by the workload's stable key;
// Markdown tables for people, one section per chip. Every row says "model,
// not measured".
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_BENCH_MODEL_REPORT_H
#define LOOM_BENCH_MODEL_REPORT_H

#include "bench/model/Workloads.h"
#include "targets/chips/ChipTable.h"

#include <ostream>
#include <vector>

namespace loom::model {

/// What every row and file says.
inline constexpr const char *kModelLabel = "model, not measured";
/// The JSON schema's name and version; bump it when a field changes meaning.
inline constexpr const char *kJsonSchema = "loom-model/1";

void writeJson(std::ostream &os, const std::vector<Workload> &workloads,
               const std::vector<const ChipInfo *> &chips);

/// One section per chip (a header with the chip's facts and how the file was
/// made, then a table per family).
void writeMarkdown(std::ostream &os, const std::vector<Workload> &workloads,
                   const std::vector<const ChipInfo *> &chips);

} // namespace loom::model

#endif // LOOM_BENCH_MODEL_REPORT_H
