//===- Parallel.cpp - Thread count of the oracles -------------------------===//

#include "tools/oracle/Parallel.h"

#include <cstdlib>
#include <string>

#if defined(__linux__)
#include <sched.h>
#endif

namespace loom::oracle {

int oracleThreads() {
  if (const char *env = std::getenv("LOOM_ORACLE_THREADS")) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1)
      return int(std::min(v, 1024L));
  }
#if defined(__linux__)
  // The affinity mask, not hardware_concurrency(): a container or taskset
  // may give this process fewer CPUs than the machine has.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

} // namespace loom::oracle
