// SPDX-License-Identifier: MIT
// The HTTP side of `brisk serve`: OpenAI's routes on cpp-httplib, turning
// requests into jobs for the scheduler and their results into JSON or
// server-sent events.
#pragma once
#include <atomic>
#include <string>

#include "brisk/brisk.h"
#include "serve/log.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace httplib {
class Server;
}

namespace brisk::serve {

enum class Phase { loading, ready, draining };

struct ServerState {
  std::atomic<Phase> phase{Phase::loading};
  const brisk_model* model = nullptr;  // set before phase becomes ready
  Scheduler* scheduler = nullptr;      // likewise
  RequestLimits limits;
  std::string model_id;
  std::string api_key;  // "" : no authentication
  bool log_prompts = false;
  double timeout = 0;   // seconds per request; 0: none
  long long created = 0;
  Metrics metrics;
  Logger* log = nullptr;
  std::atomic<int> in_flight{0};  // completion requests not yet fully answered
};

void install_routes(httplib::Server& server, ServerState& state);

}  // namespace brisk::serve
