//===- loom-run.cpp - Run a compiled Loom program and check it -------------===//
//
//   loom-run SPEC.yaml PROGRAM.so [--seed N] [--launches N]
//            [--kv-lens 1,17,40] [--seq-lens 1,63,200] [--layers N]
//            [--device host] [--watchdog-ms N] [--check=oracle|none]
//            [--bench N [--rotate K] [--warmup N] [--warmup-ms MS]]
//            [--trace FILE.json] [--set-meta NAME[I]=V ...]
//   loom-run --probe-device KIND
//
// Loads the spec, applies --layers (decoder: must match what the program was
// compiled with), runs the program through loomrt and checks every launch
// against the fp64 oracles (tools/check/Check.h). Prints the report; exits 0
// when every check passes, 1 when a check fails, 2 on usage or setup errors.
// --bench times back-to-back launches after a warm-up (Bench.cpp), --trace
// writes the last launch's per-task timing as Chrome trace JSON (Trace.h).
// The last line of stdout is `RESULT {json}`: the run's facts and numbers,
// for scripts.
// --probe-device only opens device 0 of KIND and says which it is (exit 0),
// or prints the runtime's reason it cannot (exit 2): loomc --run asks it
// before compiling for a GPU.
//
//===----------------------------------------------------------------------===//
#include "tools/check/Check.h"
#include "tools/spec/Spec.h"

#include "loom/loomrt.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

namespace {

const char *kUsage =
    "usage: loom-run SPEC.yaml PROGRAM.so [options]\n"
    "  --seed N          random seed (default: drawn and printed)\n"
    "  --launches N      launches in a row, fresh inputs each (default 3)\n"
    "  --kv-lens A,B,..  mla_decode/decoder: context length per request\n"
    "                    (decoder: including the new token)\n"
    "  --seq-lens A,B,.. kda_prefill: packed sequence lengths\n"
    "  --layers N        decoder: the number of layers the program was\n"
    "                    compiled with (overrides the spec's)\n"
    "  --device KIND     loomrt device: host (default), cuda, hip\n"
    "  --watchdog-ms N   watchdog timeout of the program\n"
    "  --timing=MODE     issued (default): a launch's time runs from its\n"
    "                    start event, reached before the host has submitted\n"
    "                    it; queued: each launch waits behind a gate opened\n"
    "                    once it is queued, so the device is timed alone\n"
    "                    (loomrt_program_set_queued_launch; GPU devices)\n"
    "  --check=MODE      oracle (default): compare every launch with the\n"
    "                    fp64 oracle; none: do not (say so), only the cheap\n"
    "                    checks (guards, read-only buffers, NaN in outputs)\n"
    "  --bench N         then warm up and time N back-to-back launches:\n"
    "                    min/median/p90 device time and launch-to-launch wall\n"
    "  --warmup N        bench warm-up: at least N launches (default 20)\n"
    "  --warmup-ms MS    ... and at least MS ms of them (default 200)\n"
    "  --rotate K        bench: cycle the inputs, caches and meta buffers\n"
    "                    through K copies so the L2 does not hold them\n"
    "  --set-meta NAME[I]=V  after writing each launch's inputs, set entry I\n"
    "                    of meta buffer NAME to V (repeatable): the run then\n"
    "                    passes when the launch fails naming a refused value\n"
    "  --trace FILE      write the last launch's per-task timing as Chrome\n"
    "                    trace JSON and print a summary per (op, phase)\n"
    "                    (host programs; GPU artifacts built with --profile)\n"
    "usage: loom-run --probe-device KIND\n"
    "  open device 0 of KIND and print it; exit 2 with the reason if it\n"
    "  cannot be opened (no driver, no device)\n";

/// --probe-device: whether loomrt can open a device of `kind` here.
int probeDevice(const std::string &kind) {
  try {
    loomrt::Device device(kind.c_str());
    std::cout << "loom-run: " << device.describe() << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "loom-run: cannot open device '" << kind << "': " << e.what()
              << "\n";
    return 2;
  }
}

[[noreturn]] void usage(const std::string &message) {
  std::cerr << "loom-run: " << message << "\n" << kUsage;
  std::exit(2);
}

int64_t parseInt(const std::string &text, const std::string &option) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0)
    usage("'" + option + "' expects an integer, got '" + text + "'");
  return int64_t(v);
}

std::vector<int64_t> parseList(const std::string &text,
                               const std::string &option) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos)
      comma = text.size();
    out.push_back(parseInt(text.substr(start, comma - start), option));
    start = comma + 1;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> positional;
  loom::check::RunOptions options;
  int64_t layers = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg.rfind("--", 0) == 0) {
      std::string name = arg, value;
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      } else {
        if (i + 1 >= argc)
          usage("'" + arg + "' needs a value");
        value = argv[++i];
      }
      if (name == "--seed") {
        char *end = nullptr;
        options.seed = std::strtoull(value.c_str(), &end, 0);
        if (value.empty() || *end != '\0')
          usage("'--seed' expects an unsigned integer, got '" + value + "'");
      } else if (name == "--launches") {
        const int64_t launches = parseInt(value, name);
        if (launches < 1 || launches > INT32_MAX)
          usage("'--launches' must be 1 to 2147483647, got '" + value + "'");
        options.launches = int(launches);
      } else if (name == "--kv-lens") {
        options.kvLens = parseList(value, name);
      } else if (name == "--seq-lens") {
        options.seqLens = parseList(value, name);
      } else if (name == "--layers") {
        layers = parseInt(value, name);
        if (layers < 1)
          usage("'--layers' must be >= 1");
      } else if (name == "--device") {
        options.device = value;
      } else if (name == "--probe-device") {
        return probeDevice(value);
      } else if (name == "--watchdog-ms") {
        options.watchdogMs = parseInt(value, name);
        // loomrt takes a uint32_t: a larger value must not wrap to a tiny
        // timeout.
        if (options.watchdogMs < 1 || options.watchdogMs > UINT32_MAX)
          usage("'--watchdog-ms' must be 1 to 4294967295, got '" + value +
                "'");
      } else if (name == "--timing") {
        if (value != "issued" && value != "queued")
          usage("'--timing' is 'issued' or 'queued', got '" + value + "'");
        options.queued = value == "queued";
      } else if (name == "--check") {
        if (value != "oracle" && value != "none")
          usage("'--check' is 'oracle' or 'none', got '" + value + "'");
        options.oracle = value == "oracle";
      } else if (name == "--bench") {
        options.bench = int(parseInt(value, name));
        if (options.bench < 1)
          usage("'--bench' must be >= 1");
      } else if (name == "--warmup") {
        options.warmupLaunches = int(parseInt(value, name));
        if (options.warmupLaunches < 0)
          usage("'--warmup' must be >= 0");
      } else if (name == "--warmup-ms") {
        options.warmupMs = double(parseInt(value, name));
        if (options.warmupMs < 0)
          usage("'--warmup-ms' must be >= 0");
      } else if (name == "--rotate") {
        options.rotate = int(parseInt(value, name));
        if (options.rotate < 1)
          usage("'--rotate' must be >= 1");
      } else if (name == "--set-meta") {
        // NAME[I]=V
        const size_t open = value.find('['), close = value.find("]=");
        if (open == std::string::npos || open == 0 ||
            close == std::string::npos || close < open)
          usage("'--set-meta' takes NAME[INDEX]=VALUE, got '" + value + "'");
        loom::check::RunOptions::MetaEdit edit;
        edit.buffer = value.substr(0, open);
        edit.index = parseInt(value.substr(open + 1, close - open - 1), name);
        edit.value = parseInt(value.substr(close + 2), name);
        options.metaEdits.push_back(edit);
      } else if (name == "--trace") {
        if (value.empty())
          usage("'--trace' needs a file name");
        options.tracePath = value;
      } else {
        usage("unknown option '" + name + "'");
      }
      continue;
    }
    positional.push_back(arg);
  }
  if (positional.size() != 2)
    usage("expected SPEC.yaml and PROGRAM.so");
  if (options.rotate > 1 && options.bench == 0)
    usage("'--rotate' applies to the timed launches of '--bench'");

  loom::spec::LoadResult loaded = loom::spec::loadSpecFile(positional[0]);
  if (!loaded.ok()) {
    for (const loom::spec::Diagnostic &d : loaded.errors)
      std::cerr << d.str() << "\n";
    return 2;
  }
  loom::spec::Spec spec = *loaded.spec;
  if (layers) {
    auto *decoder = std::get_if<loom::spec::DecoderSpec>(&spec.family);
    if (!decoder)
      usage("'--layers' applies to decoder specs only");
    decoder->layers = layers;
  }

  try {
    loom::check::RunReport report =
        loom::check::runAndCheck(spec, positional[1], options);
    std::cout << report.text << "RESULT " << report.resultJson << "\n"
              << std::flush;
    return report.ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "loom-run: " << e.what() << "\n";
    return 2;
  }
}
