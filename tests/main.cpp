// SPDX-License-Identifier: MIT
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  // Kernel plans are measured per machine, so two runs could pick different
  // (equally correct) kernels: the suite runs the fixed plan unless told
  // otherwise, and the planner's own tests ask for measuring explicitly.
  // Commands the tests start inherit it.
  setenv("BRISK_PLAN", "fixed", 0);
  return Catch::Session().run(argc, argv);
}
