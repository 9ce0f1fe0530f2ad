/* SPDX-License-Identifier: MIT */
/*
 * brisk_experimental.h: calls of libbrisk that may still change (C99).
 *
 * Including this header is the opt-in; brisk.h never includes it. The
 * promise here is weaker than brisk.h's:
 *  - A call here may change or go away in any ABI minor release. It never
 *    changes under the same name: a changed call is removed and its
 *    replacement gets a new name, so an older program fails to link or load
 *    instead of calling it with the wrong arguments.
 *  - String keys and JSON fields of results may be added, renamed or
 *    dropped in any release; ask for what you need and handle
 *    BRISK_ERR_NOT_FOUND.
 *  - The symbols are exported and versioned like the stable ones (the node
 *    of the ABI minor that added them), but the ABI check in CI does not
 *    hold them fixed (abi/suppressions.txt).
 * Everything else (status codes, buffers, threads, callbacks) follows the
 * rules at the top of brisk.h.
 */
#ifndef BRISK_BRISK_EXPERIMENTAL_H
#define BRISK_BRISK_EXPERIMENTAL_H

#include "brisk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- engine ----------------------------------------------------------- */
/* The memory read bandwidth the engine's threads reach, the ceiling for
 * decoding (which reads every weight once per step: a model of
 * brisk_model_file_size() bytes decodes at most gb_per_s * 1e9 / size steps
 * per second). Each pass streams a fresh buffer of `bytes` (0: 512 MiB; it
 * should be far larger than the last-level cache), split across the
 * threads, in each of a few read patterns; the fastest pattern's median
 * over `passes` (0: 8) goes to *out_median_gb_per_s,
 * the extremes to *out_min / *out_max (either may be NULL), in 1e9 bytes/s.
 * The buffer is released before the call returns. Like brisk_engine_step,
 * one thread at a time per engine. Added in ABI 0.3. */
BRISK_API brisk_status brisk_engine_read_bandwidth(brisk_engine *engine, uint64_t bytes, uint32_t passes,
                                                   double *out_median_gb_per_s, double *out_min_gb_per_s,
                                                   double *out_max_gb_per_s);

/* ---- results of brisk_perplexity -------------------------------------- */
/* A figure by name: "ppl", "ppl_error", "mean_nll", "mean_nll_error", "chunks",
 * "scored_tokens", "text_tokens"; with a base: "base_ppl", "base_ppl_error",
 * "kld_mean", "kld_error", "kld_median", "kld_p99", "kld_p99.9", "kld_max",
 * "same_top_pct", "same_top_error", "delta_ppl", "delta_ppl_error",
 * "ln_ppl_ratio", "ln_ppl_ratio_error". BRISK_ERR_NOT_FOUND otherwise. */
BRISK_API brisk_status brisk_ppl_result_value(const brisk_ppl_result *result, const char *key, double *out_value);
/* The whole result as a JSON object (documented in docs/calibration.md). */
BRISK_API brisk_status brisk_ppl_result_json(const brisk_ppl_result *result, char *buf, size_t cap,
                                             size_t *needed);

/* ---- results of brisk_compare ----------------------------------------- */
/* "prompts", "identical_pct", "diverging", "mean_first_divergence_token". */
BRISK_API brisk_status brisk_compare_result_value(const brisk_compare_result *result, const char *key,
                                                  double *out_value);
/* Per prompt: identical, first divergence (tokens and characters), both
 * texts and token ids; plus the totals. */
BRISK_API brisk_status brisk_compare_result_json(const brisk_compare_result *result, char *buf, size_t cap,
                                                 size_t *needed);

/* ---- system checks (`brisk doctor`) ------------------------------------
 * Added in ABI 0.4; experimental: the checks and their JSON may change. */
typedef struct brisk_doctor_options {
  uint32_t struct_size;
  /* Prefix for every /proc and /sys read ("/tmp/fake" reads
   * /tmp/fake/proc/meminfo); NULL or "": this machine. */
  const char *root;
  /* A model to check (memory plan, disk, read speed, the kernel plan a
   * load would use); NULL: none. */
  const char *model_path;
  uint32_t n_threads;  /* threads for the measurements; 0: brisk's default */
  /* Seconds of sustained load in the throttling test. Default 20; 0 skips it. */
  double load_seconds;
  /* Non-zero (default): also measure memory bandwidth, how fast new memory
   * becomes usable, the model's read speed and throttling, and ask the OS
   * for AMX; 0: only read files. */
  int32_t measure;
  brisk_progress_fn progress_fn; /* stage "doctor", units: seconds of load; may be NULL */
  void *progress_user_data;
} brisk_doctor_options;

typedef struct brisk_doctor_report brisk_doctor_report;

/* Added in ABI 0.4. */
BRISK_API void brisk_doctor_options_init_sized(brisk_doctor_options *options, size_t size);
#define brisk_doctor_options_init(options) brisk_doctor_options_init_sized((options), sizeof(*(options)))
/* Runs the checks. Added in ABI 0.4. */
BRISK_API brisk_status brisk_doctor_run(const brisk_doctor_options *options, brisk_doctor_report **out_report);
/* The report as JSON: {"threads": the -t brisk chooses, "checks": [{"check",
 * "status" ("ok", "warn", "fail", "info"), "value", "advice"}...], "ok",
 * "warn", "fail", "info": counts}. Added in ABI 0.4. */
BRISK_API brisk_status brisk_doctor_report_json(const brisk_doctor_report *report, char *buf, size_t cap,
                                                size_t *needed);
/* Added in ABI 0.4. */
BRISK_API void brisk_doctor_report_free(brisk_doctor_report *report);

#ifdef __cplusplus
}
#endif
#endif /* BRISK_BRISK_EXPERIMENTAL_H */
