/* SPDX-License-Identifier: MIT */
/*
 * brisk.h: the stable C interface of the brisk inference engine (C99).
 *
 * Rules this header keeps (so that bindings can rely on them):
 *  - Handles are opaque. The only structs that cross the boundary are option
 *    structs: they begin with `uint32_t struct_size`, only grow at the end,
 *    are passed by pointer and get their defaults from brisk_*_options_init(),
 *    a macro that passes the struct's size as the caller's header knows it:
 *    a program built against an older, smaller struct gets exactly the
 *    fields it knows, and the library reads only struct_size bytes of it.
 *    Bindings call brisk_*_options_init_sized(options, sizeof *options).
 *  - Every call that can fail returns a brisk_status (BRISK_OK or a fixed
 *    negative code, never renumbered); brisk_last_error() describes the last
 *    failure on the calling thread. Handles come back through out-parameters.
 *  - Caller buffers use (buf, cap, size_t *needed): *needed is always set to
 *    the full size; when cap is too small the call returns
 *    BRISK_ERR_BUFFER_TOO_SMALL and writes nothing past cap. Arrays count
 *    elements; text is NUL-terminated and *needed includes the NUL.
 *  - Strings passed in options are copied during the call; the caller may
 *    free them afterwards.
 *  - Callbacks run on the calling thread, inside the call that triggers them.
 *    Inside a token callback, only read-only calls (state, position,
 *    generated tokens, model and tokenizer calls) are allowed on the same
 *    engine or session; changing it there returns BRISK_ERR_INVALID_ARGUMENT.
 *    Text given to token callbacks is always valid UTF-8 (invalid bytes come
 *    as U+FFFD); brisk_detokenize and brisk_token_to_piece give raw bytes.
 *    Freeing a session or engine inside one of its own callbacks is allowed:
 *    its callbacks are not called again, the call in progress stops (it may
 *    return BRISK_ERR_CANCELLED) and the handle is freed when that call
 *    returns. A sequence freed inside a callback is released when the step ends.
 *  - Handles are checked: NULL, a handle already freed, a closed model, a
 *    handle of another type or a pointer that is no brisk handle give
 *    BRISK_ERR_INVALID_ARGUMENT (void calls: nothing happens and
 *    brisk_last_error() says why; calls returning a value: 0, or the value
 *    their comment gives). Detection of freed handles is best-effort: a
 *    handle freed long ago (thousands of frees) may not be recognised.
 *  - No global mutable state: callbacks are per handle with a user_data pointer.
 *  - Enums only grow; calls are deprecated, never renamed.
 *  - A struct_size larger than the library's struct (a program built
 *    against a newer header) is accepted when the fields the library does
 *    not know are all zero (their defaults); otherwise the call fails with
 *    BRISK_ERR_UNSUPPORTED naming the library's version.
 *  - This header is the stable API. Calls that may still change live in
 *    brisk/brisk_experimental.h, under a weaker promise stated there.
 *  - The library never pins the calling thread to a CPU unless an option
 *    asks for it (pin_caller); its own worker threads are pinned by default.
 *
 * Thread safety:
 *  - brisk_model: immutable after brisk_model_open(); every function taking a
 *    `const brisk_model *` may be called from any number of threads at once.
 *  - brisk_session, brisk_sampler: belong to one thread at a time (callers
 *    may hand them between threads, but must not use one from two at once).
 *  - brisk_last_error() is thread-local.
 */
#ifndef BRISK_BRISK_H
#define BRISK_BRISK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define BRISK_API __attribute__((visibility("default")))
#else
#define BRISK_API
#endif

/* ---- versions --------------------------------------------------------- */
/* These equal the project version and ABI of CMakeLists.txt (checked when
 * the library is built). */
#define BRISK_VERSION_MAJOR 0
#define BRISK_VERSION_MINOR 8
#define BRISK_VERSION_PATCH 0
/* The ABI major is the shared library's SONAME (libbrisk.so.<ABI major>);
 * functions added in ABI minor N carry the symbol version BRISK_<major>.N. */
#define BRISK_ABI_VERSION_MAJOR 0
#define BRISK_ABI_VERSION_MINOR 8

/* "0.7.0": the library actually loaded, which may be newer than the header. */
BRISK_API const char *brisk_version(void);
/* (major << 16) | minor of the loaded library's ABI. */
BRISK_API uint32_t brisk_abi_version(void);

/* ---- status ----------------------------------------------------------- */
typedef enum brisk_status {
  BRISK_OK = 0,
  BRISK_ERR_INVALID_ARGUMENT = -1, /* a NULL handle, bad option value, ... */
  BRISK_ERR_NOT_FOUND = -2,        /* a file or key that does not exist */
  BRISK_ERR_IO = -3,               /* reading or writing failed */
  BRISK_ERR_BAD_FORMAT = -4,       /* a file that is corrupt or not what it claims */
  BRISK_ERR_UNSUPPORTED = -5,      /* valid input that brisk cannot handle */
  BRISK_ERR_OUT_OF_MEMORY = -6,    /* allocation failed or would not fit */
  BRISK_ERR_CONTEXT_FULL = -7,     /* tokens beyond the session's context */
  BRISK_ERR_BUFFER_TOO_SMALL = -8, /* see (buf, cap, needed) above */
  BRISK_ERR_CANCELLED = -9,        /* an abort callback asked to stop */
  BRISK_ERR_CHECKSUM = -10,        /* data does not match its recorded hash */
  BRISK_ERR_INTERNAL = -11         /* a bug in brisk: please report it */
} brisk_status;

/* A static English name for a status ("BRISK_ERR_IO"). */
BRISK_API const char *brisk_status_name(brisk_status status);
/* What went wrong in the last failed call on this thread, in words. Never
 * NULL; valid until the next brisk call on the same thread. Calls returning
 * a brisk_status clear it when they start; void and value-returning calls
 * set it only when they refuse a bad argument and otherwise leave it as it was. */
BRISK_API const char *brisk_last_error(void);

/* ---- tensor types ----------------------------------------------------- */
/* Values are GGUF's (ggml's) type ids. */
typedef enum brisk_type {
  BRISK_TYPE_AUTO = -1, /* let brisk choose */
  BRISK_TYPE_F32 = 0,
  BRISK_TYPE_F16 = 1,
  BRISK_TYPE_Q4_0 = 2,
  BRISK_TYPE_Q4_1 = 3,
  BRISK_TYPE_Q8_0 = 8,
  BRISK_TYPE_Q4_K = 12,
  BRISK_TYPE_Q5_K = 13,
  BRISK_TYPE_Q6_K = 14,
  BRISK_TYPE_BF16 = 30
} brisk_type;

/* The lower-case name of a type as the tools spell it ("q4_0", "f16",
 * "auto"), or NULL for a value that is not a brisk_type. Added in ABI 0.4. */
BRISK_API const char *brisk_type_name(brisk_type type);
/* The type named `name` (as brisk_type_name gives it, in any case).
 * BRISK_ERR_NOT_FOUND for an unknown name, with the known ones in
 * brisk_last_error(). Added in ABI 0.4. */
BRISK_API brisk_status brisk_type_from_name(const char *name, brisk_type *out_type);

/* ---- callbacks -------------------------------------------------------- */
typedef enum brisk_log_level {
  BRISK_LOG_ERROR = 0,
  BRISK_LOG_WARN = 1,
  BRISK_LOG_INFO = 2,
  BRISK_LOG_DEBUG = 3
} brisk_log_level;

typedef void (*brisk_log_fn)(void *user_data, brisk_log_level level, const char *message);
/* Return non-zero to cancel the operation (it then returns BRISK_ERR_CANCELLED). */
typedef int (*brisk_abort_fn)(void *user_data);
/* Progress of a long operation. `stage` names it ("convert", "verify", "pack", "unpack",
 * "quantize", "calibrate", "sensitivity", "ppl", "compare"); `done` of `total` units (bytes, tensors,
 * tokens, chunks, prompts); `detail` says what is being worked on (never NULL).
 * Return non-zero to cancel: the call then returns BRISK_ERR_CANCELLED. */
typedef int (*brisk_progress_fn)(void *user_data, const char *stage, uint64_t done, uint64_t total,
                                 const char *detail);

/* ---- model ------------------------------------------------------------ */
typedef struct brisk_model brisk_model;

/* Kernel plans. Which matrix layout and kernel variant runs each weight type
 * and column count (decode, a few sequences, a batch, a prompt) is measured
 * on the machine at hand when a model is opened, on the model's own
 * matrices, in about two seconds at most for a 1B model, and cached per
 * machine and model shape, so later opens only read the cache. A cached plan
 * that is corrupt or was made for another machine is ignored with a warning
 * (log_fn) and measured again. A kernel other than the instruction set's
 * baseline runs only once two measurings at least 10 minutes apart
 * ($BRISK_PLAN_CONFIRM_AFTER seconds) found it faster: the first leaves it
 * pending, and a later open measures it again and keeps or drops it.
 * Added in ABI 0.5. */
typedef enum brisk_plan_mode {
  BRISK_PLAN_DEFAULT = 0, /* $BRISK_PLAN (auto, fixed or measure) if set, else AUTO */
  BRISK_PLAN_AUTO = 1,    /* the cached plan if valid, else measure and cache it */
  BRISK_PLAN_FIXED = 2,   /* the instruction set's baseline kernels: reproducible, nothing measured */
  BRISK_PLAN_MEASURE = 3  /* measure even if a plan is cached, then cache it (brisk tune) */
} brisk_plan_mode;

typedef struct brisk_model_options {
  uint32_t struct_size;
  /* Messages from loading (warnings, what was repacked). NULL: silent. */
  brisk_log_fn log_fn;
  void *log_user_data;
  /* Most verbose level passed to log_fn (ERROR=0 ... DEBUG=3); log_fn is
   * called only during brisk_model_open. Default BRISK_LOG_WARN. */
  brisk_log_level log_level;
  /* Non-zero: open for tokenizing only; tensors are not checked or bound.
   * Also the automatic fallback is never taken: a model with no tensors
   * opens only with this set. Default 0. */
  int32_t vocab_only;
  /* Non-zero: before opening, recompute every checksum of the file's
   * embedded manifest (see brisk_verify); a mismatch fails with
   * BRISK_ERR_CHECKSUM naming what differs, a file without a manifest with
   * BRISK_ERR_NOT_FOUND. Reads the whole file once. Default 0. */
  int32_t verify;
  /* Non-zero: lock the model's pages in RAM (mlock) so they are never paged
   * out; when the OS refuses, BRISK_ERR_OUT_OF_MEMORY with the
   * RLIMIT_MEMLOCK numbers. Default 0. Added in ABI 0.4 (64 bits wide so
   * that it starts past the 0.3 struct's tail padding, which a program
   * built against 0.3 may leave uninitialised). */
  int64_t mlock;
  /* Non-zero: read the file into anonymous memory instead of mapping it
   * (network filesystems). Default 0. Added in ABI 0.4. */
  int64_t no_mmap;
  /* How the matrix kernels are chosen: one of brisk_plan_mode. Default
   * BRISK_PLAN_DEFAULT. Added in ABI 0.5. */
  int64_t plan_mode;
  /* Directory of cached kernel plans. NULL: $BRISK_CACHE_DIR, else
   * $XDG_CACHE_HOME/brisk, else ~/.cache/brisk. Added in ABI 0.5. */
  const char *plan_cache_dir;
  /* Threads a plan is measured with (0: one per physical core, as engines
   * and sessions default to). Added in ABI 0.5. */
  int64_t plan_threads;
} brisk_model_options;

BRISK_API void brisk_model_options_init_sized(brisk_model_options *options, size_t size);
#define brisk_model_options_init(options) brisk_model_options_init_sized((options), sizeof(*(options)))
/* Opens a GGUF model file. options may be NULL for defaults. */
BRISK_API brisk_status brisk_model_open(const char *path, const brisk_model_options *options,
                                        brisk_model **out_model);
/* Closes a model. Sessions and engines made from it keep it alive: it is
 * freed when the last of them is freed (before ABI 0.4 they had to be freed
 * first). The handle itself is closed at once: later calls with it fail.
 * NULL is a no-op. */
BRISK_API void brisk_model_close(brisk_model *model);

BRISK_API int32_t brisk_model_n_vocab(const brisk_model *model);
BRISK_API int32_t brisk_model_n_ctx_train(const brisk_model *model);
BRISK_API int32_t brisk_model_token_bos(const brisk_model *model); /* -1 if none */
BRISK_API int32_t brisk_model_token_eos(const brisk_model *model); /* -1 if none */
/* One line such as "llama 5 layers, dim 64, vocab 512, f32, 1.2 MB". */
BRISK_API brisk_status brisk_model_describe(const brisk_model *model, char *buf, size_t cap,
                                            size_t *needed);
/* The type most of the model's matrix bytes are stored in, e.g. "q4_0". */
BRISK_API brisk_status brisk_model_weight_type(const brisk_model *model, char *buf, size_t cap, size_t *needed);
/* The kernel plan in use, as text: where it came from (fixed, measured,
 * cached and the cache file), then one line per weight type with its layout
 * and the kernel of each column class ("1", "2", "3-4", "5-31", "32+") with the
 * weight bytes per second measured for it, then any pending variants and
 * what this open's second measuring decided. For people, not for parsing.
 * Added in ABI 0.5. */
BRISK_API brisk_status brisk_model_kernel_plan(const brisk_model *model, char *buf, size_t cap, size_t *needed);
/* Size of the model file in bytes. */
BRISK_API uint64_t brisk_model_file_size(const brisk_model *model);
/* Bytes of weights one decode step reads: every matrix multiplied with (the
 * output included, also when it is the token embeddings), one row of the
 * token embeddings and the norm vectors. At a read bandwidth of B bytes/s a
 * model decodes at most B / this many steps per second. 0 for a
 * vocabulary-only model or NULL. Added in ABI 0.8. */
BRISK_API uint64_t brisk_model_decode_bytes(const brisk_model *model);
/* A metadata value rendered as text (strings as they are, numbers in decimal,
 * arrays as "[n items]"). BRISK_ERR_NOT_FOUND if the key is absent. */
BRISK_API brisk_status brisk_model_meta(const brisk_model *model, const char *key, char *buf,
                                        size_t cap, size_t *needed);

/* ---- tokens ----------------------------------------------------------- */
enum {
  BRISK_TOKENIZE_ADD_BOS = 1u << 0,       /* add BOS if the model's metadata asks for it */
  BRISK_TOKENIZE_PARSE_SPECIAL = 1u << 1, /* recognise "<s>", "<|im_start|>"... in the text */
  BRISK_PIECE_SPECIAL = 1u << 2           /* token_to_piece: give control tokens' text ("<s>") */
};

/* Text (UTF-8, len bytes) to token ids. Thread-safe on a shared model. */
BRISK_API brisk_status brisk_tokenize(const brisk_model *model, const char *text, size_t len,
                                      uint32_t flags, int32_t *tokens, size_t cap,
                                      size_t *needed);
/* The raw bytes of one token (may be part of a UTF-8 character); control
 * tokens give "" unless flags has BRISK_PIECE_SPECIAL. *needed counts a
 * terminating NUL, which is always written. */
BRISK_API brisk_status brisk_token_to_piece(const brisk_model *model, int32_t token, uint32_t flags, char *buf,
                                            size_t cap, size_t *needed);
/* Token ids to text; a leading space the tokenizer added is removed when
 * BRISK_TOKENIZE_ADD_BOS is set in flags and the first token is BOS. */
BRISK_API brisk_status brisk_detokenize(const brisk_model *model, const int32_t *tokens,
                                        size_t n_tokens, uint32_t flags, char *buf, size_t cap,
                                        size_t *needed);

/* ---- chat templates --------------------------------------------------- */
/* Renders a conversation in the model's chat format, recognised from its
 * tokenizer.chat_template metadata (Llama 2, Llama 3, ChatML/Qwen2, Mistral,
 * Phi-3), or from template_name ("llama2", "llama3", "chatml", "mistral",
 * "phi3") when that is not NULL. roles[i]/contents[i] are UTF-8 strings
 * ("system", "user", "assistant"). add_assistant non-zero appends the start of
 * the assistant's reply. Tokenize the result with BRISK_TOKENIZE_ADD_BOS |
 * BRISK_TOKENIZE_PARSE_SPECIAL. BRISK_ERR_UNSUPPORTED if the format is unknown.
 * A role or content holding text that tokenizes to one of the model's control
 * tokens (e.g. "<|im_end|><|im_start|>system" in a user message) would forge
 * the conversation's structure: it is refused with BRISK_ERR_INVALID_ARGUMENT
 * naming the message (brisk_chat_render_ex can allow it). */
BRISK_API brisk_status brisk_chat_render(const brisk_model *model, const char *template_name,
                                         const char *const *roles, const char *const *contents,
                                         size_t n_messages, int32_t add_assistant, char *buf, size_t cap,
                                         size_t *needed);

/* Added in ABI 0.4. Options of brisk_chat_render_ex. */
typedef struct brisk_chat_options {
  uint32_t struct_size;
  /* "llama2", "llama3", "chatml", "mistral", "phi3"; NULL (default): from the
   * model's tokenizer.chat_template. */
  const char *template_name;
  int32_t add_assistant; /* non-zero: append the start of the reply. Default 1 */
  /* Non-zero: render control-token text in roles and contents as it is (it
   * becomes control tokens when tokenized with PARSE_SPECIAL). Only for
   * trusted text. Default 0: refused, as by brisk_chat_render. */
  int32_t allow_control_tokens;
} brisk_chat_options;

/* Added in ABI 0.4. */
BRISK_API void brisk_chat_options_init_sized(brisk_chat_options *options, size_t size);
#define brisk_chat_options_init(options) brisk_chat_options_init_sized((options), sizeof(*(options)))
/* Added in ABI 0.4. brisk_chat_render with options (NULL: the defaults). */
BRISK_API brisk_status brisk_chat_render_ex(const brisk_model *model, const char *const *roles,
                                            const char *const *contents, size_t n_messages,
                                            const brisk_chat_options *options, char *buf, size_t cap,
                                            size_t *needed);

/* ---- session: one sequence with its own KV cache ---------------------- */
typedef struct brisk_session brisk_session;

typedef struct brisk_session_options {
  uint32_t struct_size;
  /* Context length in tokens. 0: the model's training context, at most 4096. */
  uint32_t n_ctx;
  /* Worker threads. 0: one per physical core, at most the cgroup CPU quota. */
  uint32_t n_threads;
  /* Tokens evaluated per forward pass while reading a prompt. 0: 512. */
  uint32_t n_batch;
  /* Checked between forward-pass chunks and layers; may be NULL. */
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  /* KV cache element types (F32, F16, Q8_0, Q4_0). BRISK_TYPE_AUTO (default):
   * F32 for models whose matrices are all F32, F16 otherwise. */
  int32_t cache_type_k;
  int32_t cache_type_v;
  /* Non-zero: do not pin worker threads to cores. Default 0. */
  int32_t no_pin;
  /* Non-zero (and no_pin 0): also pin the calling thread, which computes
   * as thread 0, to the first core, while the session exists; its CPU mask
   * is given back when the session is freed on that thread. Default 0: the
   * caller's thread is left as it is. Added in ABI 0.4. */
  int32_t pin_caller;
  /* Memory the session may plan for, in bytes; 0 (default): what the machine
   * (its cgroup, MemAvailable) has available. See brisk_engine_options.
   * Added in ABI 0.4. */
  uint64_t memory_budget;
} brisk_session_options;

BRISK_API void brisk_session_options_init_sized(brisk_session_options *options, size_t size);
#define brisk_session_options_init(options) brisk_session_options_init_sized((options), sizeof(*(options)))
BRISK_API brisk_status brisk_session_create(const brisk_model *model,
                                            const brisk_session_options *options,
                                            brisk_session **out_session);
/* Frees the session (see the callback rules at the top). NULL is a no-op. */
BRISK_API void brisk_session_free(brisk_session *session);
/* Forgets every token; the session starts again at position 0. */
BRISK_API brisk_status brisk_session_reset(brisk_session *session);
/* Forgets the tokens from `position` on (position <= current position);
 * evaluate at least one token before asking for logits again. */
BRISK_API brisk_status brisk_session_truncate(brisk_session *session, uint32_t position);
/* Number of tokens in the session's context so far. */
BRISK_API uint32_t brisk_session_position(const brisk_session *session);
BRISK_API uint32_t brisk_session_n_ctx(const brisk_session *session);

/* Appends tokens to the context and evaluates them (in chunks of n_batch).
 * Afterwards brisk_session_logits() gives the logits after the last token.
 * BRISK_ERR_CONTEXT_FULL (and nothing evaluated) if they do not fit. */
BRISK_API brisk_status brisk_session_eval(brisk_session *session, const int32_t *tokens,
                                          size_t n_tokens);
/* Like brisk_session_eval, and also returns the logits after every one of the
 * tokens: n_tokens * n_vocab floats, row by row. */
BRISK_API brisk_status brisk_session_eval_all(brisk_session *session, const int32_t *tokens,
                                              size_t n_tokens, float *logits, size_t cap,
                                              size_t *needed);
/* Logits (n_vocab floats) after the last evaluated token. */
BRISK_API brisk_status brisk_session_logits(const brisk_session *session, float *logits,
                                            size_t cap, size_t *needed);

/* ---- sampling --------------------------------------------------------- */
typedef struct brisk_sampler brisk_sampler;

typedef struct brisk_sampler_options {
  uint32_t struct_size;
  float temperature;     /* <= 0: greedy (argmax). Default 0.8 */
  int32_t top_k;         /* <= 0: off. Default 40 */
  float top_p;           /* >= 1: off. Default 0.95 */
  float min_p;           /* <= 0: off. Default 0.05 */
  float repeat_penalty;  /* 1: off. Default 1 (off) */
  int32_t repeat_last_n; /* tokens looked back for the penalty. Default 64 */
  uint64_t seed;         /* same seed, same model, same prompt: same text. Default 0 */
  /* OpenAI-style penalties over the last repeat_last_n tokens: a token's
   * logit is lowered by presence_penalty once it appears there, plus
   * frequency_penalty times its count. 0 (default): off. Added in ABI 0.4. */
  float presence_penalty;
  float frequency_penalty;
} brisk_sampler_options;

BRISK_API void brisk_sampler_options_init_sized(brisk_sampler_options *options, size_t size);
#define brisk_sampler_options_init(options) brisk_sampler_options_init_sized((options), sizeof(*(options)))
BRISK_API brisk_status brisk_sampler_create(const brisk_sampler_options *options,
                                            brisk_sampler **out_sampler);
BRISK_API void brisk_sampler_free(brisk_sampler *sampler);
/* Draws the next token from the session's current logits (does not evaluate it). */
BRISK_API brisk_status brisk_sampler_sample(brisk_sampler *sampler, const brisk_session *session,
                                            int32_t *out_token);
/* Tells the sampler a token is in the context (for the repetition penalty
 * of brisk_sampler_sample). brisk_generate sets the history itself. */
BRISK_API void brisk_sampler_accept(brisk_sampler *sampler, int32_t token);

/* ---- generation ------------------------------------------------------- */
/* Called once per generated token. `text` holds the new complete UTF-8 text
 * (possibly empty while a multi-byte character is still being assembled; the
 * bytes come with a later token). At the end, text still pending is passed
 * once more with token -1. Return non-zero to stop generating. */
typedef int (*brisk_token_fn)(void *user_data, int32_t token, const char *text, size_t text_len);

typedef enum brisk_stop_reason {
  BRISK_STOP_MAX_TOKENS = 0, /* generated max_tokens */
  BRISK_STOP_EOS = 1,        /* the model produced its end-of-sequence token */
  BRISK_STOP_CALLBACK = 2,   /* the token callback returned non-zero */
  BRISK_STOP_CONTEXT_FULL = 3 /* the context filled up */
} brisk_stop_reason;

typedef struct brisk_generate_options {
  uint32_t struct_size;
  int32_t max_tokens;       /* Default 128 */
  int32_t stop_at_eos;      /* Default 1 */
  brisk_token_fn token_fn;  /* may be NULL */
  void *token_user_data;
} brisk_generate_options;

BRISK_API void brisk_generate_options_init_sized(brisk_generate_options *options, size_t size);
#define brisk_generate_options_init(options) brisk_generate_options_init_sized((options), sizeof(*(options)))
/* Samples, evaluates and reports tokens until a stop condition. The prompt
 * must have been evaluated with brisk_session_eval first. n_generated and
 * stop_reason may be NULL. Cancellation: the session's abort_fn.
 * Afterwards the session's context holds the generated tokens, the last one
 * included when max_tokens was reached (so a further brisk_generate
 * continues the text); the token a callback stopped at is not kept, nor one
 * past a full context. The repetition penalty looks
 * at the last repeat_last_n tokens of the session's context, prompt
 * included: the sampler's history is set from it (its random state carries
 * over between calls). A session generates exactly as a one-sequence engine
 * does with the same sampler options. */
BRISK_API brisk_status brisk_generate(brisk_session *session, brisk_sampler *sampler,
                                      const brisk_generate_options *options,
                                      size_t *n_generated, brisk_stop_reason *stop_reason);

/* ---- engine: many sequences per weight read --------------------------- */
/* An engine owns a thread pool, a KV cache with n_seq_max slots and a
 * scheduler. Each brisk_engine_step() runs ONE forward pass over the work of
 * every sequence (a decode token for each generating sequence, plus prompt
 * chunks up to n_batch tokens), so each weight is read once for all of them.
 * Sequences join and leave between steps; a finished sequence gives its slot
 * back at once. An engine and its sequences belong to one thread at a time;
 * token callbacks run on that thread, inside brisk_engine_step(). */
typedef struct brisk_engine brisk_engine;
typedef struct brisk_sequence brisk_sequence;

typedef struct brisk_engine_options {
  uint32_t struct_size;
  uint32_t n_ctx;        /* per sequence; 0: model's training context, at most 4096 */
  uint32_t n_seq_max;    /* sequences that can exist at once. Default 8 */
  uint32_t n_threads;    /* 0: one per physical core, at most the cgroup CPU quota */
  uint32_t n_batch;      /* most tokens per step. Default 512 */
  int32_t cache_type_k;  /* BRISK_TYPE_AUTO (default), F32, F16, Q8_0, Q4_0 */
  int32_t cache_type_v;
  int32_t no_pin;        /* non-zero: do not pin threads to cores */
  const char *cpu_list;  /* e.g. "0,2,4,6": pin thread i to the i-th CPU. NULL: one per physical core */
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  /* Memory the engine may plan for, in bytes; 0: what the machine has
   * available. Creation fails with BRISK_ERR_OUT_OF_MEMORY and a message
   * giving the numbers and the largest parallel/context that would fit. */
  uint64_t memory_budget;
  /* Non-zero (and no_pin 0): also pin the calling thread, which computes
   * as thread 0, to the first core or cpu_list[0], while the engine exists.
   * Default 0: the caller's thread is left as it is. Added in ABI 0.4. */
  int32_t pin_caller;
} brisk_engine_options;

typedef enum brisk_sequence_state {
  BRISK_SEQ_IDLE = 0,       /* evaluated everything it was given; not generating */
  BRISK_SEQ_PREFILL = 1,    /* prompt tokens still to evaluate */
  BRISK_SEQ_GENERATING = 2,
  BRISK_SEQ_FINISHED = 3    /* see brisk_sequence_stop_reason(); its slot is free */
} brisk_sequence_state;

BRISK_API void brisk_engine_options_init_sized(brisk_engine_options *options, size_t size);
#define brisk_engine_options_init(options) brisk_engine_options_init_sized((options), sizeof(*(options)))
BRISK_API brisk_status brisk_engine_create(const brisk_model *model, const brisk_engine_options *options,
                                           brisk_engine **out_engine);
/* Frees the engine and every sequence still attached to it (their handles
 * then give BRISK_ERR_INVALID_ARGUMENT, and brisk_sequence_free on them does
 * nothing). Inside one of its callbacks, see the rules at the top. */
BRISK_API void brisk_engine_free(brisk_engine *engine);
/* "2 threads, pinned to cores 1 (cpus 1); calling thread not pinned; 8 slots x 2048 tokens; KV f16/f16 (...)" */
BRISK_API brisk_status brisk_engine_describe(const brisk_engine *engine, char *buf, size_t cap, size_t *needed);
/* Threads the engine computes with (the calling thread included). */
BRISK_API uint32_t brisk_engine_n_threads(const brisk_engine *engine);
/* The physical cores this process may run on (SMT siblings counted once), at
 * least 1: the thread count that n_threads = 0 gives where an option says
 * "one per physical core". Options whose 0 means all cores take it as an
 * explicit count. Added in ABI 0.4. */
BRISK_API uint32_t brisk_physical_cores(void);
/* One forward pass over all ready work; *n_active (may be NULL) receives the
 * number of sequences that still have work. */
BRISK_API brisk_status brisk_engine_step(brisk_engine *engine, uint32_t *n_active);
/* brisk_engine_read_bandwidth: see brisk/brisk_experimental.h. */

/* A new, empty sequence in a free slot (BRISK_ERR_OUT_OF_MEMORY if none). */
BRISK_API brisk_status brisk_sequence_create(brisk_engine *engine, brisk_sequence **out_sequence);
/* A new sequence whose context is a copy of src's (src must be idle): a
 * shared system prompt is evaluated once and forked per request. */
BRISK_API brisk_status brisk_sequence_fork(const brisk_sequence *src, brisk_sequence **out_sequence);
/* Frees a sequence and its slot; inside a callback of its engine it stops at
 * once and is released when the step ends. */
BRISK_API void brisk_sequence_free(brisk_sequence *sequence);
/* Queues tokens to evaluate in coming steps. */
BRISK_API brisk_status brisk_sequence_add_tokens(brisk_sequence *sequence, const int32_t *tokens, size_t n_tokens);
/* Tokenizes text (flags as brisk_tokenize) and queues the tokens. */
BRISK_API brisk_status brisk_sequence_add_text(brisk_sequence *sequence, const char *text, size_t len,
                                               uint32_t flags);
/* After the queued tokens, generate with these settings (options may be NULL
 * for defaults); tokens are reported through options->token_fn during steps,
 * except that a sequence whose tokens are all evaluated already (an idle one,
 * or a fork) samples its first token inside this call. */
BRISK_API brisk_status brisk_sequence_generate(brisk_sequence *sequence, const brisk_sampler_options *sampling,
                                               const brisk_generate_options *options);
BRISK_API brisk_sequence_state brisk_sequence_get_state(const brisk_sequence *sequence);
BRISK_API brisk_stop_reason brisk_sequence_stop_reason(const brisk_sequence *sequence);
BRISK_API uint32_t brisk_sequence_position(const brisk_sequence *sequence);
/* The tokens generated so far. */
BRISK_API brisk_status brisk_sequence_generated(const brisk_sequence *sequence, int32_t *tokens, size_t cap,
                                                size_t *needed);

/* Forgets the sequence's tokens from `position` on (position <= its
 * position; the sequence must be idle): a fork of a cached prompt cut back to
 * the part another prompt shares. Add at least one token before generating.
 * Added in ABI 0.4. */
BRISK_API brisk_status brisk_sequence_truncate(brisk_sequence *sequence, uint32_t position);
/* The most sequences (at most options->n_seq_max) an engine with these
 * options could hold within its memory budget, as brisk_engine_create plans
 * it; 0 if not even one fits. Nothing is allocated. Added in ABI 0.4. */
BRISK_API brisk_status brisk_engine_max_sequences(const brisk_model *model, const brisk_engine_options *options,
                                                  uint32_t *out_n_seq);

/* ---- synthetic models -------------------------------------------------- */
/* Random weights in the shape of a real model, for benchmarks and tests. */
typedef struct brisk_synthesize_options {
  uint32_t struct_size;
  const char *shape;       /* see brisk_synthetic_shapes(). Default "tiny" */
  const char *weight_type; /* "q4_0", "q8_0", "q4_k", "f16", ... Default "q4_0" */
  uint64_t seed;           /* Default 0 */
  uint32_t n_threads;      /* 0: all cores */
} brisk_synthesize_options;

BRISK_API void brisk_synthesize_options_init_sized(brisk_synthesize_options *options, size_t size);
#define brisk_synthesize_options_init(options) brisk_synthesize_options_init_sized((options), sizeof(*(options)))
/* Writes a GGUF file (atomically: temporary file, then rename). */
BRISK_API brisk_status brisk_synthesize_model(const char *path, const brisk_synthesize_options *options);
/* Makes a synthetic model in memory (a file on tmpfs that is unlinked once
 * mapped, so nothing is left behind) and opens it. */
BRISK_API brisk_status brisk_model_open_synthetic(const brisk_synthesize_options *synth,
                                                  const brisk_model_options *options, brisk_model **out_model);
/* The built-in shape names, comma-separated. */
BRISK_API brisk_status brisk_synthetic_shapes(char *buf, size_t cap, size_t *needed);

/* ==== conversion, checksums and bundles ================================ */
/* Every GGUF brisk writes carries a checksum manifest in its metadata
 * (XXH3-128 of each tensor and of the header; keys brisk.manifest.*). A
 * .brisk bundle is a zstd-compressed GGUF with a manifest in front.
 * Formats: docs/manifest.md. Outputs are written atomically (temporary file,
 * then rename): a failed or cancelled call leaves no partial file. */


typedef struct brisk_convert_options {
  uint32_t struct_size;
  /* Matrix type (brisk_type): F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K
   * or Q6_K. BRISK_TYPE_AUTO (default): the source's float type. 1-D tensors
   * stay F32; a matrix whose rows do not fit the type's block falls back
   * (Q8_0/Q4_0/Q4_1 -> F16, K-quants -> Q8_0, else F16), reported to log_fn. */
  int32_t type;
  /* general.name. NULL (default): the directory's name for Hugging Face
   * models, "llama" for llama2.c checkpoints (as llama.cpp names them). */
  const char *name;
  /* Worker threads. 0: all cores. */
  uint32_t n_threads;
  brisk_progress_fn progress_fn; /* may be NULL */
  void *progress_user_data;
  brisk_abort_fn abort_fn; /* checked between pieces of work; may be NULL */
  void *abort_user_data;
  brisk_log_fn log_fn; /* warnings (type fallbacks...); may be NULL */
  void *log_user_data;
  /* Reading the checkpoint's files, as brisk_model_options' fields of the
   * same names: non-zero mlock locks them in RAM while converting
   * (BRISK_ERR_OUT_OF_MEMORY with the RLIMIT_MEMLOCK numbers when the OS
   * refuses); non-zero no_mmap reads them into anonymous memory instead of
   * mapping them (network filesystems). Default 0. Added in ABI 0.6. */
  int64_t mlock;
  int64_t no_mmap;
} brisk_convert_options;

BRISK_API void brisk_convert_options_init_sized(brisk_convert_options *options, size_t size);
#define brisk_convert_options_init(options) brisk_convert_options_init_sized((options), sizeof(*(options)))
/* Converts a Hugging Face model directory (config.json, model.safetensors or
 * shards with model.safetensors.index.json, tokenizer.json; Llama, Mistral
 * and Qwen2) to a GGUF file. */
BRISK_API brisk_status brisk_convert_hf(const char *hf_dir, const char *out_path,
                                        const brisk_convert_options *options);
/* Converts a llama2.c checkpoint (legacy version-0 .bin) and its tokenizer
 * .bin to a GGUF file laid out as llama.cpp's convert-llama2c-to-ggml does. */
BRISK_API brisk_status brisk_convert_llama2c(const char *model_path, const char *tokenizer_path,
                                             const char *out_path, const brisk_convert_options *options);

/* One difference found by brisk_verify: where ("tensor 'blk.0.attn_q.weight'",
 * "metadata", "padding", "manifest", a bundle segment) and what differs. */
typedef void (*brisk_mismatch_fn)(void *user_data, const char *where, const char *detail);

typedef struct brisk_verify_options {
  uint32_t struct_size;
  uint32_t n_threads; /* 0: all cores */
  brisk_progress_fn progress_fn;
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  brisk_mismatch_fn mismatch_fn; /* may be NULL */
  void *mismatch_user_data;
  /* Reading a GGUF, as in brisk_convert_options. A bundle is streamed,
   * never mapped or held, so they change nothing there. Default 0.
   * Added in ABI 0.6. */
  int64_t mlock;
  int64_t no_mmap;
} brisk_verify_options;

BRISK_API void brisk_verify_options_init_sized(brisk_verify_options *options, size_t size);
#define brisk_verify_options_init(options) brisk_verify_options_init_sized((options), sizeof(*(options)))
/* Recomputes the checksums of a GGUF file (against its embedded manifest)
 * or of a .brisk bundle (decompressing it without writing anything).
 * BRISK_OK: everything matches. BRISK_ERR_CHECKSUM: something differs; each
 * difference goes to mismatch_fn and brisk_last_error() names the first.
 * BRISK_ERR_NOT_FOUND: a GGUF without a manifest (see brisk_add_manifest).
 * bytes_checked (may be NULL) receives the number of bytes hashed. */
BRISK_API brisk_status brisk_verify(const char *path, const brisk_verify_options *options,
                                    uint64_t *bytes_checked);
/* Rewrites a GGUF with a fresh manifest to out_path (NULL: in place). A file
 * whose existing manifest does not verify is refused (BRISK_ERR_CHECKSUM). */
BRISK_API brisk_status brisk_add_manifest(const char *path, const char *out_path,
                                          const brisk_verify_options *options);

typedef struct brisk_pack_options {
  uint32_t struct_size;
  int32_t level;         /* zstd level, 1..22. Default 3 */
  int32_t long_distance; /* zstd long-distance matching: -1 auto (default:
                            only when some tensor's data is stored twice,
                            farther apart than the level's window), 0 off, 1 on */
  uint32_t n_threads;    /* 0: all cores */
  brisk_progress_fn progress_fn;
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  brisk_log_fn log_fn; /* warnings; may be NULL */
  void *log_user_data;
  /* Reading the GGUF brisk_pack compresses, as in brisk_convert_options;
   * brisk_unpack streams its bundle, so they change nothing there.
   * Default 0. Added in ABI 0.6. */
  int64_t mlock;
  int64_t no_mmap;
} brisk_pack_options;

BRISK_API void brisk_pack_options_init_sized(brisk_pack_options *options, size_t size);
#define brisk_pack_options_init(options) brisk_pack_options_init_sized((options), sizeof(*(options)))
/* Compresses a GGUF into a .brisk bundle. A GGUF with a manifest is verified
 * first (BRISK_ERR_CHECKSUM if damaged); one without gets bundle checksums only. */
BRISK_API brisk_status brisk_pack(const char *gguf_path, const char *bundle_path,
                                  const brisk_pack_options *options);
/* Decompresses a bundle, verifying every checksum as it streams; the GGUF
 * appears at gguf_path only if all of them match (level and long_distance
 * are not used). A damaged or truncated bundle: BRISK_ERR_CHECKSUM or
 * BRISK_ERR_BAD_FORMAT, and no output file. */
BRISK_API brisk_status brisk_unpack(const char *bundle_path, const char *gguf_path,
                                    const brisk_pack_options *options);
/* ==== end of conversion, checksums and bundles ========================= */

/* ==== quantization, calibration and quality (branch calib) =========== */


/* Called once per tensor of the output, in file order, as it is written:
 * types are brisk_type values (GGUF ids); `why` says how the type was chosen
 * ("default", "mixture rule", "override REGEX", "recipe", "fallback: ..."). */
typedef void (*brisk_quantize_tensor_fn)(void *user_data, const char *name, int32_t src_type,
                                         int32_t type, uint64_t n_elements, uint64_t bytes,
                                         const char *why);

typedef struct brisk_quantize_options {
  uint32_t struct_size;
  /* Preset: "q8_0" (default), "q4_0", "q4_1", "q4_k_m", "q4_k_s", "q6_k",
   * "f16", "bf16", "q4_k", "q5_k", "mixed-4-8". */
  const char *type;
  /* Per-tensor overrides "REGEX=TYPE" (e.g. "attn_.*=q8_0"); the first
   * pattern found in a tensor's name wins. */
  const char *const *tensor_types;
  size_t n_tensor_types;
  uint32_t n_threads; /* 0: all cores */
  brisk_progress_fn progress_fn;
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  brisk_log_fn log_fn; /* warnings (fallbacks, ...); may be NULL */
  void *log_user_data;
  brisk_quantize_tensor_fn tensor_fn; /* may be NULL */
  void *tensor_user_data;
  /* Calibration statistics from brisk_calibrate (or a llama-imatrix GGUF):
   * every 4- to 8-bit matrix is quantized weighted by its mean squared
   * activations. NULL (default): no calibration; the fields below need it. */
  const char *calibration;
  /* Automatic per-tensor precision: choose each matrix's type among Q4_0,
   * Q4_K, Q5_K, Q6_K, Q8_0 to minimise the predicted damage (KL divergence)
   * with the output file at most target_size bytes, or target_bpw bits per
   * weight over all tensors. 0: off (the preset's recipe). */
  uint64_t target_size;
  double target_bpw;
  /* Non-zero: rank tensors by importance-weighted error only, without
   * measuring KL on the calibration text (faster, less exact). Default 0. */
  int32_t sensitivity_proxy_only;
  uint32_t sensitivity_tokens; /* calibration tokens for the KL measurement. 0: 1024 */
  /* Write OUT.report.md and OUT.report.json (data hashes, recipe, size,
   * PPL and KL against the input on held-out text). Default 1. */
  int32_t report;
  /* Evaluate on this text instead of the held-out split (refused if it is
   * calibration data, unless eval_on_calib). */
  const char *eval_file;
  /* Non-zero: evaluate on the calibration text; the report says so loudly. */
  int32_t eval_on_calib;
  uint32_t eval_max_chunks; /* 0: 64; UINT32_MAX: all */
  /* Added in ABI 0.4. The calibration data files (as given to brisk_calibrate)
   * for the KL measurement and the held-out evaluation; they must hash as the
   * statistics record. Paths recorded inside a statistics file are never
   * opened on its word: with none given here, sensitivity falls back to
   * importance-weighted error and the report has no held-out figures. */
  const char *const *calibration_data;
  size_t n_calibration_data;
  /* Reading the input model, as in brisk_convert_options (with calibration,
   * the input is opened both to run and to quantize: mlock locks it twice,
   * no_mmap reads it twice). Default 0. Added in ABI 0.6. */
  int64_t mlock;
  int64_t no_mmap;
} brisk_quantize_options;

BRISK_API void brisk_quantize_options_init_sized(brisk_quantize_options *options, size_t size);
#define brisk_quantize_options_init(options) brisk_quantize_options_init_sized((options), sizeof(*(options)))
/* Quantizes a GGUF model (F32/F16/BF16, or quantized with a warning) into a
 * new GGUF file, written atomically. options may be NULL (q8_0). */
BRISK_API brisk_status brisk_quantize(const char *input_path, const char *output_path,
                                      const brisk_quantize_options *options);

/* ---- calibration ------------------------------------------------------ */
typedef struct brisk_calibrate_options {
  uint32_t struct_size;
  /* Text files, JSONL files (.jsonl/.ndjson: one object per line) or
   * directories of them (every file, sorted by path). */
  const char *const *data_paths;
  size_t n_data_paths;
  const char *jsonl_field; /* the text field of JSONL records. Default "text" */
  uint32_t n_ctx;          /* tokens per chunk. 0: min(training context, 512) */
  uint64_t max_tokens;     /* token budget (evenly spaced chunks). 0: all */
  /* Share of each file (its tail, cut at a line or record) kept out of the
   * statistics for evaluation. Default 0.1. */
  float holdout;
  int32_t resume; /* non-zero: continue the partial file at output_path */
  uint32_t n_threads;
  uint32_t checkpoint_seconds; /* partial file saved this often. 0: 60 */
  brisk_progress_fn progress_fn; /* stage "calibrate", units: tokens */
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  brisk_log_fn log_fn;
  void *log_user_data;
  /* Loading the model, as brisk_model_options' fields of the same names.
   * Default 0. Added in ABI 0.6. */
  int64_t mlock;
  int64_t no_mmap;
} brisk_calibrate_options;

BRISK_API void brisk_calibrate_options_init_sized(brisk_calibrate_options *options, size_t size);
#define brisk_calibrate_options_init(options) brisk_calibrate_options_init_sized((options), sizeof(*(options)))
/* Runs the model (F32/F16 preferred) over the data and writes activation
 * statistics to output_path (GGUF, llama.cpp imatrix layout plus
 * brisk.calibration.* keys; docs/calibration.md). When cancelled, the
 * statistics so far are saved as a partial file (resume it with `resume`)
 * and BRISK_ERR_CANCELLED is returned. */
BRISK_API brisk_status brisk_calibrate(const char *model_path, const char *output_path,
                                       const brisk_calibrate_options *options);

/* ---- perplexity and KL divergence ------------------------------------ */
/* Chunking of the text (see brisk_perplexity). */
enum {
  BRISK_PPL_CHUNK_REPLACE_BOS = 0, /* llama-perplexity: tokenize with BOS, chunks of n_ctx, first token := BOS */
  BRISK_PPL_CHUNK_PREPEND_BOS = 1  /* tokenize without BOS, chunks of n_ctx-1 tokens evaluated as [BOS]+chunk */
};
enum {
  BRISK_PPL_SCORE_SECOND_HALF = 0, /* predictions at positions n_ctx/2 .. n_ctx-2 (llama-perplexity) */
  BRISK_PPL_SCORE_ALL = 1          /* every prediction of the chunk */
};

typedef struct brisk_ppl_options {
  uint32_t struct_size;
  uint32_t n_ctx;      /* tokens per chunk. 0: min(training context, 512) */
  uint32_t max_chunks; /* 0: all */
  int32_t chunking;    /* BRISK_PPL_CHUNK_*. Default REPLACE_BOS */
  int32_t scoring;     /* BRISK_PPL_SCORE_*. Default SECOND_HALF */
  int64_t max_chars;   /* only the first N UTF-8 characters of the text; < 0 (default): all */
  uint32_t n_threads;  /* 0: one per physical core */
  /* Non-zero: with max_chunks, take evenly spaced chunks over the whole
   * text instead of the first ones (a representative sample). Default 0. */
  int32_t spread_chunks;
  /* File of the base model's log-probabilities at the scored positions
   * (float32): written when base_model is given, read in its place when
   * base_model is NULL (as llama-perplexity --kl-divergence-base). NULL: none. */
  const char *base_cache;
  brisk_progress_fn progress_fn; /* stage "ppl", units: chunks */
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
  /* KV cache types (brisk_type) of the evaluated model; the base model keeps
   * its default, so a KL against the same file measures the cache's cost.
   * Default BRISK_TYPE_AUTO (the session default). Added in ABI 0.2. */
  int32_t cache_type_k;
  int32_t cache_type_v;
} brisk_ppl_options;

typedef struct brisk_ppl_result brisk_ppl_result;

BRISK_API void brisk_ppl_options_init_sized(brisk_ppl_options *options, size_t size);
#define brisk_ppl_options_init(options) brisk_ppl_options_init_sized((options), sizeof(*(options)))
/* Perplexity of `model` on text (UTF-8, len bytes); with base_model (may be
 * NULL) also KL(base || model) per scored position, same-top-token rate and
 * the PPL difference, with standard errors as llama-perplexity prints them. */
BRISK_API brisk_status brisk_perplexity(const brisk_model *model, const brisk_model *base_model,
                                        const char *text, size_t len, const brisk_ppl_options *options,
                                        brisk_ppl_result **out_result);
/* Reading the result: brisk_ppl_result_value/_json in brisk/brisk_experimental.h. */
BRISK_API void brisk_ppl_result_free(brisk_ppl_result *result);

/* ---- comparing two models' greedy outputs ------------------------------ */
typedef struct brisk_compare_options {
  uint32_t struct_size;
  int32_t n_predict;   /* tokens generated per prompt and model. Default 64 */
  uint32_t n_ctx;      /* 0: min(training context, 4096) */
  uint32_t n_threads;  /* 0: one per physical core */
  int32_t stop_at_eos; /* Default 1 */
  brisk_progress_fn progress_fn; /* stage "compare", units: prompts */
  void *progress_user_data;
  brisk_abort_fn abort_fn;
  void *abort_user_data;
} brisk_compare_options;

typedef struct brisk_compare_result brisk_compare_result;

BRISK_API void brisk_compare_options_init_sized(brisk_compare_options *options, size_t size);
#define brisk_compare_options_init(options) brisk_compare_options_init_sized((options), sizeof(*(options)))
/* Generates greedily from both models for each prompt (with BOS) and compares. */
BRISK_API brisk_status brisk_compare(const brisk_model *model_a, const brisk_model *model_b,
                                     const char *const *prompts, size_t n_prompts,
                                     const brisk_compare_options *options, brisk_compare_result **out_result);
/* Reading the result: brisk_compare_result_value/_json in brisk/brisk_experimental.h. */
BRISK_API void brisk_compare_result_free(brisk_compare_result *result);

/* ==== end of the calib section ======================================== */

/* ==== batch runs, system checks, loading options, saved state (branch batch) ==== */

/* The model file's identity as 32 hex digits (NUL included in *needed): an
 * XXH3-128 of its header (metadata and tensor table), its size and 64 blocks
 * sampled over the tensor data. Saved states and resumable batch outputs are
 * tied to it. Added in ABI 0.4. */
BRISK_API brisk_status brisk_model_identity(const brisk_model *model, char *buf, size_t cap, size_t *needed);

/* ---- saved state: continue a sequence in another process ---------------
 * A state file holds a context's tokens, its KV cache rows, the logits after
 * its last token and (for sessions, when given) the sampler's state, with an
 * XXH3-128 checksum. It is tied to the model (brisk_model_identity) and the
 * KV cache types: loading it with another model, other cache types or a
 * too-small context fails with BRISK_ERR_INVALID_ARGUMENT (or
 * BRISK_ERR_CONTEXT_FULL) naming the difference; a damaged file with
 * BRISK_ERR_CHECKSUM; a file of a newer format than the library reads with
 * BRISK_ERR_UNSUPPORTED. A refused load changes nothing. Files are written
 * atomically (temporary, then rename). Libraries of ABI 0.4-0.6 read the
 * files of idle sequences and sessions that this one writes, and refuse
 * (BRISK_ERR_BAD_FORMAT) those of generating or finished sequences and of
 * samplers with presence or frequency penalties, which they did not save. */

/* Saves a sequence that is idle (its tokens evaluated, not generating; e.g.
 * after brisk_engine_step has read its prompt). Added in ABI 0.4.
 * Since ABI 0.7 also one that is generating, between brisk_engine_step
 * calls (not inside a token callback): the file then also holds the
 * generation (its sampler's settings, random state and penalty window, the
 * tokens generated so far, max_tokens, stop_at_eos, text not yet passed to
 * the callback), which brisk_sequence_resume continues; and one that has
 * finished: its cache went with its slot, so the file holds its text (the
 * last token generated at max_tokens included, as a session keeps it),
 * which loading evaluates again. A sequence still reading queued tokens
 * (BRISK_SEQ_PREFILL) is refused. */
BRISK_API brisk_status brisk_sequence_save_state(const brisk_sequence *sequence, const char *path);
/* A new sequence holding the saved context; continue it with
 * brisk_sequence_add_tokens / brisk_sequence_generate. Added in ABI 0.4.
 * Since ABI 0.7: tokens the file holds without their cache (a generating
 * sequence's last sampled token, a finished sequence's text) are queued,
 * so the sequence starts in BRISK_SEQ_PREFILL and steps evaluate them; a
 * saved generation is kept for brisk_sequence_resume (brisk_sequence_generated
 * gives its tokens so far) until tokens are added, the sequence is
 * truncated or brisk_sequence_generate starts another. */
BRISK_API brisk_status brisk_sequence_load_state(brisk_engine *engine, const char *path,
                                                 brisk_sequence **out_sequence);
/* Continues the generation of a sequence loaded from a file saved while
 * generating: the same sampler state, the rest of its max_tokens and its
 * stop_at_eos, so it produces the tokens it would have produced had it not
 * stopped (with the same cache types, threads and kernel plan, and the
 * same company in each step: kernels sum in other orders for other batch
 * widths). Callbacks cannot be saved, so options gives token_fn and
 * token_user_data again (options may be NULL: no callback); its max_tokens
 * and stop_at_eos are not used. Tokens then come from brisk_engine_step as
 * after brisk_sequence_generate; if steps already evaluated the loaded
 * sequence, its next token is sampled inside this call. A sequence with no
 * saved generation gives BRISK_ERR_INVALID_ARGUMENT. Added in ABI 0.7. */
BRISK_API brisk_status brisk_sequence_resume(brisk_sequence *sequence, const brisk_generate_options *options);
/* Saves a session's context. Sessions do not keep their tokens, so the
 * caller passes the n_tokens it evaluated (n_tokens must equal the position).
 * sampler (may be NULL) adds its state (repetition window, random
 * generator), so that sampling continues exactly as it would have. The
 * session must have logits (not just truncated). Added in ABI 0.4. */
BRISK_API brisk_status brisk_session_save_state(const brisk_session *session, const brisk_sampler *sampler,
                                                const int32_t *tokens, size_t n_tokens, const char *path);
/* Replaces the session's context with a saved one (and the sampler's state,
 * when sampler is not NULL and the file has one). Added in ABI 0.4. A file
 * of a generating or finished engine sequence (ABI 0.7) is refused with
 * BRISK_ERR_INVALID_ARGUMENT: load it with brisk_sequence_load_state. */
BRISK_API brisk_status brisk_session_load_state(brisk_session *session, brisk_sampler *sampler, const char *path);
/* The tokens a state file holds (it is read and its checksum verified; no
 * model needed), those saved without their cache included. Added in ABI 0.4. */
BRISK_API brisk_status brisk_state_file_tokens(const char *path, int32_t *tokens, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* BRISK_BRISK_H */
