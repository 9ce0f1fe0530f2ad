// SPDX-License-Identifier: MIT

package brisk

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// SessionOptions are the settings of Model.NewSession. Start from
// DefaultSessionOptions(); a nil *SessionOptions means the defaults.
type SessionOptions struct {
	NCtx     uint32 // context length; 0: the model's training context, at most 4096
	NThreads uint32 // worker threads; 0: one per physical core
	NBatch   uint32 // tokens per forward pass while reading a prompt
	// KV cache element types (TypeF32, TypeF16, TypeQ8_0, TypeQ4_0 or TypeAuto).
	CacheTypeK, CacheTypeV Type
	NoPin                  bool // do not pin worker threads to cores
	// PinCaller (with NoPin false) also pins the calling thread, which
	// computes as thread 0, to the first core while the session exists;
	// its CPU mask is given back when the session is closed on that thread.
	// Lock the goroutine to its thread (runtime.LockOSThread) to use it.
	PinCaller bool
	// MemoryBudget is the memory the session may plan for, in bytes; 0:
	// what the machine (its cgroup, MemAvailable) has available. Too small
	// a budget fails NewSession with ErrOutOfMemory and the numbers.
	MemoryBudget uint64
	// Abort is polled between forward-pass chunks and layers, on the
	// goroutine that called Eval or Generate; returning true cancels the call
	// (errors.Is(err, StatusCancelled)).
	Abort func() bool
}

// DefaultSessionOptions gives brisk_session_options_init's defaults.
func DefaultSessionOptions() SessionOptions {
	var c C.brisk_session_options
	C.brisk_go_session_options_init(&c)
	return SessionOptions{
		NCtx: uint32(c.n_ctx), NThreads: uint32(c.n_threads), NBatch: uint32(c.n_batch),
		CacheTypeK: Type(c.cache_type_k), CacheTypeV: Type(c.cache_type_v), NoPin: c.no_pin != 0,
		PinCaller: c.pin_caller != 0, MemoryBudget: uint64(c.memory_budget),
	}
}

// Session is one sequence with its own KV cache over a shared Model. It
// belongs to one goroutine at a time.
type Session struct {
	ptr     *C.brisk_session
	model   *Model
	nVocab  int
	abort   cgo.Handle
	panics  panicSlot // from Abort or a token callback, re-raised by the caller
	aborter *abortCallback
}

// NewSession creates a session on the model. opts may be nil.
func (m *Model) NewSession(opts *SessionOptions) (*Session, error) {
	p, err := m.acquire("create session")
	if err != nil {
		return nil, err
	}
	s := &Session{model: m, nVocab: m.NVocab()}
	var c C.brisk_session_options
	C.brisk_go_session_options_init(&c)
	if opts != nil {
		c.n_ctx = C.uint32_t(opts.NCtx)
		c.n_threads = C.uint32_t(opts.NThreads)
		c.n_batch = C.uint32_t(opts.NBatch)
		c.cache_type_k = C.int32_t(opts.CacheTypeK)
		c.cache_type_v = C.int32_t(opts.CacheTypeV)
		c.no_pin = cbool(opts.NoPin)
		c.pin_caller = cbool(opts.PinCaller)
		c.memory_budget = C.uint64_t(opts.MemoryBudget)
		if opts.Abort != nil {
			s.aborter = &abortCallback{fn: opts.Abort, panic: &s.panics}
			s.abort = cgo.NewHandle(s.aborter)
			C.brisk_go_session_abort(&c, C.uintptr_t(s.abort))
		}
	}
	err = call("create session", func() C.brisk_status { return C.brisk_session_create(p, &c, &s.ptr) })
	if err != nil {
		s.dropHandles()
		m.release()
		return nil, err
	}
	runtime.SetFinalizer(s, func(s *Session) { s.Close() })
	return s, nil
}

func (s *Session) dropHandles() {
	if s.abort != 0 {
		s.abort.Delete()
		s.abort = 0
	}
}

// Close frees the session (its KV cache and threads). Closing twice is a no-op.
func (s *Session) Close() error {
	if s.ptr == nil {
		return nil
	}
	C.brisk_session_free(s.ptr)
	s.ptr = nil
	s.dropHandles()
	s.model.release()
	runtime.SetFinalizer(s, nil)
	return nil
}

// run is call() on the session's handle, re-raising a panic from a callback.
func (s *Session) run(op string, f func(p *C.brisk_session) C.brisk_status) error {
	if s.ptr == nil {
		return closedError(op, "session")
	}
	err := call(op, func() C.brisk_status { return f(s.ptr) })
	runtime.KeepAlive(s)
	s.panics.rethrow()
	return err
}

// Reset forgets every token; the session starts again at position 0.
func (s *Session) Reset() error {
	return s.run("reset", func(p *C.brisk_session) C.brisk_status { return C.brisk_session_reset(p) })
}

// Truncate forgets the tokens from position on; evaluate at least one token
// before asking for logits again.
func (s *Session) Truncate(position int) error {
	if position < 0 {
		return errorf("truncate", StatusInvalidArgument, "negative position %d", position)
	}
	return s.run("truncate", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_truncate(p, C.uint32_t(position))
	})
}

// Position is the number of tokens in the session's context so far.
func (s *Session) Position() int {
	if s.ptr == nil {
		return 0
	}
	v := int(C.brisk_session_position(s.ptr))
	runtime.KeepAlive(s)
	return v
}

// NCtx is the session's context length.
func (s *Session) NCtx() int {
	if s.ptr == nil {
		return 0
	}
	v := int(C.brisk_session_n_ctx(s.ptr))
	runtime.KeepAlive(s)
	return v
}

// Eval appends tokens to the context and evaluates them; Logits then gives
// the logits after the last one. errors.Is(err, StatusContextFull) (and
// nothing evaluated) if they do not fit.
func (s *Session) Eval(tokens []int32) error {
	err := s.run("eval", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_eval(p, int32Ptr(tokens), C.size_t(len(tokens)))
	})
	runtime.KeepAlive(tokens)
	return err
}

// EvalAll is Eval that also returns the logits after every one of the
// tokens: len(tokens) rows of NVocab floats.
func (s *Session) EvalAll(tokens []int32) ([]float32, error) {
	logits := make([]float32, len(tokens)*s.nVocab+1) // +1: never a nil pointer
	var needed C.size_t
	err := s.run("eval all", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_eval_all(p, int32Ptr(tokens), C.size_t(len(tokens)),
			(*C.float)(unsafe.Pointer(&logits[0])), C.size_t(len(logits)), &needed)
	})
	if err != nil {
		return nil, err
	}
	return logits[:int(needed)], nil
}

// Logits gives the NVocab logits after the last evaluated token.
func (s *Session) Logits() ([]float32, error) {
	logits := make([]float32, s.nVocab+1)
	var needed C.size_t
	err := s.run("logits", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_logits(p, (*C.float)(unsafe.Pointer(&logits[0])), C.size_t(len(logits)), &needed)
	})
	if err != nil {
		return nil, err
	}
	return logits[:int(needed)], nil
}

// SaveState writes the session's context to path (atomically, with a
// checksum, tied to the model and the cache types). Sessions do not keep
// their tokens, so tokens are the ones it evaluated (len(tokens) must equal
// Position). smp (may be nil) adds the sampler's state (repetition window,
// random generator), so that sampling continues exactly as it would have.
// The session must have logits (not just truncated).
func (s *Session) SaveState(smp *Sampler, tokens []int32, path string) error {
	sp, err := optionalSampler(smp, "save state")
	if err != nil {
		return err
	}
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	err = s.run("save state", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_save_state(p, sp, int32Ptr(tokens), C.size_t(len(tokens)), cpath)
	})
	runtime.KeepAlive(tokens)
	runtime.KeepAlive(smp)
	return err
}

// LoadState replaces the session's context with one SaveState wrote (and
// smp's state, when smp is not nil and the file has one). Another model,
// other cache types or a damaged file are refused with the reason
// (errors.Is(err, StatusChecksum), ...) and change nothing; so is a file of
// a generating or finished engine sequence (use Engine.LoadSequence).
func (s *Session) LoadState(smp *Sampler, path string) error {
	sp, err := optionalSampler(smp, "load state")
	if err != nil {
		return err
	}
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	err = s.run("load state", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_session_load_state(p, sp, cpath)
	})
	runtime.KeepAlive(smp)
	return err
}

// StateFileTokens gives the tokens a state file holds (written by
// Session.SaveState or Sequence.SaveState), those saved without their cache
// included. The file is read and its checksum verified; no model is needed.
func StateFileTokens(path string) ([]int32, error) {
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	return callTokens("state file tokens", 256, func(buf *C.int32_t, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_state_file_tokens(cpath, buf, cap, needed)
	})
}

// SamplerOptions are the settings of a Sampler (and of Sequence.Generate).
// Start from DefaultSamplerOptions(); a nil *SamplerOptions means the defaults.
type SamplerOptions struct {
	Temperature   float32 // <= 0: greedy (argmax)
	TopK          int32   // <= 0: off
	TopP          float32 // >= 1: off
	MinP          float32 // <= 0: off
	RepeatPenalty float32 // 1: off
	RepeatLastN   int32   // tokens looked back for the penalty
	Seed          uint64  // same seed, model and prompt: same text
	// OpenAI-style penalties over the last RepeatLastN tokens: a token's
	// logit is lowered by PresencePenalty once it appears there, plus
	// FrequencyPenalty times its count. 0: off.
	PresencePenalty  float32
	FrequencyPenalty float32
}

// DefaultSamplerOptions gives brisk_sampler_options_init's defaults.
func DefaultSamplerOptions() SamplerOptions {
	var c C.brisk_sampler_options
	C.brisk_go_sampler_options_init(&c)
	return SamplerOptions{
		Temperature: float32(c.temperature), TopK: int32(c.top_k), TopP: float32(c.top_p), MinP: float32(c.min_p),
		RepeatPenalty: float32(c.repeat_penalty), RepeatLastN: int32(c.repeat_last_n), Seed: uint64(c.seed),
		PresencePenalty: float32(c.presence_penalty), FrequencyPenalty: float32(c.frequency_penalty),
	}
}

// GreedySamplerOptions are the defaults with temperature 0: always the most
// likely token.
func GreedySamplerOptions() SamplerOptions {
	o := DefaultSamplerOptions()
	o.Temperature = 0
	return o
}

func (o *SamplerOptions) c() C.brisk_sampler_options {
	var c C.brisk_sampler_options
	C.brisk_go_sampler_options_init(&c)
	if o != nil {
		c.temperature = C.float(o.Temperature)
		c.top_k = C.int32_t(o.TopK)
		c.top_p = C.float(o.TopP)
		c.min_p = C.float(o.MinP)
		c.repeat_penalty = C.float(o.RepeatPenalty)
		c.repeat_last_n = C.int32_t(o.RepeatLastN)
		c.seed = C.uint64_t(o.Seed)
		c.presence_penalty = C.float(o.PresencePenalty)
		c.frequency_penalty = C.float(o.FrequencyPenalty)
	}
	return c
}

// Sampler draws tokens from a session's logits. One goroutine at a time.
type Sampler struct {
	ptr *C.brisk_sampler
}

// NewSampler creates a sampler. opts may be nil.
func NewSampler(opts *SamplerOptions) (*Sampler, error) {
	c := opts.c()
	smp := &Sampler{}
	if err := call("create sampler", func() C.brisk_status { return C.brisk_sampler_create(&c, &smp.ptr) }); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(smp, func(s *Sampler) { s.Close() })
	return smp, nil
}

// Close frees the sampler. Closing twice is a no-op.
func (smp *Sampler) Close() error {
	if smp.ptr != nil {
		C.brisk_sampler_free(smp.ptr)
		smp.ptr = nil
		runtime.SetFinalizer(smp, nil)
	}
	return nil
}

// Sample draws the next token from the session's current logits (it does
// not evaluate it: call Accept and Session.Eval for that).
func (smp *Sampler) Sample(s *Session) (int32, error) {
	if smp.ptr == nil {
		return -1, closedError("sample", "sampler")
	}
	if s.ptr == nil {
		return -1, closedError("sample", "session")
	}
	var tok C.int32_t
	err := call("sample", func() C.brisk_status { return C.brisk_sampler_sample(smp.ptr, s.ptr, &tok) })
	runtime.KeepAlive(smp)
	runtime.KeepAlive(s)
	if err != nil {
		return -1, err
	}
	return int32(tok), nil
}

// Accept tells the sampler a token is in the context (for the repetition penalty).
func (smp *Sampler) Accept(token int32) {
	if smp.ptr != nil {
		C.brisk_sampler_accept(smp.ptr, C.int32_t(token))
		runtime.KeepAlive(smp)
	}
}

// GenerateOptions are the settings of Session.Generate and
// Sequence.Generate. Start from DefaultGenerateOptions(); nil means the
// defaults.
type GenerateOptions struct {
	MaxTokens int32
	StopAtEOS bool
	// OnToken is called once per generated token with the new complete
	// UTF-8 text (possibly "" while a character is still being assembled).
	// At the end, text still pending comes once more with token -1. Return
	// false to stop generating (StopCallback). It runs on the goroutine that
	// called Generate (or Engine.Step): it must not call methods of the same
	// Engine or its Sequences that change them (they return an error).
	OnToken func(token int32, text string) bool
}

// DefaultGenerateOptions gives brisk_generate_options_init's defaults.
func DefaultGenerateOptions() GenerateOptions {
	var c C.brisk_generate_options
	C.brisk_go_generate_options_init(&c)
	return GenerateOptions{MaxTokens: int32(c.max_tokens), StopAtEOS: c.stop_at_eos != 0}
}

// c fills the C options; the handle (0 without OnToken) must outlive their use.
func (o *GenerateOptions) c(op string, panics *panicSlot) (C.brisk_generate_options, cgo.Handle, error) {
	var c C.brisk_generate_options
	C.brisk_go_generate_options_init(&c)
	if o == nil {
		return c, 0, nil
	}
	if o.MaxTokens < 0 {
		return c, 0, errorf(op, StatusInvalidArgument, "max_tokens must not be negative")
	}
	c.max_tokens = C.int32_t(o.MaxTokens)
	c.stop_at_eos = cbool(o.StopAtEOS)
	var h cgo.Handle
	if o.OnToken != nil {
		h = cgo.NewHandle(&tokenCallback{fn: o.OnToken, panic: panics})
		C.brisk_go_generate_token(&c, C.uintptr_t(h))
	}
	return c, h, nil
}

// Generation is what Generate did.
type Generation struct {
	NGenerated int // tokens generated (not counting an end-of-sequence token)
	StopReason StopReason
}

// Generate samples, evaluates and reports tokens until a stop condition.
// The prompt must have been evaluated with Eval first. The session's Abort
// cancels it.
func (s *Session) Generate(smp *Sampler, opts *GenerateOptions) (Generation, error) {
	var g Generation
	if smp == nil || smp.ptr == nil {
		return g, closedError("generate", "sampler")
	}
	c, h, err := opts.c("generate", &s.panics)
	if err != nil {
		return g, err
	}
	if h != 0 {
		defer h.Delete()
	}
	var n C.size_t
	var reason C.brisk_stop_reason
	err = s.run("generate", func(p *C.brisk_session) C.brisk_status {
		return C.brisk_generate(p, smp.ptr, &c, &n, &reason)
	})
	runtime.KeepAlive(smp)
	g.NGenerated, g.StopReason = int(n), StopReason(reason)
	return g, err
}

// optionalSampler is smp's handle, nil for a nil smp, and an error for a
// closed one.
func optionalSampler(smp *Sampler, op string) (*C.brisk_sampler, error) {
	if smp == nil {
		return nil, nil
	}
	if smp.ptr == nil {
		return nil, closedError(op, "sampler")
	}
	return smp.ptr, nil
}
