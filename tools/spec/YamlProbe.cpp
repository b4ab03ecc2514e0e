//===- YamlProbe.cpp - Whether yaml-cpp returns from a text ---------------===//

#include "tools/spec/YamlProbe.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// Sanitizers reserve terabytes of address space: no address-space cap for
// the probe parse under them (the bound alone limits it).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOOM_SPEC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||    \
    __has_feature(memory_sanitizer)
#define LOOM_SPEC_SANITIZED 1
#endif
#endif

namespace loom::spec {
namespace {

/// How long yaml-cpp may take over one spec before the loader gives up:
/// LOOM_SPEC_PARSE_TIMEOUT_MS, default 5 s (a 100000-key spec parses in
/// well under one); 0 parses without the probe.
int parseBoundMs() {
  const char *env = std::getenv("LOOM_SPEC_PARSE_TIMEOUT_MS");
  if (!env || !*env)
    return 5000;
  char *end = nullptr;
  const long ms = std::strtol(env, &end, 10);
  return (*end || ms < 0 || ms > 3600000) ? 5000 : int(ms);
}

enum class Probe { Finished, TimedOut, OutOfMemory, Crashed, Unavailable };

/// Address space the probe parse may add to what the process holds.
constexpr rlim_t kProbeParseBytes = rlim_t(1) << 30;

/// Whether yaml-cpp returns from `text` within `boundMs`. yaml-cpp 0.7
/// never returns from some malformed inputs, allocating as it loops, and
/// the pre-scans below only catch the families of them found so far
/// (fuzzing keeps finding more), so the parse is first run in a child
/// process, with its address space capped (kProbeParseBytes more than the
/// process holds) and killed past the bound. Only a child that came back
/// (its parse returned or threw a YAML error) lets the real parse run.
/// Unavailable: no process could be made.
Probe probeParse(const std::string &text, int boundMs) {
  int fds[2];
  if (pipe(fds) != 0)
    return Probe::Unavailable;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Probe::Unavailable;
  }
  if (pid == 0) {
    close(fds[0]);
    // The child says nothing (a tool's crash handlers would), and running
    // out of memory throws instead of calling a tool's handler.
    if (int devNull = open("/dev/null", O_WRONLY); devNull >= 0)
      dup2(devNull, STDERR_FILENO);
    std::set_new_handler(nullptr);
#ifndef LOOM_SPEC_SANITIZED
    long pages = 0;
    if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1)
        pages = 0;
      std::fclose(statm);
    }
    if (pages > 0) {
      const rlim_t cap = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) +
                         kProbeParseBytes;
      const rlimit limit{cap, cap};
      setrlimit(RLIMIT_AS, &limit);
    }
#endif
    char outcome = 'F';
    try {
      (void)YAML::LoadAll(text);
    } catch (const std::bad_alloc &) {
      outcome = 'M';
    } catch (...) {
    }
    (void)!write(fds[1], &outcome, 1);
    _exit(0);
  }
  close(fds[1]);
  pollfd readable{fds[0], POLLIN, 0};
  int ready;
  do
    ready = poll(&readable, 1, boundMs);
  while (ready < 0 && errno == EINTR);
  char outcome = 0;
  if (ready > 0 && read(fds[0], &outcome, 1) != 1)
    outcome = 0; // the child died without a word
  if (ready <= 0)
    kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  close(fds[0]);
  if (ready <= 0)
    return Probe::TimedOut;
  return outcome == 'F' ? Probe::Finished
         : outcome == 'M' ? Probe::OutOfMemory
                          : Probe::Crashed;
}

} // namespace

std::optional<std::string> yamlParseTrouble(const std::string &text) {
  const int bound = parseBoundMs();
  if (bound == 0)
    return std::nullopt;
  std::string why;
  switch (probeParse(text, bound)) {
  case Probe::Finished:
  case Probe::Unavailable:
    return std::nullopt;
  case Probe::TimedOut:
    why = "did not finish within " + std::to_string(bound) +
          " ms (LOOM_SPEC_PARSE_TIMEOUT_MS)";
    break;
  case Probe::OutOfMemory:
    why = "ran out of memory (1 GiB)";
    break;
  case Probe::Crashed:
    why = "crashed";
    break;
  }
  return "the YAML parser " + why +
         ": yaml-cpp 0.7 loops on some malformed YAML; check the anchors "
         "('&'), quotes and commas";
}

} // namespace loom::spec
