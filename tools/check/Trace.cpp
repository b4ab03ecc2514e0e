//===- Trace.cpp - Per-task timing as Chrome trace JSON and a summary -----===//
#include "tools/check/Trace.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace loom::check {

namespace {

std::string taskName(const LoomProgramDesc &d, int32_t task) {
  if (d.task_names && d.task_names[task])
    return d.task_names[task];
  return "task " + std::to_string(task);
}

/// JSON string contents (the names are plain ASCII, but never trust that).
std::string jsonEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out;
}

/// ns as microseconds with ns precision ("12.345").
std::string us(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu",
                static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buf;
}

std::string fmtUs(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ns / 1000.0);
  return buf;
}

} // namespace

std::string phaseOf(const std::string &taskName) {
  size_t bracket = taskName.rfind('[');
  return bracket == std::string::npos ? taskName : taskName.substr(0, bracket);
}

TraceSummary summarize(const LaunchTiming &timing) {
  const LoomProgramDesc &d = *timing.desc;
  const int32_t numTasks = d.num_tasks;
  TraceSummary s;
  s.workers = d.num_workers;
  for (const loomrt_task_timing &w : timing.workers)
    s.spanNs = std::max(s.spanNs, w.end_ns);
  for (const loomrt_task_timing &t : timing.tasks)
    s.spanNs = std::max(s.spanNs, t.end_ns);

  // Phases in order of their first task.
  std::map<std::string, size_t> index;
  std::vector<size_t> phaseOfTask(static_cast<size_t>(numTasks));
  for (int32_t t = 0; t < numTasks; ++t) {
    std::string phase = phaseOf(taskName(d, t));
    auto [it, inserted] = index.try_emplace(phase, s.phases.size());
    if (inserted) {
      s.phases.push_back(PhaseSummary());
      s.phases.back().name = phase;
    }
    phaseOfTask[size_t(t)] = it->second;
    const loomrt_task_timing &r = timing.tasks[size_t(t)];
    PhaseSummary &p = s.phases[it->second];
    const uint64_t body = r.end_ns - r.start_ns, wait = r.start_ns - r.pick_ns;
    ++p.tasks;
    p.bodyNs += body;
    p.maxBodyNs = std::max(p.maxBodyNs, body);
    p.waitNs += wait;
    s.bodyNs += body;
    s.waitNs += wait;
  }

  // The task each one ran after on its worker.
  std::vector<int32_t> previous(static_cast<size_t>(numTasks), -1);
  {
    std::vector<std::vector<int32_t>> byWorker(static_cast<size_t>(d.num_workers));
    for (int32_t t = 0; t < numTasks; ++t) {
      int32_t w = timing.tasks[size_t(t)].worker;
      if (w >= 0 && w < d.num_workers)
        byWorker[size_t(w)].push_back(t);
    }
    for (std::vector<int32_t> &list : byWorker) {
      std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
        return timing.tasks[size_t(a)].pick_ns < timing.tasks[size_t(b)].pick_ns;
      });
      for (size_t i = 1; i < list.size(); ++i)
        previous[size_t(list[i])] = list[i - 1];
    }
  }
  // The tasks that trigger each event.
  std::vector<std::vector<int32_t>> producers(static_cast<size_t>(d.num_events));
  for (int32_t t = 0; t < numTasks; ++t)
    for (int32_t i = d.task_trigger_begin[t]; i < d.task_trigger_begin[t + 1];
         ++i)
      producers[size_t(d.trigger_events[i])].push_back(t);

  // Walk back from the last task to end. Each step goes to a task not yet
  // on the path that ended no later than the current one, so the walk ends.
  auto endOf = [&](int32_t t) { return timing.tasks[size_t(t)].end_ns; };
  int32_t current = -1;
  for (int32_t t = 0; t < numTasks; ++t)
    if (current < 0 || endOf(t) > endOf(current))
      current = t;
  std::vector<char> onPath(static_cast<size_t>(numTasks), 0);
  while (current >= 0) {
    onPath[size_t(current)] = 1;
    s.criticalPath.push_back(current);
    const loomrt_task_timing &r = timing.tasks[size_t(current)];
    PhaseSummary &p = s.phases[phaseOfTask[size_t(current)]];
    p.criticalNs += r.end_ns - r.start_ns;
    ++p.criticalTasks;
    s.criticalBodyNs += r.end_ns - r.start_ns;
    int32_t best = -1;
    auto consider = [&](int32_t t) {
      if (t < 0 || onPath[size_t(t)] || endOf(t) > r.end_ns)
        return;
      if (best < 0 || endOf(t) > endOf(best))
        best = t;
    };
    consider(previous[size_t(current)]);
    for (int32_t i = d.task_wait_begin[current];
         i < d.task_wait_begin[current + 1]; ++i)
      for (int32_t t : producers[size_t(d.wait_events[i])])
        consider(t);
    current = best;
  }
  std::reverse(s.criticalPath.begin(), s.criticalPath.end());

  std::vector<uint64_t> stamps;
  for (const auto *list : {&timing.tasks, &timing.workers})
    for (const loomrt_task_timing &r : *list) {
      stamps.push_back(r.pick_ns);
      stamps.push_back(r.start_ns);
      stamps.push_back(r.end_ns);
    }
  std::sort(stamps.begin(), stamps.end());
  for (size_t i = 1; i < stamps.size(); ++i)
    if (stamps[i] != stamps[i - 1] &&
        (s.timerStepNs == 0 || stamps[i] - stamps[i - 1] < s.timerStepNs))
      s.timerStepNs = stamps[i] - stamps[i - 1];
  return s;
}

std::string formatSummary(const TraceSummary &s) {
  std::ostringstream os;
  const double span = double(s.spanNs);
  auto pct = [&](double part) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%", span > 0 ? 100.0 * part / span : 0.0);
    return std::string(buf);
  };
  const double busy = span * double(std::max(1, s.workers));
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "  span %s us on %d workers: bodies %.1f%% of worker time, "
                "waiting %.1f%%, the rest between tasks or idle\n",
                fmtUs(span).c_str(), s.workers,
                busy > 0 ? 100.0 * double(s.bodyNs) / busy : 0.0,
                busy > 0 ? 100.0 * double(s.waitNs) / busy : 0.0);
  os << buf;
  os << "  critical path: " << s.criticalPath.size() << " tasks, bodies "
     << fmtUs(double(s.criticalBodyNs)) << " us = "
     << pct(double(s.criticalBodyNs))
     << " of the span (the rest: waits, signalling, launch latency)\n";
  if (s.timerStepNs)
    os << "  timer: smallest step seen " << s.timerStepNs << " ns\n";
  std::snprintf(buf, sizeof buf, "  %-28s %6s %11s %10s %10s %11s %7s\n",
                "op.phase", "tasks", "body us", "mean us", "max us",
                "wait us", "crit %");
  os << buf;
  for (const PhaseSummary &p : s.phases) {
    std::snprintf(buf, sizeof buf, "  %-28s %6lld %11s %10s %10s %11s %7s\n",
                  p.name.c_str(), static_cast<long long>(p.tasks),
                  fmtUs(double(p.bodyNs)).c_str(),
                  fmtUs(p.tasks ? double(p.bodyNs) / double(p.tasks) : 0.0)
                      .c_str(),
                  fmtUs(double(p.maxBodyNs)).c_str(),
                  fmtUs(double(p.waitNs)).c_str(),
                  pct(double(p.criticalNs)).c_str());
    os << buf;
  }
  return os.str();
}

void writeChromeTrace(std::ostream &os, const LaunchTiming &timing) {
  const LoomProgramDesc &d = *timing.desc;
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"program\":\""
     << jsonEscape(d.name ? d.name : "") << "\",\"target\":\""
     << jsonEscape(d.target ? d.target : "") << "\",\"launch\":" << timing.epoch
     << ",\"tasks\":" << d.num_tasks << ",\"workers\":" << d.num_workers
     << "},\n\"traceEvents\":[\n";
  os << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
        "\"args\":{\"name\":\""
     << jsonEscape(timing.title) << "\"}}";
  for (int32_t w = 0; w < d.num_workers; ++w) {
    os << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << w
       << ",\"args\":{\"name\":\"worker " << w << "\"}}";
    os << ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":"
       << w << ",\"args\":{\"sort_index\":" << w << "}}";
  }
  for (int32_t t = 0; t < d.num_tasks; ++t) {
    const loomrt_task_timing &r = timing.tasks[size_t(t)];
    const std::string name = jsonEscape(taskName(d, t));
    const uint64_t wait = r.start_ns - r.pick_ns;
    if (wait > 0)
      os << ",\n{\"name\":\"wait " << name
         << "\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":0,\"tid\":" << r.worker
         << ",\"ts\":" << us(r.pick_ns) << ",\"dur\":" << us(wait)
         << ",\"args\":{\"task\":" << t << "}}";
    os << ",\n{\"name\":\"" << name
       << "\",\"cat\":\"task\",\"ph\":\"X\",\"pid\":0,\"tid\":" << r.worker
       << ",\"ts\":" << us(r.start_ns) << ",\"dur\":"
       << us(r.end_ns - r.start_ns) << ",\"args\":{\"task\":" << t
       << ",\"worker\":" << r.worker << ",\"wait_ns\":" << wait
       << ",\"pick_us\":" << us(r.pick_ns) << "}}";
  }
  os << "\n]}\n";
}

} // namespace loom::check
