// thread_sched.cpp: see thread_sched.hpp.
#include "net/thread_sched.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mmo::net {

namespace {

// The kernel's struct sched_attr, first version (SCHED_ATTR_SIZE_VER1, Linux 5.3+); glibc
// 2.36 has no wrapper for sched_setattr, so the call goes through syscall(2).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};
static_assert(sizeof(SchedAttr) == 56, "SCHED_ATTR_SIZE_VER1");

}  // namespace

void name_this_thread(const std::string& name) {
  char cut[16] = {};
  std::strncpy(cut, name.c_str(), sizeof cut - 1);
  pthread_setname_np(pthread_self(), cut);
}

int request_thread_slice_us(uint32_t slice_us) {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // this thread's (Linux: per thread)
  if (errno != 0) return errno;
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  attr.sched_nice = nice;
  attr.sched_runtime = static_cast<uint64_t>(slice_us) * 1000;
  if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return errno;
  return 0;
}

uint32_t thread_slice_us(int tid) {
  SchedAttr attr{};
  if (syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0) return 0;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return 0;
  return static_cast<uint32_t>(attr.sched_runtime / 1000);
}

}  // namespace mmo::net
