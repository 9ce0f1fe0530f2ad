// SPDX-License-Identifier: MIT

package brisk

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include <brisk/brisk_experimental.h>
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// EngineOptions are the settings of Model.NewEngine. Start from
// DefaultEngineOptions(); a nil *EngineOptions means the defaults.
type EngineOptions struct {
	NCtx     uint32 // per sequence; 0: the model's training context, at most 4096
	NSeqMax  uint32 // sequences that can exist at once
	NThreads uint32 // 0: one per physical core
	NBatch   uint32 // most tokens per step
	// KV cache element types (TypeF32, TypeF16, TypeQ8_0, TypeQ4_0 or TypeAuto).
	CacheTypeK, CacheTypeV Type
	NoPin                  bool   // do not pin threads to cores
	CPUList                string // e.g. "0,2,4,6": pin thread i to the i-th CPU; "": one per physical core
	// MemoryBudget is the memory the engine may plan for, in bytes; 0: what
	// the machine has available.
	MemoryBudget uint64
	// PinCaller (with NoPin false) also pins the calling thread, which
	// computes as thread 0, to the first core or the first CPU of CPUList
	// while the engine exists. Lock the goroutine to its thread
	// (runtime.LockOSThread) to use it.
	PinCaller bool
	// Abort is polled during Step, on the stepping goroutine; returning true
	// cancels the step (errors.Is(err, StatusCancelled)).
	Abort func() bool
}

// DefaultEngineOptions gives brisk_engine_options_init's defaults.
func DefaultEngineOptions() EngineOptions {
	var c C.brisk_engine_options
	C.brisk_go_engine_options_init(&c)
	o := EngineOptions{
		NCtx: uint32(c.n_ctx), NSeqMax: uint32(c.n_seq_max), NThreads: uint32(c.n_threads), NBatch: uint32(c.n_batch),
		CacheTypeK: Type(c.cache_type_k), CacheTypeV: Type(c.cache_type_v), NoPin: c.no_pin != 0,
		MemoryBudget: uint64(c.memory_budget), PinCaller: c.pin_caller != 0,
	}
	if c.cpu_list != nil {
		o.CPUList = C.GoString(c.cpu_list)
	}
	return o
}

// Engine runs many sequences per weight read: each Step is one forward pass
// over the work of every sequence. An Engine and its Sequences belong to one
// goroutine at a time; token callbacks run on it, inside Step (or inside
// Sequence.Generate, for a sequence whose prompt is already evaluated).
type Engine struct {
	ptr   *C.brisk_engine
	model *Model
	abort cgo.Handle

	inCallback bool      // inside a C call that may run token callbacks
	panics     panicSlot // a panic from a callback, re-raised by Step

	// Token-callback handles of this engine's sequences (freed with them:
	// brisk_engine_free frees every sequence still attached).
	handles  map[*C.brisk_sequence][]cgo.Handle
	deferred []*C.brisk_sequence // closed from inside a callback; freed after it

	mu      sync.Mutex          // guards pending, and ptr against the finalizer goroutine
	pending []*C.brisk_sequence // sequences the GC found unreachable
}

// c fills the C options, all but the abort callback; free releases the
// CPU list's copy (brisk reads it during the call and does not keep it).
func (o *EngineOptions) c() (c C.brisk_engine_options, free func()) {
	C.brisk_go_engine_options_init(&c)
	free = func() {}
	if o == nil {
		return c, free
	}
	c.n_ctx = C.uint32_t(o.NCtx)
	c.n_seq_max = C.uint32_t(o.NSeqMax)
	c.n_threads = C.uint32_t(o.NThreads)
	c.n_batch = C.uint32_t(o.NBatch)
	c.cache_type_k = C.int32_t(o.CacheTypeK)
	c.cache_type_v = C.int32_t(o.CacheTypeV)
	c.no_pin = cbool(o.NoPin)
	c.memory_budget = C.uint64_t(o.MemoryBudget)
	c.pin_caller = cbool(o.PinCaller)
	if o.CPUList != "" {
		list := cstr(o.CPUList)
		c.cpu_list = list
		free = func() { C.free(unsafe.Pointer(list)) }
	}
	return c, free
}

// MaxSequences is the most sequences (at most opts.NSeqMax) an engine with
// these options could hold within its memory budget, as NewEngine plans
// it; 0 if not even one fits. Nothing is allocated. opts may be nil.
func (m *Model) MaxSequences(opts *EngineOptions) (int, error) {
	c, free := opts.c()
	defer free()
	var n C.uint32_t
	err := m.with("engine max sequences", func(p *C.brisk_model) error {
		return call("engine max sequences", func() C.brisk_status { return C.brisk_engine_max_sequences(p, &c, &n) })
	})
	return int(n), err
}

// NewEngine creates an engine on the model. opts may be nil.
func (m *Model) NewEngine(opts *EngineOptions) (*Engine, error) {
	p, err := m.acquire("create engine")
	if err != nil {
		return nil, err
	}
	e := &Engine{model: m, handles: map[*C.brisk_sequence][]cgo.Handle{}}
	c, free := opts.c()
	defer free()
	if opts != nil && opts.Abort != nil {
		e.abort = cgo.NewHandle(&abortCallback{fn: opts.Abort, panic: &e.panics})
		C.brisk_go_engine_abort(&c, C.uintptr_t(e.abort))
	}
	err = call("create engine", func() C.brisk_status { return C.brisk_engine_create(p, &c, &e.ptr) })
	if err != nil {
		if e.abort != 0 {
			e.abort.Delete()
		}
		m.release()
		return nil, err
	}
	runtime.SetFinalizer(e, func(e *Engine) { e.Close() })
	return e, nil
}

func (e *Engine) check(op string) error {
	if e.ptr == nil {
		return closedError(op, "engine")
	}
	if e.inCallback {
		return errorf(op, StatusInvalidArgument, "not allowed inside a token callback of the same engine")
	}
	return nil
}

// Close frees the engine and every sequence still attached to it (their
// methods fail afterwards). Closing twice is a no-op.
func (e *Engine) Close() error {
	if e.ptr == nil {
		return nil
	}
	if e.inCallback {
		return errorf("close engine", StatusInvalidArgument, "not allowed inside a token callback of the same engine")
	}
	e.mu.Lock()
	C.brisk_engine_free(e.ptr)
	e.ptr = nil
	e.pending = nil
	e.mu.Unlock()
	for _, hs := range e.handles {
		for _, h := range hs {
			h.Delete()
		}
	}
	e.handles = nil
	e.deferred = nil
	if e.abort != 0 {
		e.abort.Delete()
		e.abort = 0
	}
	e.model.release()
	runtime.SetFinalizer(e, nil)
	return nil
}

func (e *Engine) freeSequence(p *C.brisk_sequence) {
	C.brisk_sequence_free(p)
	for _, h := range e.handles[p] {
		h.Delete()
	}
	delete(e.handles, p)
}

// collect frees the sequences the GC or a callback gave up on.
func (e *Engine) collect() {
	e.mu.Lock()
	pending := e.pending
	e.pending = nil
	e.mu.Unlock()
	for _, p := range pending {
		e.freeSequence(p)
	}
	for _, p := range e.deferred {
		e.freeSequence(p)
	}
	e.deferred = nil
}

// withCallbacks runs a C call during which brisk may call token callbacks.
func (e *Engine) withCallbacks(op string, f func() C.brisk_status) error {
	e.inCallback = true
	err := call(op, f)
	e.inCallback = false
	runtime.KeepAlive(e)
	e.collect()
	e.panics.rethrow()
	return err
}

// Describe is one line: threads, slots, KV cache types and memory.
func (e *Engine) Describe() (string, error) {
	if e.ptr == nil {
		return "", closedError("describe engine", "engine")
	}
	s, err := callText("describe engine", func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_engine_describe(e.ptr, buf, cap, needed)
	})
	runtime.KeepAlive(e)
	return s, err
}

// NThreads is the number of threads the engine computes with.
func (e *Engine) NThreads() int {
	if e.ptr == nil {
		return 0
	}
	v := int(C.brisk_engine_n_threads(e.ptr))
	runtime.KeepAlive(e)
	return v
}

// ReadBandwidth measures the memory read bandwidth the engine's threads
// reach, in GB/s (1e9 bytes/s): the median of passes streams over a fresh
// buffer of bytes (0 for the defaults: 512 MiB, 8 passes), with min and max.
// A decode step reads a model's DecodeBytes, so it decodes at most
// median*1e9/DecodeBytes steps per second.
func (e *Engine) ReadBandwidth(bytes uint64, passes uint32) (median, min, max float64, err error) {
	if err := e.check("read bandwidth"); err != nil {
		return 0, 0, 0, err
	}
	var md, mn, mx C.double
	err = call("read bandwidth", func() C.brisk_status {
		return C.brisk_engine_read_bandwidth(e.ptr, C.uint64_t(bytes), C.uint32_t(passes), &md, &mn, &mx)
	})
	runtime.KeepAlive(e)
	return float64(md), float64(mn), float64(mx), err
}

// Step runs one forward pass over all ready work and delivers tokens to the
// sequences' callbacks. It returns the number of sequences that still have
// work. A panic in a callback is re-raised here (that sequence stops with
// StopCallback).
func (e *Engine) Step() (active int, err error) {
	if err := e.check("step"); err != nil {
		return 0, err
	}
	e.collect()
	var n C.uint32_t
	err = e.withCallbacks("step", func() C.brisk_status { return C.brisk_engine_step(e.ptr, &n) })
	return int(n), err
}

// Run steps until no sequence has work.
func (e *Engine) Run() error {
	for {
		n, err := e.Step()
		if err != nil || n == 0 {
			return err
		}
	}
}

// Sequence is one request in an Engine: its tokens, sampler and output.
type Sequence struct {
	ptr    *C.brisk_sequence
	engine *Engine
}

func (e *Engine) adopt(p *C.brisk_sequence) *Sequence {
	s := &Sequence{ptr: p, engine: e}
	// The finalizer runs on another goroutine, so it only queues the
	// sequence; the engine frees it on its own goroutine.
	runtime.SetFinalizer(s, func(s *Sequence) {
		e := s.engine
		e.mu.Lock()
		if e.ptr != nil {
			e.pending = append(e.pending, s.ptr)
		}
		e.mu.Unlock()
	})
	return s
}

// NewSequence creates an empty sequence in a free slot
// (errors.Is(err, StatusOutOfMemory) if there is none).
func (e *Engine) NewSequence() (*Sequence, error) {
	if err := e.check("create sequence"); err != nil {
		return nil, err
	}
	e.collect()
	var p *C.brisk_sequence
	if err := call("create sequence", func() C.brisk_status { return C.brisk_sequence_create(e.ptr, &p) }); err != nil {
		return nil, err
	}
	return e.adopt(p), nil
}

func (s *Sequence) check(op string) error {
	if s.ptr == nil || s.engine.ptr == nil {
		return closedError(op, "sequence")
	}
	return s.engine.check(op)
}

// Fork creates a sequence whose context is a copy of this one's, which must
// be idle: a shared prefix is evaluated once and forked per request.
func (s *Sequence) Fork() (*Sequence, error) {
	if err := s.check("fork"); err != nil {
		return nil, err
	}
	s.engine.collect()
	var p *C.brisk_sequence
	err := call("fork", func() C.brisk_status { return C.brisk_sequence_fork(s.ptr, &p) })
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return s.engine.adopt(p), nil
}

// Close frees the sequence and its slot. Inside a token callback of the same
// engine the sequence is freed when the callback's Step returns. Closing
// twice, or after the engine was closed, is a no-op.
func (s *Sequence) Close() error {
	if s.ptr == nil {
		return nil
	}
	e := s.engine
	runtime.SetFinalizer(s, nil)
	p := s.ptr
	s.ptr = nil
	if e.ptr == nil {
		return nil // freed with the engine
	}
	if e.inCallback {
		// brisk may still reach the sequence in this step: silence its
		// callback now, free it when the step returns.
		for _, h := range e.handles[p] {
			h.Value().(*tokenCallback).dead = true
		}
		e.deferred = append(e.deferred, p)
		return nil
	}
	e.freeSequence(p)
	return nil
}

// AddTokens queues tokens to evaluate in coming steps.
func (s *Sequence) AddTokens(tokens []int32) error {
	if err := s.check("add tokens"); err != nil {
		return err
	}
	err := call("add tokens", func() C.brisk_status {
		return C.brisk_sequence_add_tokens(s.ptr, int32Ptr(tokens), C.size_t(len(tokens)))
	})
	runtime.KeepAlive(tokens)
	runtime.KeepAlive(s)
	return err
}

// AddText tokenizes text (flags as Model.Tokenize) and queues the tokens.
func (s *Sequence) AddText(text string, flags Flags) error {
	if err := s.check("add text"); err != nil {
		return err
	}
	ctext := cstr(text)
	defer C.free(unsafe.Pointer(ctext))
	err := call("add text", func() C.brisk_status {
		return C.brisk_sequence_add_text(s.ptr, ctext, C.size_t(len(text)), C.uint32_t(flags))
	})
	runtime.KeepAlive(s)
	return err
}

// Generate asks the sequence to generate after its queued tokens. Tokens
// reach opts.OnToken during Engine.Step — or already inside this call for a
// sequence that is idle (a fork, or one whose prompt was evaluated), whose
// first token is sampled at once. Either option may be nil for defaults;
// Generated() gives the tokens without a callback.
func (s *Sequence) Generate(sampling *SamplerOptions, opts *GenerateOptions) error {
	if err := s.check("generate"); err != nil {
		return err
	}
	e := s.engine
	sc := sampling.c()
	c, h, err := opts.c("generate", &e.panics)
	if err != nil {
		return err
	}
	p := s.ptr
	err = e.withCallbacks("generate", func() C.brisk_status { return C.brisk_sequence_generate(p, &sc, &c) })
	runtime.KeepAlive(s)
	e.keepCallback(p, h, err)
	return err
}

// keepCallback records the token-callback handle h (0: none) that a
// generate or resume call on p gave brisk.
func (e *Engine) keepCallback(p *C.brisk_sequence, h cgo.Handle, err error) {
	if h == 0 {
		return
	}
	if err != nil {
		// brisk may already have stored the new callback before failing, so
		// the handle lives as long as the sequence either way.
		e.handles[p] = append(e.handles[p], h)
		return
	}
	// The old callback is gone from brisk: drop its handle.
	for _, old := range e.handles[p] {
		old.Delete()
	}
	e.handles[p] = []cgo.Handle{h}
}

// Truncate forgets the sequence's tokens from position on (position <= its
// Position; the sequence must be idle): a fork of a cached prompt cut back
// to the part another prompt shares. Add at least one token before
// generating.
func (s *Sequence) Truncate(position int) error {
	if err := s.check("truncate"); err != nil {
		return err
	}
	if position < 0 {
		return errorf("truncate", StatusInvalidArgument, "negative position %d", position)
	}
	err := call("truncate", func() C.brisk_status { return C.brisk_sequence_truncate(s.ptr, C.uint32_t(position)) })
	runtime.KeepAlive(s)
	return err
}

// SaveState writes the sequence to path (atomically, with a checksum, tied
// to the model and the cache types): an idle one; a generating one between
// steps, with its generation (sampler state, budget, tokens so far), which
// Resume continues after Engine.LoadSequence; or a finished one, whose text
// is evaluated again on load. Not from inside a token callback.
func (s *Sequence) SaveState(path string) error {
	if err := s.check("save state"); err != nil {
		return err
	}
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	err := call("save state", func() C.brisk_status { return C.brisk_sequence_save_state(s.ptr, cpath) })
	runtime.KeepAlive(s)
	return err
}

// LoadSequence creates a sequence from a file SaveState wrote. Tokens saved
// without their cache are queued (SeqPrefill); a saved generation waits for
// Resume. Another model, other cache types or a damaged file are refused
// with the reason (errors.Is(err, StatusChecksum), ...).
func (e *Engine) LoadSequence(path string) (*Sequence, error) {
	if err := e.check("load state"); err != nil {
		return nil, err
	}
	e.collect()
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	var p *C.brisk_sequence
	if err := call("load state", func() C.brisk_status { return C.brisk_sequence_load_state(e.ptr, cpath, &p) }); err != nil {
		return nil, err
	}
	return e.adopt(p), nil
}

// Resume continues the generation of a sequence loaded from a file saved
// while generating: it produces the tokens it would have had it never
// stopped. Callbacks are not saved, so opts gives OnToken again (opts may be
// nil); the saved generation's MaxTokens and StopAtEOS apply, not opts'.
func (s *Sequence) Resume(opts *GenerateOptions) error {
	if err := s.check("resume"); err != nil {
		return err
	}
	e := s.engine
	c, h, err := opts.c("resume", &e.panics)
	if err != nil {
		return err
	}
	p := s.ptr
	err = e.withCallbacks("resume", func() C.brisk_status { return C.brisk_sequence_resume(p, &c) })
	runtime.KeepAlive(s)
	e.keepCallback(p, h, err)
	return err
}

// SequenceState is where a sequence is in its life.
type SequenceState int32

const (
	SeqIdle       SequenceState = C.BRISK_SEQ_IDLE       // evaluated everything it was given; not generating
	SeqPrefill    SequenceState = C.BRISK_SEQ_PREFILL    // prompt tokens still to evaluate
	SeqGenerating SequenceState = C.BRISK_SEQ_GENERATING // generating
	SeqFinished   SequenceState = C.BRISK_SEQ_FINISHED   // done (see StopReason); its slot is free
)

func (st SequenceState) String() string {
	switch st {
	case SeqIdle:
		return "idle"
	case SeqPrefill:
		return "prefill"
	case SeqGenerating:
		return "generating"
	case SeqFinished:
		return "finished"
	}
	return fmt.Sprintf("SequenceState(%d)", int32(st))
}

// State is the sequence's state (SeqFinished once closed). It may be read
// from inside a token callback.
func (s *Sequence) State() SequenceState {
	if s.ptr == nil || s.engine.ptr == nil {
		return SeqFinished
	}
	v := SequenceState(C.brisk_sequence_get_state(s.ptr))
	runtime.KeepAlive(s)
	return v
}

// StopReason says why a finished sequence stopped.
func (s *Sequence) StopReason() StopReason {
	if s.ptr == nil || s.engine.ptr == nil {
		return StopMaxTokens
	}
	v := StopReason(C.brisk_sequence_stop_reason(s.ptr))
	runtime.KeepAlive(s)
	return v
}

// Position is the number of tokens in the sequence's cache.
func (s *Sequence) Position() int {
	if s.ptr == nil || s.engine.ptr == nil {
		return 0
	}
	v := int(C.brisk_sequence_position(s.ptr))
	runtime.KeepAlive(s)
	return v
}

// Generated gives the tokens generated so far (a copy): poll it between
// steps instead of using a callback. It may be read inside a callback.
func (s *Sequence) Generated() ([]int32, error) {
	if s.ptr == nil || s.engine.ptr == nil {
		return nil, closedError("generated", "sequence")
	}
	ids, err := callTokens("generated", 64, func(buf *C.int32_t, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_sequence_generated(s.ptr, buf, cap, needed)
	})
	runtime.KeepAlive(s)
	return ids, err
}
