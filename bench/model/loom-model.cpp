//===- loom-model.cpp - The model-based estimate, per workload and chip ---===//
//
//   loom-model [--workloads DIR] [--configs DIR] [--chip NAME]...
//              [--json FILE] [--md FILE]
//
// Reads every workload in bench/workloads/ (shapes from configs/), counts the
// bytes moved once and the matrix FLOPs, and writes the roofline time per
// chip as JSON and/or Markdown ("-" is stdout; neither: Markdown to stdout).
// Default chips: every GPU row of the chip table. Exit 1 with
// "file:line:col: error: ..." lines when an input is wrong.
//
//===----------------------------------------------------------------------===//
#include "bench/model/Report.h"
#include "bench/model/Workloads.h"

#include <fstream>
#include <iostream>
#include <string>

namespace {

void usage(std::ostream &os) {
  os << "usage: loom-model [--workloads DIR] [--configs DIR] [--chip NAME]...\n"
        "                  [--json FILE] [--md FILE]\n"
        "  --workloads DIR  bench/workloads/ (default " LOOM_SOURCE_DIR
        "/bench/workloads)\n"
        "  --configs DIR    the specs (default " LOOM_SOURCE_DIR "/configs)\n"
        "  --chip NAME      a chip table row, repeatable (default: every GPU: "
     << loom::knownChipNames()
     << " but host)\n"
        "  --json FILE      the JSON (schema loom-model/1), '-' for stdout\n"
        "  --md FILE        the Markdown tables, '-' for stdout\n"
        "Without --json and --md, the Markdown goes to stdout. Every number is\n"
        "a model, not a measurement (bench/model/README.md).\n";
}

/// Writes through `write` to `path` ("-": stdout); false after a message.
template <typename Fn> bool writeTo(const std::string &path, Fn write) {
  if (path == "-") {
    write(std::cout);
    return bool(std::cout);
  }
  std::ofstream out(path);
  if (out)
    write(out);
  out.close();
  if (!out) {
    std::cerr << "loom-model: error: cannot write '" << path << "'\n";
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string workloadsDir = LOOM_SOURCE_DIR "/bench/workloads";
  std::string configsDir = LOOM_SOURCE_DIR "/configs";
  std::string jsonPath, mdPath;
  std::vector<const loom::ChipInfo *> chips;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    }
    std::string value;
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    if (flag != "--workloads" && flag != "--configs" && flag != "--chip" &&
        flag != "--json" && flag != "--md") {
      std::cerr << "loom-model: error: unknown argument '" << arg << "'\n";
      usage(std::cerr);
      return 2;
    }
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::cerr << "loom-model: error: " << flag << " needs a value\n";
      return 2;
    }
    if (flag == "--workloads")
      workloadsDir = value;
    else if (flag == "--configs")
      configsDir = value;
    else if (flag == "--json")
      jsonPath = value;
    else if (flag == "--md")
      mdPath = value;
    else if (const loom::ChipInfo *chip = loom::findChip(value))
      chips.push_back(chip);
    else {
      std::cerr << "loom-model: error: unknown chip '" << value
                << "' (known: " << loom::knownChipNames() << ")\n";
      return 2;
    }
  }
  if (chips.empty())
    for (const loom::ChipInfo &chip : loom::chipTable())
      if (chip.vendor != loom::Vendor::Host)
        chips.push_back(&chip);

  loom::model::WorkloadSet set =
      loom::model::loadWorkloads(workloadsDir, configsDir);
  if (!set.ok()) {
    for (const loom::spec::Diagnostic &d : set.errors)
      std::cerr << d.str() << "\n";
    return 1;
  }

  bool ok = true;
  if (!jsonPath.empty())
    ok &= writeTo(jsonPath, [&](std::ostream &os) {
      loom::model::writeJson(os, set.workloads, chips);
    });
  if (!mdPath.empty() || jsonPath.empty())
    ok &= writeTo(mdPath.empty() ? "-" : mdPath, [&](std::ostream &os) {
      loom::model::writeMarkdown(os, set.workloads, chips);
    });
  return ok ? 0 : 1;
}
