// SPDX-License-Identifier: MIT
// Running code under a tiny RLIMIT_MEMLOCK, so that any mlock of a model is
// refused: in a forked child that also gives up CAP_IPC_LOCK (with it, root
// locks past the limit), from its bounding and inheritable sets too, so that
// a program it executes does not get it back.
#pragma once
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace brisk::test {

// The exit code a child gives when it cannot give up CAP_IPC_LOCK here.
inline constexpr int kCannotDropLock = 77;

// Runs body() in a child with RLIMIT_MEMLOCK at 4 KiB and returns its exit
// code (body's return value), or kCannotDropLock.
inline int with_low_memlock(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0);
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    if (syscall(SYS_capget, &hdr, caps) == 0) {
      caps[0].effective &= ~(1u << CAP_IPC_LOCK);
      caps[0].permitted &= ~(1u << CAP_IPC_LOCK);
      caps[0].inheritable &= ~(1u << CAP_IPC_LOCK);
      syscall(SYS_capset, &hdr, caps);
    }
    // Root keeps whatever the bounding set holds across exec.
    if (geteuid() == 0 && prctl(PR_CAPBSET_READ, CAP_IPC_LOCK, 0, 0, 0) == 1) _exit(kCannotDropLock);
    rlimit low{4096, 4096};
    if (setrlimit(RLIMIT_MEMLOCK, &low) != 0) _exit(kCannotDropLock);
    _exit(body());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace brisk::test
