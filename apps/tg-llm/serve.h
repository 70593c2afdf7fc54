#pragma once
// tg-llm serve: one model behind an OpenAI-style HTTP API (llama.cpp's server and tinygrad's llm serve do the same).
//   POST /v1/chat/completions, /v1/completions   {"stream": true}: server-sent events, `data: {...}` chunks, `data: [DONE]`
//   GET  /v1/models, /health, / (a chat page that streams from /v1/chat/completions)
// Generation requests run one at a time on one worker thread, first come first served, each continuing from the longest
// beginning it shares with the cache or one of cache_slots earlier conversations; a streaming client that goes away stops
// its generation.
#include <cstdint>
#include <string>

#include "tg/llm.h"

struct ServeOptions {
  std::string model_path, host = "127.0.0.1";
  int port = 8080;      // 0: any free port
  int64_t chunk = 32;   // prompt tokens per forward
  int64_t cache_slots = 4;  // earlier conversations' caches kept (tg::llm::Session's slots)
};

// prints "tg-llm: serving MODEL at http://HOST:PORT" on stdout once the port is bound, then serves until killed.
// A port that cannot be bound is a tg::Error
int serve(tg::llm::Model& m, const ServeOptions& o);
