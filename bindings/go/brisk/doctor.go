// SPDX-License-Identifier: MIT

package brisk

// The system checks of `brisk doctor` (brisk_doctor_* of
// brisk_experimental.h): experimental, like the header they come from; the
// checks, their names and the report's JSON may change in any release.

/*
#include <stdlib.h>
#include <brisk/brisk.h>
#include <brisk/brisk_experimental.h>
#include "bridge.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"unsafe"
)

// DoctorOptions are the settings of Doctor. Start from
// DefaultDoctorOptions(); nil means the defaults.
//
// Experimental (brisk_experimental.h): may change in any release.
type DoctorOptions struct {
	// Root prefixes every /proc and /sys read ("/tmp/fake" reads
	// /tmp/fake/proc/meminfo); "": this machine.
	Root string
	// ModelPath is a model to check (memory plan, disk, read speed); "":
	// none. A model that cannot be opened is a failed "model" check in the
	// report, not an error of Doctor.
	ModelPath string
	NThreads  uint32 // threads for the measurements; 0: brisk's default
	// LoadSeconds is the length of the sustained load of the throttling
	// test (default 20, at most 3600); 0 skips it.
	LoadSeconds float64
	// Measure (the default) also measures memory bandwidth, the model's
	// read speed and throttling, and asks the OS for AMX; false only reads
	// files.
	Measure bool
	// OnProgress receives the load test's progress: stage "doctor", Done of
	// Total seconds of load.
	OnProgress func(Progress)
}

// DefaultDoctorOptions gives brisk_doctor_options_init's defaults.
//
// Experimental (brisk_experimental.h): may change in any release.
func DefaultDoctorOptions() DoctorOptions {
	var c C.brisk_doctor_options
	C.brisk_go_doctor_options_init(&c)
	o := DoctorOptions{NThreads: uint32(c.n_threads), LoadSeconds: float64(c.load_seconds), Measure: c.measure != 0}
	if c.root != nil {
		o.Root = C.GoString(c.root)
	}
	if c.model_path != nil {
		o.ModelPath = C.GoString(c.model_path)
	}
	return o
}

// DoctorCheck is one finding of Doctor.
type DoctorCheck struct {
	Check  string `json:"check"`  // "cpu", "cores", "governor", "memory", "disk", ...
	Status string `json:"status"` // "ok", "warn", "fail" or "info"
	Value  string `json:"value"`  // what was found
	Advice string `json:"advice"` // what to do; "" when nothing
}

// DoctorReport is what Doctor found, parsed from brisk's JSON report.
//
// Experimental (brisk_experimental.h): checks and fields may be added,
// renamed or dropped in any release; JSON keeps everything brisk reported.
type DoctorReport struct {
	// Threads is the -t (worker threads) brisk chooses on this machine.
	Threads int           `json:"threads"`
	Checks  []DoctorCheck `json:"checks"`
	// How many checks have each status.
	OK   int `json:"ok"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	// JSON is the whole report as brisk_doctor_report_json gives it.
	JSON string `json:"-"`
}

// Doctor runs the system checks of `brisk doctor`: CPU and kernels, cores
// and cgroup quota, governor, turbo, memory, swap, transparent huge pages,
// the model's disk and, with Measure, memory bandwidth, the model's read
// speed and throttling under load. A failed check is a finding in the
// report (Status "fail"), not an error. Cancelling ctx stops the load test
// (ErrCancelled, and the context's error).
//
// Experimental (brisk_experimental.h, ABI 0.4): may change in any release.
func Doctor(ctx context.Context, opts *DoctorOptions) (*DoctorReport, error) {
	if opts == nil {
		d := DefaultDoctorOptions()
		opts = &d
	}
	var c C.brisk_doctor_options
	C.brisk_go_doctor_options_init(&c)
	c.root = optString(opts.Root)
	defer C.free(unsafe.Pointer(c.root))
	c.model_path = optString(opts.ModelPath)
	defer C.free(unsafe.Pointer(c.model_path))
	c.n_threads = C.uint32_t(opts.NThreads)
	c.load_seconds = C.double(opts.LoadSeconds)
	c.measure = cbool(opts.Measure)

	const op = "doctor"
	var rep *C.brisk_doctor_report
	// brisk_doctor_options has no abort callback: the progress callback
	// also reports the context's cancellation.
	k := &hooks{progress: opts.OnProgress, progressCancels: true}
	err := runHooked(ctx, op, k, func(h C.uintptr_t, which C.uint) { C.brisk_go_doctor_hooks(&c, h, which) },
		func() C.brisk_status { return C.brisk_doctor_run(&c, &rep) })
	if rep != nil {
		defer C.brisk_doctor_report_free(rep)
	}
	if err != nil {
		return nil, err
	}
	text, err := callText(op+" json", func(buf *C.char, cap C.size_t, needed *C.size_t) C.brisk_status {
		return C.brisk_doctor_report_json(rep, buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	r := &DoctorReport{}
	if err := json.Unmarshal([]byte(text), r); err != nil {
		return nil, errorf(op+" json", StatusInternal, "cannot parse the report: %v", err)
	}
	r.JSON = text
	return r, nil
}
