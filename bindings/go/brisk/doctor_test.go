// SPDX-License-Identifier: MIT

package brisk

// Doctor (experimental) through the binding: this machine's files, a fake
// /proc tree, a model that cannot be opened, bad options. Nothing here
// measures (Measure false): the machine may be running benchmarks. The
// progress callback only runs during the load test, so the test of it and
// of cancellation runs only with BRISK_TEST_DOCTOR_MEASURE=1.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkReport tests what holds for every report: known statuses, counts
// that add up to the checks, and JSON that parses to the same report.
func checkReport(t *testing.T, r *DoctorReport) {
	t.Helper()
	if len(r.Checks) == 0 || r.Threads < 1 {
		t.Fatalf("no checks or threads: %+v", r)
	}
	n := map[string]int{}
	for _, c := range r.Checks {
		if c.Check == "" || c.Value == "" {
			t.Errorf("check without a name or value: %+v", c)
		}
		n[c.Status]++
	}
	if n["ok"] != r.OK || n["warn"] != r.Warn || n["fail"] != r.Fail || n["info"] != r.Info ||
		r.OK+r.Warn+r.Fail+r.Info != len(r.Checks) {
		t.Fatalf("counts ok %d warn %d fail %d info %d for %d checks %v", r.OK, r.Warn, r.Fail, r.Info, len(r.Checks), n)
	}
	var raw map[string]interface{}
	if err := json.Unmarshal([]byte(r.JSON), &raw); err != nil || len(raw["checks"].([]interface{})) != len(r.Checks) {
		t.Fatalf("JSON %q: %v", r.JSON, err)
	}
}

func findCheck(t *testing.T, r *DoctorReport, name string) DoctorCheck {
	t.Helper()
	for _, c := range r.Checks {
		if c.Check == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, r.Checks)
	return DoctorCheck{}
}

// fakeRoot writes a minimal /proc: 3 processors of a named CPU with AVX2,
// 8000 MiB of memory of which 4000 MiB available, and no /sys at all.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	var cpuinfo strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&cpuinfo, "processor\t: %d\nmodel name\t: Fake CPU 1234\nflags\t\t: fpu sse2 avx avx2 fma f16c\n\n", i)
	}
	for name, text := range map[string]string{
		"proc/cpuinfo": cpuinfo.String(),
		"proc/meminfo": "MemTotal:        8192000 kB\nMemAvailable:    4096000 kB\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func filesOnly() *DoctorOptions {
	o := DefaultDoctorOptions()
	o.Measure, o.LoadSeconds = false, 0
	return &o
}

func TestDoctorDefaults(t *testing.T) {
	o := DefaultDoctorOptions()
	if o.Root != "" || o.ModelPath != "" || o.NThreads != 0 || o.LoadSeconds != 20 || !o.Measure || o.OnProgress != nil {
		t.Fatalf("doctor defaults %+v", o)
	}
}

// This machine, files only.
func TestDoctorThisMachine(t *testing.T) {
	r, err := Doctor(context.Background(), filesOnly())
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r)
	for _, name := range []string{"cpu", "cores", "memory", "swap"} {
		findCheck(t, r, name)
	}
	for _, c := range r.Checks {
		switch c.Check {
		case "bandwidth", "throttling", "disk_read", "model":
			t.Errorf("files only, no model, yet %+v", c)
		}
	}
}

// Root reads the fake tree instead of /proc.
func TestDoctorFakeRoot(t *testing.T) {
	o := filesOnly()
	o.Root = fakeRoot(t)
	r, err := Doctor(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r)
	if cpu := findCheck(t, r, "cpu"); !strings.Contains(cpu.Value, "Fake CPU 1234") || !strings.Contains(cpu.Value, "avx2") {
		t.Errorf("cpu %+v", cpu)
	}
	if m := findCheck(t, r, "memory"); m.Status != "ok" || !strings.Contains(m.Value, "4000 MiB available of 8000 MiB") {
		t.Errorf("memory %+v", m)
	}
	// No sysfs topology: the processors of cpuinfo are the cores.
	if c := findCheck(t, r, "cores"); r.Threads != 3 || !strings.Contains(c.Value, "3 physical cores") {
		t.Errorf("threads %d, cores %+v", r.Threads, c)
	}
	if s := findCheck(t, r, "swap"); s.Value != "no swap" {
		t.Errorf("swap %+v", s)
	}
	// NThreads overrides the choice.
	o.NThreads = 2
	if r, err = Doctor(context.Background(), o); err != nil || r.Threads != 2 {
		t.Fatalf("NThreads 2: %v %+v", err, r)
	}
}

// A model that cannot be opened is a failed check naming the path, not an
// error; options out of range are an error.
func TestDoctorBadModelAndOptions(t *testing.T) {
	o := filesOnly()
	o.Root = fakeRoot(t)
	o.ModelPath = filepath.Join(o.Root, "no-such-model.gguf")
	r, err := Doctor(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r)
	m := findCheck(t, r, "model")
	if m.Status != "fail" || !strings.Contains(m.Value, o.ModelPath) || m.Advice == "" || r.Fail < 1 {
		t.Fatalf("model %+v, %d failed", m, r.Fail)
	}

	o.ModelPath = ""
	o.LoadSeconds = -1
	_, err = Doctor(context.Background(), o)
	var be *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &be) || !strings.Contains(be.Message, "load_seconds") {
		t.Fatalf("load_seconds -1: %v", err)
	}
	// A cancelled context stops it before it starts.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Doctor(ctx, filesOnly()); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// The load test's progress, cancelled from the callback, then a panic in
// it (each run measures bandwidth over 256 MiB and loads one thread for
// about half a second): only with BRISK_TEST_DOCTOR_MEASURE=1.
func TestDoctorProgressAndCancel(t *testing.T) {
	if os.Getenv("BRISK_TEST_DOCTOR_MEASURE") != "1" {
		t.Skip("measures the machine: set BRISK_TEST_DOCTOR_MEASURE=1")
	}
	o := DefaultDoctorOptions()
	o.Root, o.NThreads, o.LoadSeconds = fakeRoot(t), 1, 30
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []Progress
	o.OnProgress = func(p Progress) {
		got = append(got, p)
		cancel()
	}
	_, err := Doctor(ctx, &o)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled doctor: %v", err)
	}
	if len(got) != 1 || got[0].Stage != "doctor" || got[0].Total != 30 || got[0].Done > 2 {
		t.Fatalf("progress %+v", got)
	}
	// A panic in the callback stops the call and reaches the caller.
	func() {
		defer func() {
			if r := recover(); r != "doctor panic" {
				t.Fatalf("recovered %v", r)
			}
		}()
		o.OnProgress = func(Progress) { panic("doctor panic") }
		_, _ = Doctor(context.Background(), &o)
		t.Fatal("the panic was lost")
	}()
}
