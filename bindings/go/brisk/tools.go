// SPDX-License-Identifier: MIT

package brisk

// The file toolchain: converting checkpoints to GGUF, checksum manifests,
// verifying, and .brisk bundles. Every call takes a context: cancelling it
// stops the call at its next check (brisk leaves no partial output file).

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"unsafe"
)

// Progress is one report of a long-running call: Done of Total units
// (bytes, tensors, tokens, chunks or prompts, depending on the stage).
type Progress struct {
	// Stage is "convert", "verify", "pack", "unpack", "quantize",
	// "calibrate", "sensitivity", "ppl", "compare" or "doctor".
	Stage       string
	Done, Total uint64
	Detail      string // what is being worked on, e.g. a tensor's name; may be ""
}

// Mismatch is one difference found by Verify: where ("tensor
// 'blk.0.attn_q.weight'", "metadata", "manifest", a bundle segment, ...) and
// what differs.
type Mismatch struct {
	Where, Detail string
}

// runHooked makes one toolchain call with k's callbacks installed: install
// receives the handle and the C bit set of the callbacks to set. It returns
// the call's error, with the context's error as Cause when cancelled, and
// re-raises a panic of a callback.
func runHooked(ctx context.Context, op string, k *hooks, install func(h C.uintptr_t, which C.uint), f func() C.brisk_status) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Status: StatusCancelled, Message: "cancelled before it started", Cause: err}
	}
	k.done = ctx.Done()
	var which C.uint
	if k.progress != nil {
		which |= C.BRISK_GO_PROGRESS
	}
	if k.log != nil {
		which |= C.BRISK_GO_LOG
	}
	if k.mismatch != nil {
		which |= C.BRISK_GO_MISMATCH
	}
	if k.tensor != nil {
		which |= C.BRISK_GO_TENSOR
	}
	// The abort callback also stops the call after a callback panicked.
	if k.done != nil || which != 0 {
		which |= C.BRISK_GO_ABORT
	}
	var h cgo.Handle
	if which != 0 {
		h = cgo.NewHandle(k)
		defer h.Delete()
		install(C.uintptr_t(h), which)
	}
	err := call(op, f)
	k.panic.rethrow()
	if e, ok := err.(*Error); ok && e.Status == StatusCancelled {
		e.Cause = ctx.Err()
	}
	return err
}

// optString copies s to C memory, nil for ""; free with C.free (nil is fine).
func optString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// cStrings copies strs to a C array of C strings; free releases it all.
func cStrings(strs []string) (arr **C.char, free func()) {
	if len(strs) == 0 {
		return nil, func() {}
	}
	arr = (**C.char)(C.malloc(C.size_t(len(strs)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	s := unsafe.Slice(arr, len(strs))
	for i, str := range strs {
		s[i] = C.CString(str)
	}
	return arr, func() {
		for i := range s {
			C.free(unsafe.Pointer(s[i]))
		}
		C.free(unsafe.Pointer(arr))
	}
}

// ---- convert ---------------------------------------------------------------------

// ConvertOptions are the settings of ConvertHF and ConvertLlama2c. Start
// from DefaultConvertOptions(); nil means the defaults.
type ConvertOptions struct {
	// Type of the matrices: TypeF32, TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0,
	// TypeQ4_1, TypeQ4K, TypeQ5K or TypeQ6K; TypeAuto: the source's float type.
	Type Type
	// Name is general.name; "": the directory's name (Hugging Face) or
	// "llama" (llama2.c).
	Name     string
	NThreads uint32 // 0: all cores
	// Mlock locks the input in RAM while it is read (ErrOutOfMemory naming
	// RLIMIT_MEMLOCK when the OS refuses); NoMmap reads it into anonymous
	// memory instead of mapping it (network filesystems).
	Mlock, NoMmap bool
	OnProgress    func(Progress)
	Log           func(level LogLevel, message string) // warnings such as type fallbacks
}

// DefaultConvertOptions gives brisk_convert_options_init's defaults.
func DefaultConvertOptions() ConvertOptions {
	var c C.brisk_convert_options
	C.brisk_go_convert_options_init(&c)
	return ConvertOptions{Type: Type(c._type), NThreads: uint32(c.n_threads), Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0}
}

func convert(ctx context.Context, op string, o *ConvertOptions, f func(c *C.brisk_convert_options) C.brisk_status) error {
	if o == nil {
		d := DefaultConvertOptions()
		o = &d
	}
	var c C.brisk_convert_options
	C.brisk_go_convert_options_init(&c)
	c._type = C.int32_t(o.Type)
	c.name = optString(o.Name)
	defer C.free(unsafe.Pointer(c.name))
	c.n_threads = C.uint32_t(o.NThreads)
	c.mlock, c.no_mmap = C.int64_t(cbool(o.Mlock)), C.int64_t(cbool(o.NoMmap))
	k := &hooks{progress: o.OnProgress, log: o.Log}
	return runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_convert_hooks(&c, h, which) },
		func() C.brisk_status { return f(&c) })
}

// ConvertHF converts a Hugging Face model directory (config.json,
// model.safetensors or shards, tokenizer.json; Llama, Mistral, Qwen2) to a
// GGUF file with a checksum manifest.
func ConvertHF(ctx context.Context, hfDir, outPath string, opts *ConvertOptions) error {
	cdir, cout := cstr(hfDir), cstr(outPath)
	defer C.free(unsafe.Pointer(cdir))
	defer C.free(unsafe.Pointer(cout))
	return convert(ctx, "convert "+hfDir, opts, func(c *C.brisk_convert_options) C.brisk_status {
		return C.brisk_convert_hf(cdir, cout, c)
	})
}

// ConvertLlama2c converts a llama2.c checkpoint (legacy version-0 .bin) and
// its tokenizer .bin to a GGUF file.
func ConvertLlama2c(ctx context.Context, modelPath, tokenizerPath, outPath string, opts *ConvertOptions) error {
	cmodel, ctok, cout := cstr(modelPath), cstr(tokenizerPath), cstr(outPath)
	defer C.free(unsafe.Pointer(cmodel))
	defer C.free(unsafe.Pointer(ctok))
	defer C.free(unsafe.Pointer(cout))
	return convert(ctx, "convert "+modelPath, opts, func(c *C.brisk_convert_options) C.brisk_status {
		return C.brisk_convert_llama2c(cmodel, ctok, cout, c)
	})
}

// ---- verify and manifests ------------------------------------------------------

// VerifyOptions are the settings of Verify and AddManifest. Start from
// DefaultVerifyOptions(); nil means the defaults.
type VerifyOptions struct {
	NThreads uint32 // 0: all cores
	// Reading a GGUF (a bundle is streamed, and ignores them): Mlock locks
	// it in RAM (ErrOutOfMemory naming RLIMIT_MEMLOCK when the OS refuses);
	// NoMmap reads it into anonymous memory instead of mapping it.
	Mlock, NoMmap bool
	OnProgress    func(Progress)
	// OnMismatch receives every difference Verify finds (before it returns
	// ErrChecksum).
	OnMismatch func(Mismatch)
}

// DefaultVerifyOptions gives brisk_verify_options_init's defaults.
func DefaultVerifyOptions() VerifyOptions {
	var c C.brisk_verify_options
	C.brisk_go_verify_options_init(&c)
	return VerifyOptions{NThreads: uint32(c.n_threads), Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0}
}

func (o *VerifyOptions) run(ctx context.Context, op string, f func(c *C.brisk_verify_options) C.brisk_status) error {
	if o == nil {
		d := DefaultVerifyOptions()
		o = &d
	}
	var c C.brisk_verify_options
	C.brisk_go_verify_options_init(&c)
	c.n_threads = C.uint32_t(o.NThreads)
	c.mlock, c.no_mmap = C.int64_t(cbool(o.Mlock)), C.int64_t(cbool(o.NoMmap))
	k := &hooks{progress: o.OnProgress, mismatch: o.OnMismatch}
	return runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_verify_hooks(&c, h, which) },
		func() C.brisk_status { return f(&c) })
}

// Verify recomputes the checksums of a GGUF file (against its embedded
// manifest) or of a .brisk bundle, and returns the number of bytes hashed.
// A difference: ErrChecksum (each one goes to OnMismatch); a GGUF without a
// manifest: ErrNotFound (see AddManifest).
func Verify(ctx context.Context, path string, opts *VerifyOptions) (bytesChecked uint64, err error) {
	cpath := cstr(path)
	defer C.free(unsafe.Pointer(cpath))
	var n C.uint64_t
	err = opts.run(ctx, "verify "+path, func(c *C.brisk_verify_options) C.brisk_status {
		return C.brisk_verify(cpath, c, &n)
	})
	return uint64(n), err
}

// AddManifest rewrites a GGUF with a fresh checksum manifest to outPath ("":
// in place). A file whose existing manifest does not verify is refused
// (ErrChecksum).
func AddManifest(ctx context.Context, path, outPath string, opts *VerifyOptions) error {
	cpath, cout := cstr(path), optString(outPath)
	defer C.free(unsafe.Pointer(cpath))
	defer C.free(unsafe.Pointer(cout))
	return opts.run(ctx, "add manifest "+path, func(c *C.brisk_verify_options) C.brisk_status {
		return C.brisk_add_manifest(cpath, cout, c)
	})
}

// ---- bundles ---------------------------------------------------------------------

// PackOptions are the settings of Pack and Unpack. Start from
// DefaultPackOptions(); nil means the defaults.
type PackOptions struct {
	Level int32 // zstd level, 1..22
	// LongDistance is zstd's long-distance matching: -1 auto, 0 off, 1 on.
	LongDistance int32
	NThreads     uint32 // 0: all cores
	// Reading the GGUF Pack compresses: Mlock locks it in RAM
	// (ErrOutOfMemory naming RLIMIT_MEMLOCK when the OS refuses); NoMmap
	// reads it into anonymous memory instead of mapping it.
	Mlock, NoMmap bool
	OnProgress    func(Progress)
	Log           func(level LogLevel, message string)
}

// DefaultPackOptions gives brisk_pack_options_init's defaults.
func DefaultPackOptions() PackOptions {
	var c C.brisk_pack_options
	C.brisk_go_pack_options_init(&c)
	return PackOptions{
		Level: int32(c.level), LongDistance: int32(c.long_distance), NThreads: uint32(c.n_threads),
		Mlock: c.mlock != 0, NoMmap: c.no_mmap != 0,
	}
}

func (o *PackOptions) run(ctx context.Context, op string, f func(c *C.brisk_pack_options) C.brisk_status) error {
	if o == nil {
		d := DefaultPackOptions()
		o = &d
	}
	var c C.brisk_pack_options
	C.brisk_go_pack_options_init(&c)
	c.level = C.int32_t(o.Level)
	c.long_distance = C.int32_t(o.LongDistance)
	c.n_threads = C.uint32_t(o.NThreads)
	c.mlock, c.no_mmap = C.int64_t(cbool(o.Mlock)), C.int64_t(cbool(o.NoMmap))
	k := &hooks{progress: o.OnProgress, log: o.Log}
	return runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_pack_hooks(&c, h, which) },
		func() C.brisk_status { return f(&c) })
}

// Pack compresses a GGUF into a .brisk bundle. A GGUF with a manifest is
// verified first (ErrChecksum if damaged).
func Pack(ctx context.Context, ggufPath, bundlePath string, opts *PackOptions) error {
	cin, cout := cstr(ggufPath), cstr(bundlePath)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	return opts.run(ctx, "pack "+ggufPath, func(c *C.brisk_pack_options) C.brisk_status {
		return C.brisk_pack(cin, cout, c)
	})
}

// Unpack decompresses a bundle, verifying every checksum as it streams; the
// GGUF appears at ggufPath only if all of them match (ErrChecksum or
// ErrBadFormat otherwise). Level and LongDistance are not used.
func Unpack(ctx context.Context, bundlePath, ggufPath string, opts *PackOptions) error {
	cin, cout := cstr(bundlePath), cstr(ggufPath)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	return opts.run(ctx, "unpack "+bundlePath, func(c *C.brisk_pack_options) C.brisk_status {
		return C.brisk_unpack(cin, cout, c)
	})
}
