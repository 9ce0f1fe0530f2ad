// SPDX-License-Identifier: MIT

// Package brisk is the Go binding of brisk, a CPU inference engine for
// quantized Llama-family models. It wraps the stable C API of libbrisk
// (include/brisk/brisk.h) through cgo and finds the library with pkg-config:
//
//	PKG_CONFIG_PATH=/path/to/brisk/build/capi go build   # an uninstalled build tree
//	go build                                              # an installed libbrisk
//
// Types and their threads, as in brisk.h:
//
//   - Model is immutable after OpenModel: any number of goroutines may use
//     one Model at once.
//   - Session, Sampler, Engine and the Sequences of an Engine belong to one
//     goroutine at a time (hand them over, but do not share them).
//
// Every type has Close. Finalizers free what was not closed, as a safety net
// only: native memory (KV caches, thread pools) is large, so close explicitly.
// A Model closed while sessions or engines made from it are open is released
// when the last of them closes.
//
// Errors are *Error values carrying the brisk status and the library's
// message; compare them with the sentinels, errors.Is(err, brisk.ErrChecksum),
// or take the details with errors.As(err, &e) for an e of type *brisk.Error.
//
// The toolchain (convert, quantize, calibrate, verify, add-manifest, pack,
// unpack, perplexity, compare) takes a context.Context: cancelling it stops
// the call, which then fails with an error that is both ErrCancelled and
// the context's error (context.Canceled or context.DeadlineExceeded).
//
// Of brisk_experimental.h, whose calls may change in any release, the
// package binds Engine.ReadBandwidth, the figures and JSON of Perplexity
// and Compare results, and Doctor (the system checks of `brisk doctor`,
// which takes a context too).
package brisk

/*
#cgo pkg-config: brisk
#include <stdlib.h>
#include <brisk/brisk.h>
#include "bridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Versions of the brisk.h this package was compiled against.
const (
	HeaderVersionMajor    = C.BRISK_VERSION_MAJOR
	HeaderVersionMinor    = C.BRISK_VERSION_MINOR
	HeaderVersionPatch    = C.BRISK_VERSION_PATCH
	HeaderABIVersionMajor = C.BRISK_ABI_VERSION_MAJOR
	HeaderABIVersionMinor = C.BRISK_ABI_VERSION_MINOR
)

// Version is the version of the libbrisk actually loaded, e.g. "0.1.0".
func Version() string { return C.GoString(C.brisk_version()) }

// ABIVersion is the ABI (major, minor) of the libbrisk actually loaded.
func ABIVersion() (major, minor uint32) {
	v := uint32(C.brisk_abi_version())
	return v >> 16, v & 0xffff
}

// Status is a brisk_status code. It implements error, so that
// errors.Is(err, StatusContextFull) picks out one kind of failure.
type Status int32

const (
	StatusOK              Status = C.BRISK_OK
	StatusInvalidArgument Status = C.BRISK_ERR_INVALID_ARGUMENT
	StatusNotFound        Status = C.BRISK_ERR_NOT_FOUND
	StatusIO              Status = C.BRISK_ERR_IO
	StatusBadFormat       Status = C.BRISK_ERR_BAD_FORMAT
	StatusUnsupported     Status = C.BRISK_ERR_UNSUPPORTED
	StatusOutOfMemory     Status = C.BRISK_ERR_OUT_OF_MEMORY
	StatusContextFull     Status = C.BRISK_ERR_CONTEXT_FULL
	StatusBufferTooSmall  Status = C.BRISK_ERR_BUFFER_TOO_SMALL
	StatusCancelled       Status = C.BRISK_ERR_CANCELLED
	StatusChecksum        Status = C.BRISK_ERR_CHECKSUM
	StatusInternal        Status = C.BRISK_ERR_INTERNAL
)

// Sentinel errors, one per failing brisk_status: errors.Is(err, ErrChecksum)
// is true for every error of a call that returned BRISK_ERR_CHECKSUM. They
// are the Status values themselves, so errors.Is(err, StatusChecksum) is the
// same test.
const (
	ErrInvalidArgument = StatusInvalidArgument
	ErrNotFound        = StatusNotFound
	ErrIO              = StatusIO
	ErrBadFormat       = StatusBadFormat
	ErrUnsupported     = StatusUnsupported
	ErrOutOfMemory     = StatusOutOfMemory
	ErrContextFull     = StatusContextFull
	ErrBufferTooSmall  = StatusBufferTooSmall
	ErrCancelled       = StatusCancelled
	ErrChecksum        = StatusChecksum
	ErrInternal        = StatusInternal
)

// String gives the C name, e.g. "BRISK_ERR_IO".
func (s Status) String() string { return C.GoString(C.brisk_status_name(C.brisk_status(s))) }

// Error makes a Status usable as an error target for errors.Is.
func (s Status) Error() string { return s.String() }

// Error is a failed brisk call: which call (Op), its status and the text of
// brisk_last_error() read on the same OS thread right after the call.
type Error struct {
	Op      string
	Status  Status
	Message string
	// Cause is what made brisk stop when it was not brisk's own doing: the
	// context's error for a cancelled toolchain call, else nil.
	Cause error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("brisk: %s: %s", e.Op, e.Status)
	}
	return fmt.Sprintf("brisk: %s: %s (%s)", e.Op, e.Message, e.Status)
}

// Is reports whether target is this error's Status.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// Unwrap gives the Cause, so errors.Is(err, context.Canceled) works too.
func (e *Error) Unwrap() error { return e.Cause }

func errorf(op string, status Status, format string, args ...interface{}) error {
	return &Error{Op: op, Status: status, Message: fmt.Sprintf(format, args...)}
}

func closedError(op, what string) error {
	return errorf(op, StatusInvalidArgument, "the %s is closed", what)
}

// call runs one fallible C call and, on failure, reads brisk_last_error()
// before the goroutine can move to another OS thread (the message is
// thread-local in C).
func call(op string, f func() C.brisk_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == C.BRISK_OK {
		return nil
	}
	return &Error{Op: op, Status: Status(st), Message: C.GoString(C.brisk_last_error())}
}

// callText runs a (buf, cap, needed) call that writes NUL-terminated text,
// growing the buffer when brisk asks for more.
func callText(op string, f func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status) (string, error) {
	buf := make([]byte, 256)
	for attempt := 0; ; attempt++ {
		var needed C.size_t
		err := call(op, func() C.brisk_status {
			return f((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)
		})
		if err == nil {
			if needed == 0 {
				return "", nil
			}
			return string(buf[:needed-1]), nil
		}
		if errors.Is(err, StatusBufferTooSmall) && int(needed) > len(buf) && attempt < 4 {
			buf = make([]byte, int(needed))
			continue
		}
		return "", err
	}
}

// callTokens is callText for token ids.
func callTokens(op string, guess int, f func(buf *C.int32_t, cap C.size_t, needed *C.size_t) C.brisk_status) ([]int32, error) {
	if guess < 16 {
		guess = 16
	}
	buf := make([]int32, guess)
	for attempt := 0; ; attempt++ {
		var needed C.size_t
		err := call(op, func() C.brisk_status {
			return f((*C.int32_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)
		})
		if err == nil {
			return buf[:int(needed)], nil
		}
		if errors.Is(err, StatusBufferTooSmall) && int(needed) > len(buf) && attempt < 4 {
			buf = make([]int32, int(needed))
			continue
		}
		return nil, err
	}
}

// cstr copies s into C memory (with a NUL); free it with C.free.
func cstr(s string) *C.char { return C.CString(s) }

func int32Ptr(s []int32) *C.int32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&s[0]))
}

func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// Type is a tensor element type (GGUF's type ids), used for KV caches.
type Type int32

const (
	TypeAuto Type = C.BRISK_TYPE_AUTO // let brisk choose
	TypeF32  Type = C.BRISK_TYPE_F32
	TypeF16  Type = C.BRISK_TYPE_F16
	TypeQ4_0 Type = C.BRISK_TYPE_Q4_0
	TypeQ4_1 Type = C.BRISK_TYPE_Q4_1
	TypeQ8_0 Type = C.BRISK_TYPE_Q8_0
	TypeQ4K  Type = C.BRISK_TYPE_Q4_K
	TypeQ5K  Type = C.BRISK_TYPE_Q5_K
	TypeQ6K  Type = C.BRISK_TYPE_Q6_K
	TypeBF16 Type = C.BRISK_TYPE_BF16
)

// String is the type's lower-case name as the tools spell it ("q4_0",
// "f16", "auto"; brisk_type_name), or "Type(N)" for a value that is not a
// brisk type.
func (t Type) String() string {
	if n := C.brisk_type_name(C.brisk_type(t)); n != nil {
		return C.GoString(n)
	}
	return fmt.Sprintf("Type(%d)", int32(t))
}

// TypeFromName gives the type named name (as Type.String spells it, in any
// case); errors.Is(err, StatusNotFound) for an unknown name, whose message
// lists the known ones.
func TypeFromName(name string) (Type, error) {
	cname := cstr(name)
	defer C.free(unsafe.Pointer(cname))
	var t C.brisk_type
	if err := call("type from name", func() C.brisk_status { return C.brisk_type_from_name(cname, &t) }); err != nil {
		return TypeAuto, err
	}
	return Type(t), nil
}

// PhysicalCores is the number of physical cores this process may run on
// (SMT siblings counted once), at least 1: the thread count that NThreads 0
// gives where an option says "one per physical core".
func PhysicalCores() int { return int(C.brisk_physical_cores()) }

// LogLevel is the severity of a message passed to ModelOptions.Log.
type LogLevel int32

const (
	LogError LogLevel = C.BRISK_LOG_ERROR
	LogWarn  LogLevel = C.BRISK_LOG_WARN
	LogInfo  LogLevel = C.BRISK_LOG_INFO
	LogDebug LogLevel = C.BRISK_LOG_DEBUG
)

// Flags select tokenizer behaviour (brisk_tokenize, brisk_detokenize,
// brisk_token_to_piece and brisk_sequence_add_text).
type Flags uint32

const (
	// AddBOS adds BOS if the model's metadata asks for it (tokenize), or
	// drops the space the tokenizer put after BOS (detokenize).
	AddBOS Flags = C.BRISK_TOKENIZE_ADD_BOS
	// ParseSpecial recognises "<s>", "<|im_start|>"... in the text.
	ParseSpecial Flags = C.BRISK_TOKENIZE_PARSE_SPECIAL
	// PieceSpecial makes TokenToPiece give control tokens' text ("<s>").
	PieceSpecial Flags = C.BRISK_PIECE_SPECIAL
)

// StopReason says why generation stopped.
type StopReason int32

const (
	StopMaxTokens   StopReason = C.BRISK_STOP_MAX_TOKENS
	StopEOS         StopReason = C.BRISK_STOP_EOS
	StopCallback    StopReason = C.BRISK_STOP_CALLBACK
	StopContextFull StopReason = C.BRISK_STOP_CONTEXT_FULL
)

func (r StopReason) String() string {
	switch r {
	case StopMaxTokens:
		return "max_tokens"
	case StopEOS:
		return "eos"
	case StopCallback:
		return "callback"
	case StopContextFull:
		return "context_full"
	}
	return fmt.Sprintf("StopReason(%d)", int32(r))
}
