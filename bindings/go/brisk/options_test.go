// SPDX-License-Identifier: MIT

package brisk

// The option fields that reach brisk only through the binding's struct
// mapping: each test fails if its field is dropped on the way to C.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Fields left unset keep brisk's defaults (the C *_options_init values).
func TestOptionDefaults(t *testing.T) {
	mo := DefaultModelOptions()
	if mo.Mlock || mo.NoMmap || mo.PlanMode != PlanDefault || mo.PlanCacheDir != "" || mo.PlanThreads != 0 {
		t.Fatalf("model defaults %+v", mo)
	}
	so := DefaultSessionOptions()
	if so.PinCaller || so.MemoryBudget != 0 {
		t.Fatalf("session defaults %+v", so)
	}
	if eo := DefaultEngineOptions(); eo.PinCaller {
		t.Fatalf("engine defaults %+v", eo)
	}
	if smp := DefaultSamplerOptions(); smp.PresencePenalty != 0 || smp.FrequencyPenalty != 0 {
		t.Fatalf("sampler defaults %+v", smp)
	}
	qo := DefaultQuantizeOptions()
	if qo.Mlock || qo.NoMmap || qo.CalibrationData != nil {
		t.Fatalf("quantize defaults %+v", qo)
	}
	if o := DefaultConvertOptions(); o.Mlock || o.NoMmap {
		t.Fatalf("convert defaults %+v", o)
	}
	if o := DefaultVerifyOptions(); o.Mlock || o.NoMmap {
		t.Fatalf("verify defaults %+v", o)
	}
	if o := DefaultPackOptions(); o.Mlock || o.NoMmap {
		t.Fatalf("pack defaults %+v", o)
	}
	if o := DefaultCalibrateOptions(); o.Mlock || o.NoMmap {
		t.Fatalf("calibrate defaults %+v", o)
	}
	for m, want := range map[PlanMode]string{PlanDefault: "default", PlanAuto: "auto", PlanFixed: "fixed",
		PlanMeasure: "measure", PlanMode(9): "PlanMode(9)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", int32(m), m.String(), want)
		}
	}
}

// Greedy sampling with presence and frequency penalties picks, at every
// step, the argmax of the session's logits lowered as brisk.h says: by
// presence once a token is among the last RepeatLastN accepted, plus
// frequency times its count there. The penalties and their sums are exact
// in float32, so the check is exact; each case (presence only, frequency
// only, both) differs from the unpenalised run.
func TestSamplerPresenceFrequencyPenalty(t *testing.T) {
	m := openStories(t)
	prompt := tokenize(t, m, "Once upon a time")
	const n, window = 48, 16
	plain := greedyAlone(t, m, prompt, n)

	for _, pf := range [][2]float32{{1.5, 0}, {0, 0.75}, {0.5, 0.75}} {
		presence, frequency := pf[0], pf[1]
		s := newSession(t, m)
		if err := s.Eval(prompt); err != nil {
			t.Fatal(err)
		}
		o := GreedySamplerOptions()
		o.RepeatLastN, o.PresencePenalty, o.FrequencyPenalty = window, presence, frequency
		smp, err := NewSampler(&o)
		if err != nil {
			t.Fatal(err)
		}
		var got, recent []int32
		for i := 0; i < n; i++ {
			logits, err := s.Logits()
			if err != nil {
				t.Fatal(err)
			}
			count := map[int32]int{}
			for _, tok := range recent {
				count[tok]++
			}
			pen := func(i int) float32 {
				l := logits[i]
				if c := count[int32(i)]; c > 0 {
					l -= presence + frequency*float32(c)
				}
				return l
			}
			best := 0
			for j := 1; j < len(logits); j++ {
				if pen(j) > pen(best) {
					best = j
				}
			}
			tok, err := smp.Sample(s)
			if err != nil {
				t.Fatal(err)
			}
			if tok != int32(best) {
				t.Fatalf("presence %g, frequency %g, step %d: sampled %d, the penalised argmax is %d (tokens so far %v)",
					presence, frequency, i, tok, best, got)
			}
			smp.Accept(tok)
			if recent = append(recent, tok); len(recent) > window {
				recent = recent[1:]
			}
			got = append(got, tok)
			if err := s.Eval([]int32{tok}); err != nil {
				t.Fatal(err)
			}
		}
		smp.Close()
		s.Close()
		if equalIDs(got, plain) {
			t.Fatalf("presence %g, frequency %g changed nothing: %v", presence, frequency, got)
		}
	}

	// A huge frequency penalty alone: no token repeats within the window,
	// also through Session.Generate and an engine's Sequence.Generate.
	o := GreedySamplerOptions()
	o.RepeatLastN, o.FrequencyPenalty = 64, 1000
	noRepeat := func(what string, ids []int32) {
		t.Helper()
		seen := map[int32]bool{}
		for _, tok := range ids {
			if seen[tok] {
				t.Fatalf("%s: token %d repeats: %v", what, tok, ids)
			}
			seen[tok] = true
		}
	}
	s2 := newSession(t, m)
	if err := s2.Eval(prompt); err != nil {
		t.Fatal(err)
	}
	smp2, err := NewSampler(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer smp2.Close()
	noRepeat("session", generateIDs(t, s2, smp2, 40))
	ids := engineGenerateIDs(t, m, engineOpts(1), prompt, &o, 40)
	if len(ids) != 40 {
		t.Fatalf("engine generated %d tokens", len(ids))
	}
	noRepeat("engine", ids)
}

func TestModelNoMmapAndMlock(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	mapped := openStories(t)
	prompt := tokenize(t, mapped, "Once upon a time")
	want := greedyAlone(t, mapped, prompt, 24)

	o := DefaultModelOptions()
	o.NoMmap = true
	m, err := OpenModel(path, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := greedyAlone(t, m, prompt, 24); !equalIDs(got, want) {
		t.Fatalf("no_mmap: %v, mapped: %v", got, want)
	}

	// mlock succeeds or is refused naming RLIMIT_MEMLOCK, whatever this
	// machine's limit is; either way with and without no_mmap.
	for _, noMmap := range []bool{false, true} {
		o = DefaultModelOptions()
		o.Mlock, o.NoMmap = true, noMmap
		m, err := OpenModel(path, &o)
		if err != nil {
			if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "RLIMIT_MEMLOCK") {
				t.Fatalf("mlock (no_mmap %v): %v", noMmap, err)
			}
			continue
		}
		got := greedyAlone(t, m, prompt, 24)
		m.Close()
		if !equalIDs(got, want) {
			t.Fatalf("mlock (no_mmap %v): %v, want %v", noMmap, got, want)
		}
	}
}

// PlanFixed measures nothing; PlanMeasure measures with PlanThreads and
// caches in PlanCacheDir, where PlanAuto then finds the plan. The kernel
// plan text says which.
func TestPlanModes(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	dir := t.TempDir()
	plan := func(mode PlanMode) string {
		t.Helper()
		o := DefaultModelOptions()
		o.PlanMode, o.PlanCacheDir, o.PlanThreads = mode, dir, 1
		m, err := OpenModel(path, &o)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		text, err := m.KernelPlan()
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	if p := plan(PlanFixed); !strings.HasPrefix(p, "kernel plan: fixed") {
		t.Fatalf("fixed: %q", p)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a fixed plan wrote to the cache: %v", entries)
	}
	p := plan(PlanMeasure)
	if !strings.HasPrefix(p, "kernel plan: measured") || !strings.Contains(p, "for 1 thread (") || !strings.Contains(p, dir) {
		t.Fatalf("measure (1 thread, cached in %s): %q", dir, p)
	}
	if p := plan(PlanAuto); !strings.HasPrefix(p, "kernel plan: cached") || !strings.Contains(p, dir) {
		t.Fatalf("auto after measure (cache %s): %q", dir, p)
	}
	o := DefaultModelOptions()
	o.PlanMode = 7
	if _, err := OpenModel(path, &o); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "plan_mode") {
		t.Fatalf("plan mode 7: %v", err)
	}
}

func TestSessionMemoryBudgetAndPinCaller(t *testing.T) {
	m := openStories(t)
	o := *sessionOpts()
	o.MemoryBudget = 4096
	if s, err := m.NewSession(&o); err == nil {
		s.Close()
		t.Fatal("a 4 KiB session budget was accepted")
	} else if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "not enough memory") ||
		!strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("4 KiB budget: %v", err)
	}
	o.MemoryBudget = 1 << 30
	prompt := tokenize(t, m, "Once upon a time")
	want := greedyAlone(t, m, prompt, 16)
	smpOpts := GreedySamplerOptions()
	run := func(o *SessionOptions) []int32 {
		t.Helper()
		s, err := m.NewSession(o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Eval(prompt); err != nil {
			t.Fatal(err)
		}
		smp, err := NewSampler(&smpOpts)
		if err != nil {
			t.Fatal(err)
		}
		defer smp.Close()
		return generateIDs(t, s, smp, 16)
	}
	if got := run(&o); !equalIDs(got, want) {
		t.Fatalf("1 GiB budget: %v, want %v", got, want)
	}

	// Pinning the caller (on a thread of its own, given back afterwards)
	// gives the same tokens, for a session and for an engine.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o.MemoryBudget, o.NoPin, o.PinCaller, o.NThreads = 0, false, true, 1
	if got := run(&o); !equalIDs(got, want) {
		t.Fatalf("pin_caller session: %v, want %v", got, want)
	}
	eo := *engineOpts(1)
	eo.NoPin, eo.PinCaller, eo.NThreads = false, true, 1
	if got := engineGenerateIDs(t, m, &eo, prompt, &smpOpts, 16); !equalIDs(got, want) {
		t.Fatalf("pin_caller engine: %v, want %v", got, want)
	}
}

// Quantizing to a budget measures KL on the calibration text only when it
// is named (CalibrationData); without it, sensitivity falls back to
// weighted error. The method is recorded in the output's metadata.
func TestQuantizeCalibrationDataAndToolReading(t *testing.T) {
	dir := t.TempDir()
	model := testFile(t, "models/stories260K.gguf")
	data := testFile(t, "data/splits/stories-calib.txt")
	co := DefaultCalibrateOptions()
	co.NCtx, co.MaxTokens, co.NoMmap = 128, 256, true
	stats := filepath.Join(dir, "s.calib")
	if err := Calibrate(context.Background(), model, stats, []string{data}, &co); err != nil {
		t.Fatal(err)
	}
	method := func(name string, calibData []string) string {
		t.Helper()
		qo := DefaultQuantizeOptions()
		qo.Preset, qo.Calibration, qo.TargetSize = "q4_0", stats, 300000
		qo.SensitivityTokens, qo.EvalMaxChunks, qo.Report = 128, 2, false
		qo.CalibrationData, qo.NoMmap = calibData, true
		out := filepath.Join(dir, name+".gguf")
		if err := Quantize(context.Background(), model, out, &qo); err != nil {
			t.Fatal(err)
		}
		m, err := OpenModel(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		v, err := m.Meta("brisk.recipe.method")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := method("with", []string{data}); got != "kl-scaled-error" {
		t.Fatalf("with calibration data: method %q", got)
	}
	if got := method("without", nil); got != "weighted-error" {
		t.Fatalf("without calibration data: method %q", got)
	}

	// The toolchain's mlock and no_mmap reach brisk: no_mmap reads the
	// same bytes; mlock succeeds or is refused naming RLIMIT_MEMLOCK.
	gguf := withManifest(t, dir)
	want, err := Verify(context.Background(), gguf, nil)
	if err != nil {
		t.Fatal(err)
	}
	vo := DefaultVerifyOptions()
	vo.NoMmap = true
	if n, err := Verify(context.Background(), gguf, &vo); err != nil || n != want {
		t.Fatalf("verify no_mmap: %d %v, want %d", n, err, want)
	}
	mlockOK := func(what string, err error) {
		t.Helper()
		if err != nil && (!errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "RLIMIT_MEMLOCK")) {
			t.Fatalf("%s with mlock: %v", what, err)
		}
	}
	vo = DefaultVerifyOptions()
	vo.Mlock = true
	_, err = Verify(context.Background(), gguf, &vo)
	mlockOK("verify", err)
	po := DefaultPackOptions()
	po.Mlock, po.NoMmap = true, true
	mlockOK("pack", Pack(context.Background(), gguf, filepath.Join(dir, "m.brisk"), &po))
	qo := DefaultQuantizeOptions()
	qo.Mlock = true
	mlockOK("quantize", Quantize(context.Background(), model, filepath.Join(dir, "q8.gguf"), &qo))
}

// engineGenerateIDs runs one sequence of a new engine from prompt for n
// tokens (EOS not stopping it) and returns them.
func engineGenerateIDs(t *testing.T, m *Model, eo *EngineOptions, prompt []int32, smp *SamplerOptions, n int32) []int32 {
	t.Helper()
	e, err := m.NewEngine(eo)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seq, err := e.NewSequence()
	if err != nil {
		t.Fatal(err)
	}
	if err := seq.AddTokens(prompt); err != nil {
		t.Fatal(err)
	}
	g := DefaultGenerateOptions()
	g.MaxTokens, g.StopAtEOS = n, false
	if err := seq.Generate(smp, &g); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	ids, err := seq.Generated()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
