//===- Bench.cpp - Timed launches, the trace, and the RESULT line ---------===//
//
// --bench N times a program the way a benchmark must, not the way the
// checked launches happen to run: those follow seconds of host-side oracle
// work, so a GPU is back at its idle clocks when they start (an H200 idles
// at 345 MHz against 1980 MHz under load) and a single launch then measures
// the clock ramp. Here the launches run back to back: a warm-up of at least
// `warmupLaunches` launches and `warmupMs` of them, then N timed ones, each
// reporting the backend's own launch time (loomrt_program_last_launch_ns:
// CUDA events around the kernel; host: first worker start to last worker
// end) and the host's wall time from one launch to the next (rebind,
// launch, synchronize). With --rotate K the inputs, caches and meta buffers
// cycle through K copies, so the L2 does not serve a launch from the
// previous one's reads.
//
//===----------------------------------------------------------------------===//
#include "tools/check/CheckInternal.h"
#include "tools/check/Trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace loom::check::detail {

namespace {

using Clock = std::chrono::steady_clock;

/// Copies for --rotate may take this much device memory in all.
constexpr size_t kMaxRotationBytes = size_t(48) << 30;
/// A warm-up stops after this many launches even if warmupMs has not
/// passed (a program of a few microseconds would otherwise spin for long).
constexpr int kMaxWarmupLaunches = 100000;

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string statsJson(const TimeStats &s) {
  return "{\"count\":" + std::to_string(s.count) +
         ",\"min\":" + jsonNumber(s.min) + ",\"median\":" + jsonNumber(s.median) +
         ",\"p90\":" + jsonNumber(s.p90) + ",\"mean\":" + jsonNumber(s.mean) +
         "}";
}

std::string statsLine(const TimeStats &s) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "min %.4f ms, median %.4f ms, p90 %.4f ms, mean %.4f ms", s.min,
                s.median, s.p90, s.mean);
  return buf;
}

} // namespace

TimeStats timeStats(std::vector<double> ms) {
  TimeStats s;
  s.count = int(ms.size());
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  s.min = ms.front();
  s.median = median(ms);
  // Nearest rank: the smallest value with at least 90% of them at or below.
  size_t rank = size_t(std::ceil(0.9 * double(ms.size())));
  s.p90 = ms[std::max<size_t>(rank, 1) - 1];
  double sum = 0;
  for (double v : ms)
    sum += v;
  s.mean = sum / double(ms.size());
  return s;
}

void runBench(Session &session, const RunOptions &options, RunReport &report,
              std::ostream &text) {
  if (options.rotate > 1) {
    size_t perSet = 0;
    try {
      perSet = session.makeRotation(options.rotate, kMaxRotationBytes);
    } catch (const loomrt::Error &e) {
      fail(std::string("--rotate: runtime error while copying the inputs: ") +
           e.what());
    }
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(perSet) / (1 << 20));
    text << "  bench: inputs, caches and meta rotated over " << options.rotate
         << " copies (" << buf << " each; weights and outputs not copied)\n";
  }
  auto step = [&](int index) {
    session.bindRotation(index);
    return session.launch();
  };
  int index = 0;
  const auto warmStart = Clock::now();
  double warmMs = 0;
  while (index < options.warmupLaunches ||
         (warmMs < options.warmupMs && index < kMaxWarmupLaunches)) {
    (void)step(index++);
    warmMs = std::chrono::duration<double, std::milli>(Clock::now() - warmStart)
                 .count();
  }
  report.warmupLaunches = index;
  report.warmupMs = warmMs;

  std::vector<double> deviceMs, wallMs;
  deviceMs.reserve(size_t(options.bench));
  wallMs.reserve(size_t(options.bench));
  auto before = Clock::now();
  for (int i = 0; i < options.bench; ++i) {
    deviceMs.push_back(double(step(index++)) * 1e-6);
    const auto after = Clock::now();
    wallMs.push_back(
        std::chrono::duration<double, std::milli>(after - before).count());
    before = after;
  }
  // Leave the originals bound: the checks after the bench read them.
  session.bindRotation(0);
  report.benchDevice = timeStats(deviceMs);
  report.benchWall = timeStats(wallMs);

  char buf[160];
  std::snprintf(buf, sizeof buf,
                "  bench: %d timed launches after %d warm-up launches "
                "(%.0f ms)\n",
                options.bench, report.warmupLaunches, report.warmupMs);
  text << buf;
  text << "  device time per launch:    " << statsLine(report.benchDevice)
       << "\n";
  text << "  launch-to-launch wall:     " << statsLine(report.benchWall)
       << "\n";
}

void writeTrace(Session &session, const RunOptions &options,
                const std::string &title, std::ostream &text) {
  loomrt::Program &program = session.program();
  if (!program.profiled())
    fail("--trace: program '" + session.path() +
         "' records no per-task timing (build it with loomc --profile)");
  LaunchTiming timing;
  timing.desc = &program.desc();
  timing.title = title;
  timing.epoch = program.epoch();
  try {
    program.profile(&timing.tasks, &timing.workers);
  } catch (const loomrt::Error &e) {
    fail(std::string("--trace: cannot read the per-task timing: ") + e.what());
  }
  std::ofstream out(options.tracePath);
  if (!out)
    fail("--trace: cannot write '" + options.tracePath + "'");
  writeChromeTrace(out, timing);
  out.close();
  if (!out)
    fail("--trace: error while writing '" + options.tracePath + "'");
  text << "  trace of launch " << timing.epoch << " written to "
       << options.tracePath << "\n";
  text << formatSummary(summarize(timing));
}

std::string resultJson(const loom::spec::Spec &spec, const Session &session,
                       const RunOptions &options, const RunReport &report,
                       const std::string &sizes,
                       const std::vector<double> &launchMs) {
  const LoomProgramDesc &d = session.programDesc();
  std::ostringstream os;
  os << "{\"spec\":" << jsonString(spec.name)
     << ",\"family\":" << jsonString(loom::spec::familyName(spec))
     << ",\"program\":" << jsonString(session.path())
     << ",\"target\":" << jsonString(d.target ? d.target : "")
     << ",\"device\":" << jsonString(session.deviceDescription())
     << ",\"workers\":" << d.num_workers << ",\"tasks\":" << d.num_tasks
     << ",\"sizes\":" << jsonString(sizes) << ",\"seed\":" << report.seed
     << ",\"check\":" << (options.oracle ? "\"oracle\"" : "\"none\"")
     << ",\"timing\":" << (options.queued ? "\"queued\"" : "\"issued\"")
     << ",\"ok\":" << (report.ok ? "true" : "false")
     << ",\"launches\":" << launchMs.size() << ",\"launch_ms\":[";
  for (size_t i = 0; i < launchMs.size(); ++i)
    os << (i ? "," : "") << jsonNumber(launchMs[i]);
  os << "]";
  if (report.benchDevice.count) {
    os << ",\"bench\":{\"launches\":" << report.benchDevice.count
       << ",\"warmup_launches\":" << report.warmupLaunches
       << ",\"warmup_ms\":" << jsonNumber(report.warmupMs)
       << ",\"rotate\":" << std::max(1, options.rotate)
       << ",\"device_ms\":" << statsJson(report.benchDevice)
       << ",\"wall_ms\":" << statsJson(report.benchWall) << "}";
  } else {
    os << ",\"bench\":null";
  }
  os << ",\"trace\":"
     << (options.tracePath.empty() ? "null" : jsonString(options.tracePath))
     << "}";
  return os.str();
}

} // namespace loom::check::detail
