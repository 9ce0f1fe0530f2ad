// SPDX-License-Identifier: MIT

package brisk

// Quantization, calibration and the quality tools (perplexity, KL
// divergence, greedy comparison). Like the file toolchain, every call takes
// a context that cancels it.

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// TensorInfo describes one tensor of Quantize's output as it is written.
type TensorInfo struct {
	Name          string
	SrcType, Type Type // input and output types (GGUF type ids)
	Elements      uint64
	Bytes         uint64
	// Why says how the type was chosen: "default", "mixture rule",
	// "override REGEX", "recipe", "fallback: ...".
	Why string
}

// QuantizeOptions are the settings of Quantize. Start from
// DefaultQuantizeOptions(); nil means the defaults.
type QuantizeOptions struct {
	// Preset (brisk_quantize_options.type): "q8_0", "q4_0", "q4_1",
	// "q4_k_m", "q4_k_s", "q6_k", "f16", "bf16", "q4_k", "q5_k", "mixed-4-8".
	Preset string
	// TensorTypes are per-tensor overrides "REGEX=TYPE" (e.g.
	// "attn_.*=q8_0"); the first pattern found in a tensor's name wins.
	TensorTypes []string
	NThreads    uint32 // 0: all cores
	// Calibration is a statistics file from Calibrate (or a llama-imatrix
	// GGUF); "": none. TargetSize, TargetBPW and the evaluation need it.
	Calibration string
	// TargetSize (bytes of the output file) or TargetBPW (bits per weight):
	// each matrix's type is chosen to minimise the predicted damage within
	// the budget. 0: off (the preset's recipe).
	TargetSize uint64
	TargetBPW  float64
	// SensitivityProxyOnly ranks tensors by weighted error alone, without
	// measuring KL on the calibration text (faster, less exact).
	SensitivityProxyOnly bool
	SensitivityTokens    uint32 // calibration tokens for the KL measurement; 0: 1024
	// Report writes OUT.report.md and OUT.report.json (with calibration).
	Report        bool
	EvalFile      string // evaluate on this text instead of the held-out split
	EvalOnCalib   bool   // evaluate on the calibration text (flagged in the report)
	EvalMaxChunks uint32 // 0: 64; math.MaxUint32: all
	// CalibrationData are the calibration data files (as given to
	// Calibrate) for the KL measurement and the held-out evaluation; they
	// must hash as the statistics record (ErrInvalidArgument otherwise).
	// Paths recorded in a statistics file are never opened on its word:
	// with none, sensitivity falls back to weighted error and the report
	// has no held-out figures.
	CalibrationData []string
	// Reading the input model (with a calibration it is opened twice, to
	// run and to quantize): Mlock locks it in RAM (ErrOutOfMemory naming
	// RLIMIT_MEMLOCK when the OS refuses); NoMmap reads it into anonymous
	// memory instead of mapping it.
	Mlock, NoMmap bool
	OnProgress    func(Progress)
	Log           func(level LogLevel, message string)
	OnTensor      func(TensorInfo)
}

// DefaultQuantizeOptions gives brisk_quantize_options_init's defaults.
func DefaultQuantizeOptions() QuantizeOptions {
	var c C.brisk_quantize_options
	C.brisk_go_quantize_options_init(&c)
	o := QuantizeOptions{
		NThreads: uint32(c.n_threads), TargetSize: uint64(c.target_size), TargetBPW: float64(c.target_bpw),
		SensitivityProxyOnly: c.sensitivity_proxy_only != 0, SensitivityTokens: uint32(c.sensitivity_tokens),
		Report: c.report != 0, EvalOnCalib: c.eval_on_calib != 0, EvalMaxChunks: uint32(c.eval_max_chunks),
		Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0,
	}
	if c._type != nil {
		o.Preset = C.GoString(c._type)
	}
	return o
}

// Quantize writes a quantized copy of a GGUF model (F32/F16/BF16 preferred)
// to outputPath, atomically. opts may be nil (q8_0).
func Quantize(ctx context.Context, inputPath, outputPath string, opts *QuantizeOptions) error {
	if opts == nil {
		d := DefaultQuantizeOptions()
		opts = &d
	}
	cin, cout := cstr(inputPath), cstr(outputPath)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	var c C.brisk_quantize_options
	C.brisk_go_quantize_options_init(&c)
	if opts.Preset != "" {
		c._type = cstr(opts.Preset)
		defer C.free(unsafe.Pointer(c._type))
	}
	tt, freeTT := cStrings(opts.TensorTypes)
	defer freeTT()
	c.tensor_types, c.n_tensor_types = tt, C.size_t(len(opts.TensorTypes))
	c.n_threads = C.uint32_t(opts.NThreads)
	c.calibration = optString(opts.Calibration)
	defer C.free(unsafe.Pointer(c.calibration))
	c.target_size = C.uint64_t(opts.TargetSize)
	c.target_bpw = C.double(opts.TargetBPW)
	c.sensitivity_proxy_only = cbool(opts.SensitivityProxyOnly)
	c.sensitivity_tokens = C.uint32_t(opts.SensitivityTokens)
	c.report = cbool(opts.Report)
	c.eval_file = optString(opts.EvalFile)
	defer C.free(unsafe.Pointer(c.eval_file))
	c.eval_on_calib = cbool(opts.EvalOnCalib)
	c.eval_max_chunks = C.uint32_t(opts.EvalMaxChunks)
	cd, freeCD := cStrings(opts.CalibrationData)
	defer freeCD()
	c.calibration_data, c.n_calibration_data = cd, C.size_t(len(opts.CalibrationData))
	c.mlock, c.no_mmap = C.int64_t(cbool(opts.Mlock)), C.int64_t(cbool(opts.NoMmap))
	k := &hooks{progress: opts.OnProgress, log: opts.Log, tensor: opts.OnTensor}
	return runHooked(ctx, "quantize "+inputPath, k,
		func(h C.uintptr_t, which C.uint) { C.brisk_go_quantize_hooks(&c, h, which) },
		func() C.brisk_status { return C.brisk_quantize(cin, cout, &c) })
}

// CalibrateOptions are the settings of Calibrate. Start from
// DefaultCalibrateOptions(); nil means the defaults.
type CalibrateOptions struct {
	JSONLField string // text field of JSONL records; "": "text"
	NCtx       uint32 // tokens per chunk; 0: min(training context, 512)
	MaxTokens  uint64 // token budget (evenly spaced chunks); 0: all
	// Holdout is the share of each file (its tail) kept out of the
	// statistics for evaluation.
	Holdout float32
	// Resume continues the partial file a cancelled Calibrate left at the
	// output path.
	Resume            bool
	NThreads          uint32
	CheckpointSeconds uint32 // partial file saved this often; 0: 60
	// Loading the model: Mlock locks it in RAM (ErrOutOfMemory naming
	// RLIMIT_MEMLOCK when the OS refuses); NoMmap reads it into anonymous
	// memory instead of mapping it.
	Mlock, NoMmap bool
	OnProgress    func(Progress)
	Log           func(level LogLevel, message string)
}

// DefaultCalibrateOptions gives brisk_calibrate_options_init's defaults.
func DefaultCalibrateOptions() CalibrateOptions {
	var c C.brisk_calibrate_options
	C.brisk_go_calibrate_options_init(&c)
	o := CalibrateOptions{
		NCtx: uint32(c.n_ctx), MaxTokens: uint64(c.max_tokens), Holdout: float32(c.holdout),
		Resume: c.resume != 0, NThreads: uint32(c.n_threads), CheckpointSeconds: uint32(c.checkpoint_seconds),
		Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0,
	}
	if c.jsonl_field != nil {
		o.JSONLField = C.GoString(c.jsonl_field)
	}
	return o
}

// Calibrate runs the model over data (text files, JSONL files or
// directories of them) and writes activation statistics to outputPath, for
// QuantizeOptions.Calibration. Cancelled, it saves what it has as a partial
// file and returns ErrCancelled; CalibrateOptions.Resume continues it.
func Calibrate(ctx context.Context, modelPath, outputPath string, data []string, opts *CalibrateOptions) error {
	if opts == nil {
		d := DefaultCalibrateOptions()
		opts = &d
	}
	cmodel, cout := cstr(modelPath), cstr(outputPath)
	defer C.free(unsafe.Pointer(cmodel))
	defer C.free(unsafe.Pointer(cout))
	var c C.brisk_calibrate_options
	C.brisk_go_calibrate_options_init(&c)
	paths, freePaths := cStrings(data)
	defer freePaths()
	c.data_paths, c.n_data_paths = paths, C.size_t(len(data))
	if opts.JSONLField != "" {
		c.jsonl_field = cstr(opts.JSONLField)
		defer C.free(unsafe.Pointer(c.jsonl_field))
	}
	c.n_ctx = C.uint32_t(opts.NCtx)
	c.max_tokens = C.uint64_t(opts.MaxTokens)
	c.holdout = C.float(opts.Holdout)
	c.resume = cbool(opts.Resume)
	c.n_threads = C.uint32_t(opts.NThreads)
	c.checkpoint_seconds = C.uint32_t(opts.CheckpointSeconds)
	c.mlock, c.no_mmap = C.int64_t(cbool(opts.Mlock)), C.int64_t(cbool(opts.NoMmap))
	k := &hooks{progress: opts.OnProgress, log: opts.Log}
	return runHooked(ctx, "calibrate "+modelPath, k,
		func(h C.uintptr_t, which C.uint) { C.brisk_go_calibrate_hooks(&c, h, which) },
		func() C.brisk_status { return C.brisk_calibrate(cmodel, cout, &c) })
}

// ---- perplexity -------------------------------------------------------------------

// PPLChunking says how Perplexity cuts the text into chunks.
type PPLChunking int32

const (
	// ChunkReplaceBOS: tokenize with BOS, chunks of NCtx tokens, the first
	// token of each replaced by BOS (llama-perplexity).
	ChunkReplaceBOS PPLChunking = C.BRISK_PPL_CHUNK_REPLACE_BOS
	// ChunkPrependBOS: tokenize without BOS, chunks of NCtx-1 tokens
	// evaluated after a BOS.
	ChunkPrependBOS PPLChunking = C.BRISK_PPL_CHUNK_PREPEND_BOS
)

// PPLScoring says which predictions of a chunk Perplexity scores.
type PPLScoring int32

const (
	ScoreSecondHalf PPLScoring = C.BRISK_PPL_SCORE_SECOND_HALF // positions NCtx/2 .. NCtx-2 (llama-perplexity)
	ScoreAll        PPLScoring = C.BRISK_PPL_SCORE_ALL         // every prediction
)

// PerplexityOptions are the settings of Model.Perplexity. Start from
// DefaultPerplexityOptions(); nil means the defaults.
type PerplexityOptions struct {
	NCtx      uint32 // tokens per chunk; 0: min(training context, 512)
	MaxChunks uint32 // 0: all
	Chunking  PPLChunking
	Scoring   PPLScoring
	MaxChars  int64  // only the first N characters of the text; < 0: all
	NThreads  uint32 // 0: one per physical core
	// SpreadChunks takes MaxChunks evenly spaced chunks over the whole text.
	SpreadChunks bool
	// BaseCache is a file of the base model's log-probabilities: written
	// when a base model is given, read in its place when base is nil.
	BaseCache string
	// KV cache types of the evaluated model (TypeAuto: the session default).
	CacheTypeK, CacheTypeV Type
	OnProgress             func(Progress)
}

// DefaultPerplexityOptions gives brisk_ppl_options_init's defaults.
func DefaultPerplexityOptions() PerplexityOptions {
	var c C.brisk_ppl_options
	C.brisk_go_ppl_options_init(&c)
	return PerplexityOptions{
		NCtx: uint32(c.n_ctx), MaxChunks: uint32(c.max_chunks), Chunking: PPLChunking(c.chunking),
		Scoring: PPLScoring(c.scoring), MaxChars: int64(c.max_chars), NThreads: uint32(c.n_threads),
		SpreadChunks: c.spread_chunks != 0, CacheTypeK: Type(c.cache_type_k), CacheTypeV: Type(c.cache_type_v),
	}
}

// PerplexityResult holds the figures of Model.Perplexity. Errors are
// standard errors, as llama-perplexity prints them.
type PerplexityResult struct {
	PPL, PPLError         float64
	MeanNLL, MeanNLLError float64
	Chunks                int
	ScoredTokens          int
	TextTokens            int
	// KL is set when a base model (or base cache) was given.
	KL *KLDivergence
	// JSON is the whole result as brisk reports it (docs/calibration.md).
	JSON string
}

// KLDivergence compares the model with its base at every scored position.
type KLDivergence struct {
	BasePPL, BasePPLError       float64
	Mean, MeanError             float64 // KL(base || model), nats per token
	Median, P99, P999, Max      float64
	SameTopPct, SameTopError    float64 // how often both pick the same top token
	DeltaPPL, DeltaPPLError     float64
	LnPPLRatio, LnPPLRatioError float64
}

// withModels runs f with both models' handles (b may be nil or equal a).
func withModels(op string, a, b *Model, f func(pa, pb *C.brisk_model) error) error {
	return a.with(op, func(pa *C.brisk_model) error {
		if b == nil {
			return f(pa, nil)
		}
		if b == a {
			return f(pa, pa)
		}
		return b.with(op, func(pb *C.brisk_model) error { return f(pa, pb) })
	})
}

// resultValues reads figures by name; a missing name is an error.
func resultValues(op string, get func(key *C.char, v *C.double) C.brisk_status, dst map[string]*float64) error {
	for key, p := range dst {
		ckey := cstr(key)
		var v C.double
		err := call(op+" "+key, func() C.brisk_status { return get(ckey, &v) })
		C.free(unsafe.Pointer(ckey))
		if err != nil {
			return err
		}
		*p = float64(v)
	}
	return nil
}

// Perplexity measures the model's perplexity on text; with base (may be nil)
// also the KL divergence from base, the same-top-token rate and the PPL
// difference.
func (m *Model) Perplexity(ctx context.Context, text string, base *Model, opts *PerplexityOptions) (*PerplexityResult, error) {
	if opts == nil {
		d := DefaultPerplexityOptions()
		opts = &d
	}
	var c C.brisk_ppl_options
	C.brisk_go_ppl_options_init(&c)
	c.n_ctx = C.uint32_t(opts.NCtx)
	c.max_chunks = C.uint32_t(opts.MaxChunks)
	c.chunking = C.int32_t(opts.Chunking)
	c.scoring = C.int32_t(opts.Scoring)
	c.max_chars = C.int64_t(opts.MaxChars)
	c.n_threads = C.uint32_t(opts.NThreads)
	c.spread_chunks = cbool(opts.SpreadChunks)
	c.base_cache = optString(opts.BaseCache)
	defer C.free(unsafe.Pointer(c.base_cache))
	c.cache_type_k = C.int32_t(opts.CacheTypeK)
	c.cache_type_v = C.int32_t(opts.CacheTypeV)
	ctext := cstr(text)
	defer C.free(unsafe.Pointer(ctext))

	const op = "perplexity"
	var res *C.brisk_ppl_result
	err := withModels(op, m, base, func(pm, pb *C.brisk_model) error {
		k := &hooks{progress: opts.OnProgress}
		return runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_ppl_hooks(&c, h, which) },
			func() C.brisk_status { return C.brisk_perplexity(pm, pb, ctext, C.size_t(len(text)), &c, &res) })
	})
	if err != nil {
		return nil, err
	}
	defer C.brisk_ppl_result_free(res)
	get := func(key *C.char, v *C.double) C.brisk_status { return C.brisk_ppl_result_value(res, key, v) }
	r := &PerplexityResult{}
	var chunks, scored, tokens float64
	if err := resultValues(op, get, map[string]*float64{
		"ppl": &r.PPL, "ppl_error": &r.PPLError, "mean_nll": &r.MeanNLL, "mean_nll_error": &r.MeanNLLError,
		"chunks": &chunks, "scored_tokens": &scored, "text_tokens": &tokens,
	}); err != nil {
		return nil, err
	}
	r.Chunks, r.ScoredTokens, r.TextTokens = int(chunks), int(scored), int(tokens)
	if base != nil || opts.BaseCache != "" {
		kl := &KLDivergence{}
		if err := resultValues(op, get, map[string]*float64{
			"base_ppl": &kl.BasePPL, "base_ppl_error": &kl.BasePPLError, "kld_mean": &kl.Mean, "kld_error": &kl.MeanError,
			"kld_median": &kl.Median, "kld_p99": &kl.P99, "kld_p99.9": &kl.P999, "kld_max": &kl.Max,
			"same_top_pct": &kl.SameTopPct, "same_top_error": &kl.SameTopError, "delta_ppl": &kl.DeltaPPL,
			"delta_ppl_error": &kl.DeltaPPLError, "ln_ppl_ratio": &kl.LnPPLRatio, "ln_ppl_ratio_error": &kl.LnPPLRatioError,
		}); err != nil {
			return nil, err
		}
		r.KL = kl
	}
	r.JSON, err = callText(op+" json", func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_ppl_result_json(res, buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ---- compare ----------------------------------------------------------------------

// CompareOptions are the settings of Compare. Start from
// DefaultCompareOptions(); nil means the defaults.
type CompareOptions struct {
	NPredict   int32  // tokens generated per prompt and model
	NCtx       uint32 // 0: min(training context, 4096)
	NThreads   uint32 // 0: one per physical core
	StopAtEOS  bool
	OnProgress func(Progress)
}

// DefaultCompareOptions gives brisk_compare_options_init's defaults.
func DefaultCompareOptions() CompareOptions {
	var c C.brisk_compare_options
	C.brisk_go_compare_options_init(&c)
	return CompareOptions{NPredict: int32(c.n_predict), NCtx: uint32(c.n_ctx), NThreads: uint32(c.n_threads),
		StopAtEOS: c.stop_at_eos != 0}
}

// CompareResult sums up Compare.
type CompareResult struct {
	Prompts      int
	IdenticalPct float64 // prompts whose greedy outputs are identical, in percent
	Diverging    int
	// MeanFirstDivergenceToken is the mean token index of the first
	// difference over the diverging prompts.
	MeanFirstDivergenceToken float64
	// JSON has the details per prompt: both texts and token ids, and where
	// they first differ.
	JSON string
}

// Compare generates greedily from both models for each prompt (with BOS)
// and compares the outputs.
func Compare(ctx context.Context, a, b *Model, prompts []string, opts *CompareOptions) (*CompareResult, error) {
	if opts == nil {
		d := DefaultCompareOptions()
		opts = &d
	}
	if b == nil {
		return nil, errorf("compare", StatusInvalidArgument, "two models are needed")
	}
	var c C.brisk_compare_options
	C.brisk_go_compare_options_init(&c)
	c.n_predict = C.int32_t(opts.NPredict)
	c.n_ctx = C.uint32_t(opts.NCtx)
	c.n_threads = C.uint32_t(opts.NThreads)
	c.stop_at_eos = cbool(opts.StopAtEOS)
	cprompts, freePrompts := cStrings(prompts)
	defer freePrompts()

	const op = "compare"
	var res *C.brisk_compare_result
	err := withModels(op, a, b, func(pa, pb *C.brisk_model) error {
		k := &hooks{progress: opts.OnProgress}
		return runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_compare_hooks(&c, h, which) },
			func() C.brisk_status {
				return C.brisk_compare(pa, pb, cprompts, C.size_t(len(prompts)), &c, &res)
			})
	})
	if err != nil {
		return nil, err
	}
	defer C.brisk_compare_result_free(res)
	r := &CompareResult{}
	var n, diverging float64
	if err := resultValues(op, func(key *C.char, v *C.double) C.brisk_status {
		return C.brisk_compare_result_value(res, key, v)
	}, map[string]*float64{
		"prompts": &n, "identical_pct": &r.IdenticalPct, "diverging": &diverging,
		"mean_first_divergence_token": &r.MeanFirstDivergenceToken,
	}); err != nil {
		return nil, err
	}
	r.Prompts, r.Diverging = int(n), int(diverging)
	r.JSON, err = callText(op+" json", func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_compare_result_json(res, buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
