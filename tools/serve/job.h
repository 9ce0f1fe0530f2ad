// SPDX-License-Identifier: MIT
// One request on its way through the server: filled in by the HTTP thread,
// run by the scheduler thread, answered by the HTTP thread again. The fields
// after `mu` are shared and guarded by it.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "serve/stop_matcher.h"

namespace brisk::serve {

struct Job {
  // ---- set before the job is queued; read-only afterwards
  std::string id;                 // "chatcmpl-..." / "cmpl-..."
  bool chat = true;               // /v1/chat/completions (else /v1/completions)
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  std::vector<int32_t> prompt;
  int max_tokens = 0;
  std::vector<std::string> stop;
  float temperature = 1.0f, top_p = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  uint64_t seed = 0;
  int client_fd = -1;             // the request's socket, watched for a hang-up (-1: unknown)
  double t_arrival = 0, deadline = 0;

  // ---- shared with the HTTP thread
  std::mutex mu;
  std::condition_variable cv;
  std::string out;                // text generated and not yet sent
  bool done = false;
  std::string finish_reason;      // "stop" or "length" when done without error
  int error_status = 0;           // an HTTP status when the job failed
  std::string error_type, error_message;
  int cached_tokens = 0, completion_tokens = 0;
  double t_first = 0;             // first generated token (0: none yet)
  std::atomic<bool> cancel{false};  // the HTTP thread saw the client go away

  // ---- the scheduler thread's own
  brisk_sequence* seq = nullptr;
  bool caching = false;           // the prompt is being read into a sequence kept for the prefix cache
  StopMatcher matcher;
};

}  // namespace brisk::serve
