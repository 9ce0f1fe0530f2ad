// SPDX-License-Identifier: MIT

package brisk

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// ModelOptions are the settings of OpenModel. Start from
// DefaultModelOptions(); a nil *ModelOptions means the defaults.
type ModelOptions struct {
	// Log receives messages from loading; nil: silent.
	Log func(level LogLevel, message string)
	// LogLevel is the most verbose level passed to Log.
	LogLevel LogLevel
	// VocabOnly opens the model for tokenizing only.
	VocabOnly bool
	// Verify recomputes every checksum of the file's manifest before
	// opening: ErrChecksum if something differs, ErrNotFound without a
	// manifest. Reads the whole file once.
	Verify bool
	// Mlock locks the model's pages in RAM so they are never paged out;
	// when the OS refuses, ErrOutOfMemory with the RLIMIT_MEMLOCK numbers.
	Mlock bool
	// NoMmap reads the file into anonymous memory instead of mapping it
	// (network filesystems).
	NoMmap bool
	// PlanMode says how the matrix kernels are chosen (PlanDefault: the
	// BRISK_PLAN environment variable if set, else PlanAuto).
	PlanMode PlanMode
	// PlanCacheDir is the directory of cached kernel plans; "": $BRISK_CACHE_DIR,
	// else $XDG_CACHE_HOME/brisk, else ~/.cache/brisk.
	PlanCacheDir string
	// PlanThreads is the thread count a plan is measured with; 0: one per
	// physical core.
	PlanThreads uint32
}

// PlanMode says how a model's matrix kernels are chosen (brisk_plan_mode);
// Model.KernelPlan says which plan was used.
type PlanMode int32

const (
	// PlanDefault: $BRISK_PLAN (auto, fixed or measure) if set, else PlanAuto.
	PlanDefault PlanMode = C.BRISK_PLAN_DEFAULT
	// PlanAuto: the cached plan if valid, else measure and cache it.
	PlanAuto PlanMode = C.BRISK_PLAN_AUTO
	// PlanFixed: the instruction set's baseline kernels; reproducible,
	// nothing measured.
	PlanFixed PlanMode = C.BRISK_PLAN_FIXED
	// PlanMeasure: measure even if a plan is cached, then cache it (brisk tune).
	PlanMeasure PlanMode = C.BRISK_PLAN_MEASURE
)

func (m PlanMode) String() string {
	switch m {
	case PlanDefault:
		return "default"
	case PlanAuto:
		return "auto"
	case PlanFixed:
		return "fixed"
	case PlanMeasure:
		return "measure"
	}
	return fmt.Sprintf("PlanMode(%d)", int32(m))
}

// DefaultModelOptions gives brisk_model_options_init's defaults.
func DefaultModelOptions() ModelOptions {
	var c C.brisk_model_options
	C.brisk_go_model_options_init(&c)
	o := ModelOptions{
		LogLevel: LogLevel(c.log_level), VocabOnly: c.vocab_only != 0, Verify: c.verify != 0,
		Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0, PlanMode: PlanMode(c.plan_mode), PlanThreads: uint32(c.plan_threads),
	}
	if c.plan_cache_dir != nil {
		o.PlanCacheDir = C.GoString(c.plan_cache_dir)
	}
	return o
}

// cOptions fills the C struct; the returned handle (0 if none) must be kept
// while the model lives, and free (which releases the plan cache
// directory's copy) called once the call that reads them has returned.
func (o *ModelOptions) cOptions() (c C.brisk_model_options, h cgo.Handle, cb *logCallback, free func()) {
	C.brisk_go_model_options_init(&c)
	free = func() {}
	if o == nil {
		return c, 0, nil, free
	}
	c.log_level = C.brisk_log_level(o.LogLevel)
	c.vocab_only = cbool(o.VocabOnly)
	c.verify = cbool(o.Verify)
	c.mlock = C.int64_t(cbool(o.Mlock))
	c.no_mmap = C.int64_t(cbool(o.NoMmap))
	c.plan_mode = C.int64_t(o.PlanMode)
	c.plan_threads = C.int64_t(o.PlanThreads)
	if o.PlanCacheDir != "" {
		dir := cstr(o.PlanCacheDir)
		c.plan_cache_dir = dir
		free = func() { C.free(unsafe.Pointer(dir)) }
	}
	if o.Log == nil {
		return c, 0, nil, free
	}
	cb = &logCallback{fn: o.Log}
	h = cgo.NewHandle(cb)
	C.brisk_go_model_log(&c, C.uintptr_t(h))
	return c, h, cb, free
}

// Model is an opened GGUF model: weights, tokenizer and metadata. It is
// immutable and safe for concurrent use by many goroutines.
type Model struct {
	mu     sync.RWMutex
	ptr    *C.brisk_model
	refs   int  // open sessions and engines made from this model
	closed bool // Close was called; freed once refs is 0
	log    cgo.Handle
}

// OpenModel opens a GGUF model file. opts may be nil.
func OpenModel(path string, opts *ModelOptions) (*Model, error) {
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	c, h, cb, free := opts.cOptions()
	defer free()
	var ptr *C.brisk_model
	err := call("open model "+path, func() C.brisk_status { return C.brisk_model_open(cpath, &c, &ptr) })
	return newModel(ptr, h, cb, err)
}

func newModel(ptr *C.brisk_model, h cgo.Handle, cb *logCallback, err error) (*Model, error) {
	if err != nil {
		if h != 0 {
			h.Delete()
		}
		if cb != nil {
			cb.panic.rethrow()
		}
		return nil, err
	}
	m := &Model{ptr: ptr, log: h}
	runtime.SetFinalizer(m, func(m *Model) { m.Close() })
	if cb != nil {
		cb.panic.rethrow()
	}
	return m, nil
}

// Close releases the model. Sessions and engines still open keep it alive
// until they close; every other method fails once Close has been called.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	runtime.SetFinalizer(m, nil)
	if m.refs == 0 {
		m.free()
	}
	return nil
}

func (m *Model) free() {
	C.brisk_model_close(m.ptr)
	m.ptr = nil
	if m.log != 0 {
		m.log.Delete()
		m.log = 0
	}
}

// acquire pins the model for a session or engine; release undoes it.
func (m *Model) acquire(op string) (*C.brisk_model, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, closedError(op, "model")
	}
	m.refs++
	return m.ptr, nil
}

func (m *Model) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refs--
	if m.closed && m.refs == 0 {
		m.free()
	}
}

// with runs f on the model's handle unless the model is closed.
func (m *Model) with(op string, f func(p *C.brisk_model) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return closedError(op, "model")
	}
	return f(m.ptr)
}

func (m *Model) intProp(f func(p *C.brisk_model) C.int32_t, ifClosed int32) int32 {
	v := ifClosed
	_ = m.with("", func(p *C.brisk_model) error { v = int32(f(p)); return nil })
	return v
}

// NVocab is the vocabulary size (0 once closed).
func (m *Model) NVocab() int {
	return int(m.intProp(func(p *C.brisk_model) C.int32_t { return C.brisk_model_n_vocab(p) }, 0))
}

// NCtxTrain is the context length the model was trained with.
func (m *Model) NCtxTrain() int {
	return int(m.intProp(func(p *C.brisk_model) C.int32_t { return C.brisk_model_n_ctx_train(p) }, 0))
}

// TokenBOS is the beginning-of-sequence token, -1 if none.
func (m *Model) TokenBOS() int32 {
	return m.intProp(func(p *C.brisk_model) C.int32_t { return C.brisk_model_token_bos(p) }, -1)
}

// TokenEOS is the end-of-sequence token, -1 if none.
func (m *Model) TokenEOS() int32 {
	return m.intProp(func(p *C.brisk_model) C.int32_t { return C.brisk_model_token_eos(p) }, -1)
}

// DecodeBytes is the bytes of weights one decode step reads: every matrix
// multiplied with, one embedding row and the norms. At B bytes/s of read
// bandwidth a model decodes at most B/DecodeBytes steps per second.
func (m *Model) DecodeBytes() uint64 {
	var v uint64
	_ = m.with("", func(p *C.brisk_model) error { v = uint64(C.brisk_model_decode_bytes(p)); return nil })
	return v
}

// FileSize is the size of the model file in bytes.
func (m *Model) FileSize() uint64 {
	var v uint64
	_ = m.with("", func(p *C.brisk_model) error { v = uint64(C.brisk_model_file_size(p)); return nil })
	return v
}

func (m *Model) text(op string, f func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status) (string, error) {
	var s string
	err := m.with(op, func(p *C.brisk_model) error {
		var err error
		s, err = callText(op, func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
			return f(p, buf, cap, needed)
		})
		return err
	})
	return s, err
}

// Describe is one line such as "llama 5 layers, dim 64, vocab 512, f32, 1.2 MB".
func (m *Model) Describe() (string, error) {
	return m.text("describe model", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_model_describe(p, buf, cap, needed)
	})
}

// KernelPlan is the kernel plan in use, as text: where it came from, then
// the layout and kernel of each weight type and column class.
func (m *Model) KernelPlan() (string, error) {
	return m.text("kernel plan", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_model_kernel_plan(p, buf, cap, needed)
	})
}

// WeightType is the type most matrix bytes are stored in, e.g. "q4_0".
func (m *Model) WeightType() (string, error) {
	return m.text("weight type", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_model_weight_type(p, buf, cap, needed)
	})
}

// Meta renders a metadata value as text; errors.Is(err, StatusNotFound) if
// the key is absent.
func (m *Model) Meta(key string) (string, error) {
	ckey := cstr(key)
	defer C.free(unsafe.Pointer(ckey))
	return m.text("meta "+key, func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_model_meta(p, ckey, buf, cap, needed)
	})
}

// Tokenize turns UTF-8 text into token ids (flags: AddBOS, ParseSpecial).
func (m *Model) Tokenize(text string, flags Flags) ([]int32, error) {
	ctext := cstr(text)
	defer C.free(unsafe.Pointer(ctext))
	var ids []int32
	err := m.with("tokenize", func(p *C.brisk_model) error {
		var err error
		ids, err = callTokens("tokenize", len(text)+2, func(buf *C.int32_t, cap C.size_t, needed *C.size_t) C.brisk_status {
			return C.brisk_tokenize(p, ctext, C.size_t(len(text)), C.uint32_t(flags), buf, cap, needed)
		})
		return err
	})
	return ids, err
}

// TokenToPiece gives the raw bytes of one token (possibly part of a UTF-8
// character). Control tokens give "" unless flags has PieceSpecial.
func (m *Model) TokenToPiece(token int32, flags Flags) (string, error) {
	return m.text("token to piece", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_token_to_piece(p, C.int32_t(token), C.uint32_t(flags), buf, cap, needed)
	})
}

// Detokenize turns token ids back into text. With AddBOS, the space the
// tokenizer put after a leading BOS is removed.
func (m *Model) Detokenize(tokens []int32, flags Flags) (string, error) {
	return m.text("detokenize", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_detokenize(p, int32Ptr(tokens), C.size_t(len(tokens)), C.uint32_t(flags), buf, cap, needed)
	})
}

// ChatMessage is one turn of a conversation ("system", "user", "assistant").
type ChatMessage struct {
	Role    string
	Content string
}

// ChatRender renders a conversation in a chat format: the model's own
// (recognised from its tokenizer.chat_template) when template is "", else
// one of "llama2", "llama3", "chatml", "mistral", "phi3". addAssistant
// appends the start of the assistant's reply. Tokenize the result with
// AddBOS|ParseSpecial. A role or content holding a control token's text is
// refused (errors.Is(err, StatusInvalidArgument)); see ChatRenderEx.
func (m *Model) ChatRender(template string, messages []ChatMessage, addAssistant bool) (string, error) {
	var ctmpl *C.char
	if template != "" {
		ctmpl = cstr(template)
		defer C.free(unsafe.Pointer(ctmpl))
	}
	roles, contents, free := chatArrays(messages)
	defer free()
	return m.text("chat render", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_chat_render(p, ctmpl, roles, contents, C.size_t(len(messages)), cbool(addAssistant), buf, cap, needed)
	})
}

// chatArrays copies the messages' roles and contents into arrays of C
// strings in C memory (Go memory may hold C pointers, but keeping it all in
// C is simplest to reason about); free releases them.
func chatArrays(messages []ChatMessage) (roles, contents **C.char, free func()) {
	n := len(messages)
	if n == 0 {
		return nil, nil, func() {}
	}
	size := C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))
	roles = (**C.char)(C.malloc(size))
	contents = (**C.char)(C.malloc(size))
	rs := unsafe.Slice(roles, n)
	cs := unsafe.Slice(contents, n)
	for i, msg := range messages {
		rs[i] = cstr(msg.Role)
		cs[i] = cstr(msg.Content)
	}
	return roles, contents, func() {
		for i := range rs {
			C.free(unsafe.Pointer(rs[i]))
			C.free(unsafe.Pointer(cs[i]))
		}
		C.free(unsafe.Pointer(roles))
		C.free(unsafe.Pointer(contents))
	}
}

// ChatOptions are the settings of ChatRenderEx. Start from
// DefaultChatOptions(); a nil *ChatOptions means the defaults.
type ChatOptions struct {
	// Template is "llama2", "llama3", "chatml", "mistral" or "phi3"; "": the
	// model's own (from its tokenizer.chat_template).
	Template string
	// AddAssistant appends the start of the assistant's reply.
	AddAssistant bool
	// AllowControlTokens renders control-token text in roles and contents
	// as it is (it becomes control tokens when tokenized with
	// ParseSpecial). Only for trusted text; false refuses it, as ChatRender does.
	AllowControlTokens bool
}

// DefaultChatOptions gives brisk_chat_options_init's defaults.
func DefaultChatOptions() ChatOptions {
	var c C.brisk_chat_options
	C.brisk_go_chat_options_init(&c)
	o := ChatOptions{AddAssistant: c.add_assistant != 0, AllowControlTokens: c.allow_control_tokens != 0}
	if c.template_name != nil {
		o.Template = C.GoString(c.template_name)
	}
	return o
}

// ChatRenderEx is ChatRender with options (brisk_chat_render_ex); opts may
// be nil for the defaults.
func (m *Model) ChatRenderEx(messages []ChatMessage, opts *ChatOptions) (string, error) {
	var c C.brisk_chat_options
	C.brisk_go_chat_options_init(&c)
	if opts != nil {
		if opts.Template != "" {
			c.template_name = cstr(opts.Template)
			defer C.free(unsafe.Pointer(c.template_name))
		} else {
			c.template_name = nil
		}
		c.add_assistant = cbool(opts.AddAssistant)
		c.allow_control_tokens = cbool(opts.AllowControlTokens)
	}
	roles, contents, free := chatArrays(messages)
	defer free()
	return m.text("chat render", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_chat_render_ex(p, roles, contents, C.size_t(len(messages)), &c, buf, cap, needed)
	})
}

// Identity is the model file's identity, 32 hex digits (an XXH3-128 of its
// header, size and sampled tensor data): saved states are tied to it.
func (m *Model) Identity() (string, error) {
	return m.text("model identity", func(p *C.brisk_model, buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_model_identity(p, buf, cap, needed)
	})
}

// SynthesizeOptions describe a model with random weights in the shape of a
// real one, for benchmarks and tests. Start from DefaultSynthesizeOptions().
type SynthesizeOptions struct {
	Shape      string // one of SyntheticShapes()
	WeightType string // "q4_0", "q8_0", "q4_k", "f16", ...
	Seed       uint64
	NThreads   uint32 // 0: all cores
}

// DefaultSynthesizeOptions gives brisk_synthesize_options_init's defaults.
func DefaultSynthesizeOptions() SynthesizeOptions {
	var c C.brisk_synthesize_options
	C.brisk_go_synthesize_options_init(&c)
	return SynthesizeOptions{
		Shape: C.GoString(c.shape), WeightType: C.GoString(c.weight_type),
		Seed: uint64(c.seed), NThreads: uint32(c.n_threads),
	}
}

func (o *SynthesizeOptions) withC(f func(c *C.brisk_synthesize_options) error) error {
	var c C.brisk_synthesize_options
	C.brisk_go_synthesize_options_init(&c)
	if o != nil {
		shape, wtype := cstr(o.Shape), cstr(o.WeightType)
		defer C.free(unsafe.Pointer(shape))
		defer C.free(unsafe.Pointer(wtype))
		c.shape, c.weight_type = shape, wtype
		c.seed = C.uint64_t(o.Seed)
		c.n_threads = C.uint32_t(o.NThreads)
	}
	return f(&c)
}

// SynthesizeModel writes a synthetic GGUF model to path. opts may be nil.
func SynthesizeModel(path string, opts *SynthesizeOptions) error {
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	return opts.withC(func(c *C.brisk_synthesize_options) error {
		return call("synthesize model", func() C.brisk_status { return C.brisk_synthesize_model(cpath, c) })
	})
}

// OpenSyntheticModel makes a synthetic model in memory and opens it; nothing
// is left on disk. Either options may be nil.
func OpenSyntheticModel(synth *SynthesizeOptions, opts *ModelOptions) (*Model, error) {
	c, h, cb, free := opts.cOptions()
	defer free()
	var ptr *C.brisk_model
	err := synth.withC(func(s *C.brisk_synthesize_options) error {
		return call("open synthetic model", func() C.brisk_status { return C.brisk_model_open_synthetic(s, &c, &ptr) })
	})
	return newModel(ptr, h, cb, err)
}

// SyntheticShapes lists the built-in shape names.
func SyntheticShapes() ([]string, error) {
	s, err := callText("synthetic shapes", func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_synthetic_shapes(buf, cap, needed)
	})
	if err != nil || s == "" {
		return nil, err
	}
	return strings.Split(s, ","), nil
}
