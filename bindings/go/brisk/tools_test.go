// SPDX-License-Identifier: MIT

package brisk

// The toolchain through the binding: convert, manifests, verify, bundles,
// quantize, calibrate (with resume), perplexity and compare, with their
// callbacks, cancellation and errors. Small inputs (stories260K) only.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// greedyFrom opens a model file and gives its first n greedy tokens after BOS.
func greedyFrom(t *testing.T, path string, n int) []int32 {
	t.Helper()
	m, err := OpenModel(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return greedyAlone(t, m, tokenize(t, m, ""), n)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func notExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s should not exist (%v)", path, err)
	}
}

// withManifest writes stories260K with a manifest into dir.
func withManifest(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "m.gguf")
	if err := AddManifest(context.Background(), testFile(t, "models/stories260K.gguf"), out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSentinelErrors(t *testing.T) {
	_, err := Verify(context.Background(), "/nonexistent/brisk/m.gguf", nil)
	var be *Error
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrChecksum) || !errors.As(err, &be) || be.Status != StatusNotFound {
		t.Fatalf("want ErrNotFound as *Error, got %#v", err)
	}
	if !strings.Contains(err.Error(), "m.gguf") {
		t.Fatalf("the message should name the file: %v", err)
	}
	// A GGUF without a manifest.
	if _, err := Verify(context.Background(), testFile(t, "models/stories260K.gguf"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no manifest: %v", err)
	}
}

func TestManifestVerifyPackUnpack(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := withManifest(t, dir)

	var stages []string
	o := DefaultVerifyOptions()
	o.OnProgress = func(p Progress) {
		if p.Done > p.Total {
			t.Errorf("progress %d of %d", p.Done, p.Total)
		}
		stages = append(stages, p.Stage)
	}
	o.OnMismatch = func(mm Mismatch) { t.Errorf("mismatch on an intact file: %+v", mm) }
	n, err := Verify(ctx, m, &o)
	if err != nil || n < 1000000 || len(stages) == 0 || stages[0] != "verify" {
		t.Fatalf("verify: %d bytes, %v, stages %v", n, err, stages)
	}

	bundle, back := filepath.Join(dir, "m.brisk"), filepath.Join(dir, "back.gguf")
	p := DefaultPackOptions()
	p.Level = 1
	if err := Pack(ctx, m, bundle, &p); err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(ctx, bundle, &o); err != nil || n == 0 {
		t.Fatalf("verify bundle: %d, %v", n, err)
	}
	if err := Unpack(ctx, bundle, back, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, m), readFile(t, back)) {
		t.Fatal("unpacked GGUF differs from the packed one")
	}

	// One flipped byte in the tensor data: verify names it, pack refuses.
	data := readFile(t, m)
	data[len(data)-100] ^= 0x40
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var found []Mismatch
	o.OnMismatch = func(mm Mismatch) { found = append(found, mm) }
	if _, err := Verify(ctx, bad, &o); !errors.Is(err, ErrChecksum) || len(found) != 1 ||
		!strings.Contains(found[0].Where, "tensor") {
		t.Fatalf("damaged file: %v, mismatches %+v", err, found)
	}
	if err := Pack(ctx, bad, filepath.Join(dir, "bad.brisk"), nil); !errors.Is(err, ErrChecksum) {
		t.Fatalf("pack of a damaged file: %v", err)
	}
	notExist(t, filepath.Join(dir, "bad.brisk"))
	// Opening with Verify checks the manifest first.
	vm := DefaultModelOptions()
	vm.Verify = true
	if good, err := OpenModel(m, &vm); err != nil {
		t.Fatalf("open with verify: %v", err)
	} else {
		good.Close()
	}
	if _, err := OpenModel(bad, &vm); !errors.Is(err, ErrChecksum) {
		t.Fatalf("open a damaged file with verify: %v", err)
	}
	// A manifest added in place.
	inPlace := filepath.Join(dir, "inplace.gguf")
	if err := os.WriteFile(inPlace, readFile(t, testFile(t, "models/stories260K.gguf")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AddManifest(ctx, inPlace, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, inPlace, nil); err != nil {
		t.Fatalf("manifest added in place: %v", err)
	}
	// Refused as the source of a new manifest too.
	if err := AddManifest(ctx, bad, filepath.Join(dir, "bad2.gguf"), nil); !errors.Is(err, ErrChecksum) {
		t.Fatalf("add-manifest over a damaged manifest: %v", err)
	}

	// A damaged bundle: no output file.
	b := readFile(t, bundle)
	b[len(b)/2] ^= 0x01
	badBundle := filepath.Join(dir, "bad.brisk")
	if err := os.WriteFile(badBundle, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "never.gguf")
	if err := Unpack(ctx, badBundle, out, nil); !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrBadFormat) {
		t.Fatalf("unpack of a damaged bundle: %v", err)
	}
	notExist(t, out)
}

func TestCancelAndPanicInToolchain(t *testing.T) {
	dir := t.TempDir()
	m := withManifest(t, dir)

	// Cancelled from its own progress callback: both ErrCancelled and
	// context.Canceled, and no output.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := DefaultPackOptions()
	p.OnProgress = func(Progress) { cancel() }
	out := filepath.Join(dir, "c.brisk")
	err := Pack(ctx, m, out, &p)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pack: %v", err)
	}
	notExist(t, out)
	// A context cancelled beforehand stops the call before it starts.
	if _, err := Verify(ctx, m, nil); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("verify with a cancelled context: %v", err)
	}

	// A panic in a callback stops the call and reaches the caller.
	func() {
		defer func() {
			if r := recover(); r != "progress panic" {
				t.Fatalf("recovered %v", r)
			}
		}()
		o := DefaultVerifyOptions()
		o.OnProgress = func(Progress) { panic("progress panic") }
		_, _ = Verify(context.Background(), m, &o)
		t.Fatal("the panic was lost")
	}()
}

func TestConvert(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	want := greedyFrom(t, testFile(t, "models/stories260K.gguf"), 24)

	// llama2.c checkpoint: the same model as llama.cpp's conversion.
	l2c := filepath.Join(dir, "l2c.gguf")
	var progress int
	o := DefaultConvertOptions()
	o.OnProgress = func(p Progress) {
		if p.Stage != "convert" {
			t.Errorf("stage %q", p.Stage)
		}
		progress++
	}
	if err := ConvertLlama2c(ctx, testFile(t, "models/stories260K.bin"), testFile(t, "models/tok512.bin"), l2c, &o); err != nil {
		t.Fatal(err)
	}
	if got := greedyFrom(t, l2c, 24); progress == 0 || !equalIDs(got, want) {
		t.Fatalf("llama2.c: %d progress calls, greedy %v, want %v", progress, got, want)
	}
	if _, err := Verify(ctx, l2c, nil); err != nil {
		t.Fatalf("a converted file carries a manifest: %v", err)
	}

	// Hugging Face folder.
	hf := filepath.Join(dir, "hf.gguf")
	if err := ConvertHF(ctx, testFile(t, "models/stories260K-hf-f32"), hf, nil); err != nil {
		t.Fatal(err)
	}
	if got := greedyFrom(t, hf, 24); !equalIDs(got, want) {
		t.Fatalf("hf: greedy %v, want %v", got, want)
	}
	// Rows of 64 do not fit K-quant blocks: the fallbacks are logged.
	var warnings []string
	o = DefaultConvertOptions()
	o.Type = TypeQ4K
	o.Log = func(level LogLevel, msg string) { warnings = append(warnings, msg) }
	if err := ConvertHF(ctx, testFile(t, "models/stories260K-hf-f32"), filepath.Join(dir, "k.gguf"), &o); err != nil {
		t.Fatal(err)
	}
	if len(warnings) == 0 {
		t.Fatal("no fallback warnings")
	}
	o.Type = Type(77)
	if err := ConvertHF(ctx, testFile(t, "models/stories260K-hf-f32"), filepath.Join(dir, "x.gguf"), &o); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("type 77: %v", err)
	}
	if err := ConvertHF(ctx, filepath.Join(dir, "nothing"), filepath.Join(dir, "y.gguf"), nil); err == nil {
		t.Fatal("converting a missing folder succeeded")
	}
}

func TestQuantizeAndCompare(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	in := testFile(t, "models/stories260K.gguf")
	out := filepath.Join(dir, "q8.gguf")
	var tensors []TensorInfo
	o := DefaultQuantizeOptions()
	if o.Preset != "q8_0" || !o.Report {
		t.Fatalf("defaults %+v", o)
	}
	o.Preset = "q4_0"
	o.TensorTypes = []string{"attn_q=q8_0"}
	o.OnTensor = func(ti TensorInfo) { tensors = append(tensors, ti) }
	var warnings int
	o.Log = func(level LogLevel, msg string) { warnings++ } // ffn_down's 172 columns do not fit q4_0
	if err := Quantize(ctx, in, out, &o); err != nil {
		t.Fatal(err)
	}
	var q4, override int
	for _, ti := range tensors {
		if ti.Type == TypeQ4_0 {
			q4++
		}
		if strings.Contains(ti.Name, "attn_q") && ti.Type == TypeQ8_0 && strings.Contains(ti.Why, "override") {
			override++
		}
		if ti.SrcType != TypeF32 || ti.Bytes == 0 || ti.Elements == 0 {
			t.Fatalf("tensor %+v", ti)
		}
	}
	if q4 < 20 || override != 5 || warnings < 5 {
		t.Fatalf("%d q4_0 tensors, %d attn_q overrides, %d warnings, of %d", q4, override, warnings, len(tensors))
	}
	if _, err := Verify(ctx, out, nil); err != nil {
		t.Fatalf("quantized file: %v", err)
	}
	o = DefaultQuantizeOptions()
	o.Preset = "q3_xx"
	if err := Quantize(ctx, in, filepath.Join(dir, "bad.gguf"), &o); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown preset: %v", err)
	}

	a, err := OpenModel(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenModel(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	co := DefaultCompareOptions()
	co.NPredict = 16
	prompts := []string{"Once upon a time", "The little dog"}
	same, err := Compare(ctx, a, a, prompts, &co)
	if err != nil || same.Prompts != 2 || same.IdenticalPct != 100 || same.Diverging != 0 {
		t.Fatalf("a model against itself: %+v %v", same, err)
	}
	var progress []uint64
	co.OnProgress = func(p Progress) { progress = append(progress, p.Done) }
	diff, err := Compare(ctx, a, b, prompts, &co)
	if err != nil || diff.Prompts != 2 || len(progress) == 0 {
		t.Fatalf("f32 against q4_0: %+v %v (progress %v)", diff, err, progress)
	}
	var js struct {
		Prompts []struct {
			Identical bool `json:"identical"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal([]byte(diff.JSON), &js); err != nil || len(js.Prompts) != 2 {
		t.Fatalf("compare JSON %q: %v", diff.JSON, err)
	}
	identical := 0
	for _, p := range js.Prompts {
		if p.Identical {
			identical++
		}
	}
	if math.Abs(float64(identical)*50-diff.IdenticalPct) > 1e-9 || 2-identical != diff.Diverging {
		t.Fatalf("JSON says %d identical, figures %+v", identical, diff)
	}
}

func TestCalibrateResumeAndBudget(t *testing.T) {
	dir := t.TempDir()
	model := testFile(t, "models/stories260K.gguf")
	data := []string{testFile(t, "data/splits/stories-calib.txt")}
	co := DefaultCalibrateOptions()
	co.NCtx, co.MaxTokens = 128, 128*6
	full, part := filepath.Join(dir, "full.calib"), filepath.Join(dir, "part.calib")
	if err := Calibrate(context.Background(), model, full, data, &co); err != nil {
		t.Fatal(err)
	}

	// Stopped after two chunks (the context is cancelled from the progress
	// callback), then resumed: the statistics of an uninterrupted run.
	ctx, cancel := context.WithCancel(context.Background())
	reports := 0
	co.OnProgress = func(p Progress) {
		if p.Stage != "calibrate" || p.Total != 128*6 {
			t.Errorf("progress %+v", p)
		}
		if reports++; reports == 3 {
			cancel()
		}
	}
	err := Calibrate(ctx, model, part, data, &co)
	cancel()
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled calibrate: %v", err)
	}
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("no partial file: %v", err)
	}
	co.Resume = true
	var resumedFrom uint64 = math.MaxUint64
	co.OnProgress = func(p Progress) {
		if p.Done < resumedFrom {
			resumedFrom = p.Done
		}
	}
	if err := Calibrate(context.Background(), model, part, data, &co); err != nil {
		t.Fatal(err)
	}
	if resumedFrom == 0 || resumedFrom == math.MaxUint64 {
		t.Fatalf("resume started at %d tokens", resumedFrom)
	}

	// Both statistics give the same quantized model within a size budget.
	qo := DefaultQuantizeOptions()
	qo.Preset = "q4_0"
	qo.TargetSize = 300000
	qo.SensitivityTokens = 128
	qo.EvalMaxChunks = 4
	var stages = map[string]bool{}
	qo.OnProgress = func(p Progress) { stages[p.Stage] = true }
	outs := map[string]string{}
	for name, calib := range map[string]string{"full": full, "resumed": part} {
		qo.Calibration = calib
		qo.Report = name == "full"
		out := filepath.Join(dir, name+".gguf")
		if err := Quantize(context.Background(), model, out, &qo); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(out); st == nil || st.Size() > 300000 {
			t.Fatalf("%s: over the budget (%v)", name, st)
		}
		outs[name] = out
	}
	if !stages["sensitivity"] || !stages["quantize"] {
		t.Fatalf("stages %v", stages)
	}
	if _, err := os.Stat(filepath.Join(dir, "full.report.json")); err != nil {
		t.Fatalf("no report: %v", err)
	}
	a, b := readFile(t, outs["full"]), readFile(t, outs["resumed"])
	if !bytes.Equal(a, b) {
		// Only the calibration file's own hash may differ, not the weights.
		ma, _ := OpenModel(outs["full"], nil)
		mb, _ := OpenModel(outs["resumed"], nil)
		defer ma.Close()
		defer mb.Close()
		r, err := Compare(context.Background(), ma, mb, []string{"Once upon a time"}, nil)
		if err != nil || r.IdenticalPct != 100 {
			t.Fatalf("quantized with resumed statistics differs: %+v %v", r, err)
		}
	}
	// A budget in bits per weight instead, checked in the report.
	qo.Calibration, qo.TargetSize, qo.TargetBPW, qo.Report = full, 0, 8, true
	if err := Quantize(context.Background(), model, filepath.Join(dir, "bpw.gguf"), &qo); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Size struct {
			BPW       float64 `json:"bits_per_weight"`
			TargetBPW float64 `json:"target_bpw"`
		} `json:"size"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "bpw.report.json")), &report); err != nil ||
		report.Size.TargetBPW != 8 || report.Size.BPW > 8 || report.Size.BPW < 6 {
		t.Fatalf("bpw report %+v %v", report.Size, err)
	}
	// An impossible budget.
	qo.TargetSize, qo.TargetBPW, qo.Report = 100000, 0, false
	if err := Quantize(context.Background(), model, filepath.Join(dir, "tiny.gguf"), &qo); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("budget 100000: %v", err)
	}
}

func TestPerplexity(t *testing.T) {
	m := openStories(t)
	q, err := OpenModel(testFile(t, "models/stories260K-q4_0.gguf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	text := string(readFile(t, testFile(t, "data/splits/stories-heldout.txt")))
	o := DefaultPerplexityOptions()
	o.NCtx, o.MaxChunks = 128, 4
	var chunks []uint64
	o.OnProgress = func(p Progress) { chunks = append(chunks, p.Done) }
	r, err := m.Perplexity(context.Background(), text, nil, &o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Chunks != 4 || r.ScoredTokens <= 0 || r.TextTokens < r.ScoredTokens || r.KL != nil ||
		!(r.PPL > 1 && r.PPL < 100) || math.Abs(math.Log(r.PPL)-r.MeanNLL) > 1e-6 || len(chunks) == 0 {
		t.Fatalf("perplexity %+v (progress %v)", r, chunks)
	}
	var js map[string]interface{}
	if err := json.Unmarshal([]byte(r.JSON), &js); err != nil {
		t.Fatalf("JSON %q: %v", r.JSON, err)
	}

	// The q4_0 model against the f32 one.
	kl, err := q.Perplexity(context.Background(), text, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	if kl.KL == nil || kl.KL.Mean <= 0 || kl.KL.Max < kl.KL.Median || kl.KL.SameTopPct <= 50 ||
		math.Abs(kl.KL.BasePPL-r.PPL) > 1e-6*r.PPL {
		t.Fatalf("KL %+v (base %+v)", kl.KL, r)
	}
	// Against itself: no divergence.
	self, err := m.Perplexity(context.Background(), text, m, &o)
	if err != nil || self.KL == nil || self.KL.Mean > 1e-9 || self.KL.SameTopPct != 100 {
		t.Fatalf("self KL %+v %v", self.KL, err)
	}
	// Cancelled by a deadline that has passed.
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if _, err := m.Perplexity(ctx, text, nil, &o); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
}
