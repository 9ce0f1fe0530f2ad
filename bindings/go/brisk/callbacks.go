// SPDX-License-Identifier: MIT

package brisk

// The exported trampolines that brisk calls back into. C holds only a
// cgo.Handle (an integer) as user_data, never a Go pointer. This file's
// preamble may only declare, because it has //export functions; the C
// shims that adapt brisk's callback types live in bridge.c.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"runtime/cgo"
)

// panicSlot keeps a panic raised inside a callback: unwinding through C++
// frames would skip their cleanup, so the trampoline recovers, tells brisk
// to stop, and the Go caller re-panics once the C call has returned.
type panicSlot struct {
	value    interface{}
	panicked bool
}

func (p *panicSlot) record(v interface{}) {
	if !p.panicked {
		p.value, p.panicked = v, true
	}
}

// rethrow re-raises a recorded panic on the calling goroutine.
func (p *panicSlot) rethrow() {
	if p.panicked {
		v := p.value
		p.value, p.panicked = nil, false
		panic(v)
	}
}

type logCallback struct {
	fn    func(level LogLevel, message string)
	panic panicSlot
}

type abortCallback struct {
	fn    func() bool
	panic *panicSlot
}

type tokenCallback struct {
	fn    func(token int32, text string) bool
	panic *panicSlot // shared by the sequences of one engine
	dead  bool       // panicked, or its sequence was closed: only "stop" from now on
}

//export briskGoLog
func briskGoLog(h C.uintptr_t, level C.int, message *C.char) {
	cb := cgo.Handle(h).Value().(*logCallback)
	if cb.panic.panicked {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			cb.panic.record(r)
		}
	}()
	cb.fn(LogLevel(level), C.GoString(message))
}

//export briskGoAbort
func briskGoAbort(h C.uintptr_t) (stop C.int) {
	cb := cgo.Handle(h).Value().(*abortCallback)
	if cb.panic.panicked {
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			cb.panic.record(r)
			stop = 1
		}
	}()
	if cb.fn() {
		return 1
	}
	return 0
}

//export briskGoToken
func briskGoToken(h C.uintptr_t, token C.int32_t, text *C.char, n C.size_t) (stop C.int) {
	cb := cgo.Handle(h).Value().(*tokenCallback)
	if cb.dead {
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			cb.dead = true
			cb.panic.record(r)
			stop = 1
		}
	}()
	if cb.fn(int32(token), C.GoStringN(text, C.int(n))) {
		return 0
	}
	return 1
}

// ---- toolchain calls -----------------------------------------------------------

// hooks are the callbacks of one toolchain call (convert, verify, pack,
// quantize, ...), all behind one cgo.Handle. brisk calls them on the thread
// that made the call, one at a time. After a panic every later callback is
// skipped and the abort callback asks brisk to stop; the caller re-panics.
type hooks struct {
	done     <-chan struct{} // the call's context; nil: cannot be cancelled
	progress func(Progress)
	log      func(level LogLevel, message string)
	mismatch func(Mismatch)
	tensor   func(TensorInfo)
	// progressCancels: the call has no abort callback (doctor), so the
	// progress callback also stops it once done is closed.
	progressCancels bool
	panic           panicSlot
}

func (k *hooks) guard() {
	if r := recover(); r != nil {
		k.panic.record(r)
	}
}

//export briskGoHookProgress
func briskGoHookProgress(h C.uintptr_t, stage *C.char, done, total C.uint64_t, detail *C.char) (stop C.int) {
	k := cgo.Handle(h).Value().(*hooks)
	if k.panic.panicked {
		return 1
	}
	defer func() {
		if k.panic.panicked {
			stop = 1
		}
	}()
	defer k.guard()
	if k.progress != nil {
		k.progress(Progress{Stage: C.GoString(stage), Done: uint64(done), Total: uint64(total), Detail: C.GoString(detail)})
	}
	if k.progressCancels && k.done != nil {
		select {
		case <-k.done:
			return 1
		default:
		}
	}
	return 0
}

//export briskGoHookAbort
func briskGoHookAbort(h C.uintptr_t) C.int {
	k := cgo.Handle(h).Value().(*hooks)
	if k.panic.panicked {
		return 1
	}
	if k.done != nil {
		select {
		case <-k.done:
			return 1
		default:
		}
	}
	return 0
}

//export briskGoHookLog
func briskGoHookLog(h C.uintptr_t, level C.int, message *C.char) {
	k := cgo.Handle(h).Value().(*hooks)
	if k.panic.panicked {
		return
	}
	defer k.guard()
	k.log(LogLevel(level), C.GoString(message))
}

//export briskGoHookMismatch
func briskGoHookMismatch(h C.uintptr_t, where, detail *C.char) {
	k := cgo.Handle(h).Value().(*hooks)
	if k.panic.panicked {
		return
	}
	defer k.guard()
	k.mismatch(Mismatch{Where: C.GoString(where), Detail: C.GoString(detail)})
}

//export briskGoHookTensor
func briskGoHookTensor(h C.uintptr_t, name *C.char, src, dst C.int32_t, elements, bytes C.uint64_t, why *C.char) {
	k := cgo.Handle(h).Value().(*hooks)
	if k.panic.panicked {
		return
	}
	defer k.guard()
	k.tensor(TensorInfo{
		Name: C.GoString(name), SrcType: Type(src), Type: Type(dst),
		Elements: uint64(elements), Bytes: uint64(bytes), Why: C.GoString(why),
	})
}
