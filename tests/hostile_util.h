// SPDX-License-Identifier: MIT
// Hostile-input tests run the code under test in a forked child: a crash or a
// runaway allocation then fails one test instead of the suite, the address
// space is capped (RLIMIT_AS) so a regression cannot take the machine's
// memory, and what the child's peak RSS grew to beyond what it started with
// (the test process's own pages, or an emulator's under qemu) is checked
// against the budget the project promises for refusing bad input.
#pragma once
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/error.h"

namespace brisk::test {

#if defined(__SANITIZE_ADDRESS__)
#define BRISK_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BRISK_TEST_ASAN 1
#endif
#endif

constexpr long kHostileRssBudgetKb = 300 * 1024;

// This process's resident set in KB (/proc/self/statm), or -1.
inline long resident_kb() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = -1;
  if (!(in >> size >> resident)) return -1;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

// Runs body in a child process. body returns "" when every expectation held,
// else what went wrong. The child may use at most 2 GiB of address space
// (ASan builds: uncapped, as its shadow memory needs more) and 60 s.
inline void run_hostile(const std::function<std::string()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  // The child's resident set as it starts, written where the parent sees it.
  void* shared = ::mmap(nullptr, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  long* start_kb = static_cast<long*>(shared);
  *start_kb = -1;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    *start_kb = resident_kb();
#ifndef BRISK_TEST_ASAN
    rlimit as{rlim_t(2) << 30, rlim_t(2) << 30};
    ::setrlimit(RLIMIT_AS, &as);
#endif
    ::alarm(60);
    std::string msg;
    try {
      msg = body();
    } catch (const std::exception& e) {
      msg = std::string("unexpected exception: ") + e.what();
    }
    if (!msg.empty()) (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(msg.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(k));
  ::close(fds[0]);
  int status = 0;
  rusage ru{};
  REQUIRE(::wait4(pid, &status, 0, &ru) == pid);
  const long started_kb = *start_kb;
  ::munmap(shared, sizeof(long));
  INFO("child: " << msg);
  REQUIRE_FALSE(WIFSIGNALED(status));
  CHECK(WEXITSTATUS(status) == 0);
  INFO("child's resident set at start: " << started_kb << " KB");
  REQUIRE(started_kb >= 0);
  CHECK(ru.ru_maxrss - started_kb < kHostileRssBudgetKb);
}

// "" if fn throws brisk::Error with `code` and a message containing `needle`.
inline std::string expect_error(const std::function<void()>& fn, brisk_status code, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    if (e.code() != code) return std::string("wrong code ") + std::to_string(e.code()) + ": " + e.what();
    if (std::string(e.what()).find(needle) == std::string::npos)
      return "message lacks '" + needle + "': " + e.what();
    return "";
  }
  return "no error (expected '" + needle + "')";
}

}  // namespace brisk::test
