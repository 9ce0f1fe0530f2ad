// SPDX-License-Identifier: MIT

package brisk

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const lily = "Once upon a time, there was a little girl named Lily."

// testFile finds shared test data: $BRISK_TEST_DATA, else the path the ctest
// wrapper passes in $BRISK_DEFAULT_TEST_DATA, else ../shared next to the
// repository. Missing data skips the test, except under CI=true.
func testFile(t *testing.T, rel string) string {
	t.Helper()
	root := os.Getenv("BRISK_TEST_DATA")
	if root == "" {
		root = os.Getenv("BRISK_DEFAULT_TEST_DATA")
	}
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared")
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing test data under CI: %s", p)
		}
		t.Skipf("skipped: test data not found: %s (set BRISK_TEST_DATA)", p)
	}
	return p
}

func openStories(t *testing.T) *Model {
	t.Helper()
	m, err := OpenModel(testFile(t, "models/stories260K.gguf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func sessionOpts() *SessionOptions {
	o := DefaultSessionOptions()
	o.NCtx, o.NThreads, o.NoPin = 256, 2, true
	return &o
}

func newSession(t *testing.T, m *Model) *Session {
	t.Helper()
	s, err := m.NewSession(sessionOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tokenize(t *testing.T, m *Model, text string) []int32 {
	t.Helper()
	ids, err := m.Tokenize(text, AddBOS)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// greedyAlone is the reference: one session, sample/accept/eval by hand.
func greedyAlone(t *testing.T, m *Model, prompt []int32, n int) []int32 {
	t.Helper()
	s := newSession(t, m)
	defer s.Close()
	if err := s.Eval(prompt); err != nil {
		t.Fatal(err)
	}
	o := GreedySamplerOptions()
	smp, err := NewSampler(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	var out []int32
	for i := 0; i < n; i++ {
		tok, err := smp.Sample(s)
		if err != nil {
			t.Fatal(err)
		}
		smp.Accept(tok)
		out = append(out, tok)
		if err := s.Eval([]int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestVersion(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, "0.") && !strings.Contains(v, ".") {
		t.Fatalf("odd version %q", v)
	}
	major, minor := ABIVersion()
	if major != HeaderABIVersionMajor || minor < HeaderABIVersionMinor {
		t.Fatalf("loaded ABI %d.%d, compiled against %d.%d", major, minor, HeaderABIVersionMajor, HeaderABIVersionMinor)
	}
	if StatusCancelled.String() != "BRISK_ERR_CANCELLED" {
		t.Fatalf("status name %q", StatusCancelled.String())
	}
}

func TestErrors(t *testing.T) {
	_, err := OpenModel("/nonexistent/brisk/model.gguf", nil)
	var be *Error
	if !errors.As(err, &be) || !errors.Is(err, StatusNotFound) || be.Message == "" {
		t.Fatalf("want a not-found *Error with a message, got %#v", err)
	}
	if !strings.Contains(err.Error(), "model.gguf") {
		t.Fatalf("the message should name the file: %v", err)
	}
	o := DefaultSamplerOptions()
	o.RepeatPenalty = 0
	if _, err := NewSampler(&o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("repeat_penalty 0: %v", err)
	}
}

func TestModelInfoAndTokens(t *testing.T) {
	m := openStories(t)
	if m.NVocab() != 512 || m.TokenBOS() != 1 || m.TokenEOS() != 2 || m.NCtxTrain() <= 0 {
		t.Fatalf("vocab %d bos %d eos %d ctx %d", m.NVocab(), m.TokenBOS(), m.TokenEOS(), m.NCtxTrain())
	}
	if d, err := m.Describe(); err != nil || !strings.Contains(d, "vocab 512") {
		t.Fatalf("describe %q %v", d, err)
	}
	if p, err := m.KernelPlan(); err != nil || !strings.HasPrefix(p, "kernel plan: ") {
		t.Fatalf("kernel plan %q %v", p, err)
	}
	if arch, err := m.Meta("general.architecture"); err != nil || arch != "llama" {
		t.Fatalf("architecture %q %v", arch, err)
	}
	if _, err := m.Meta("no.such.key"); !errors.Is(err, StatusNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	if m.FileSize() == 0 {
		t.Fatal("file size 0")
	}
	if d := m.DecodeBytes(); d == 0 || d >= m.FileSize() {
		t.Fatalf("decode bytes %d of a %d-byte file", d, m.FileSize())
	}
	ids := tokenize(t, m, "Once upon a time")
	if len(ids) < 2 || ids[0] != m.TokenBOS() {
		t.Fatalf("tokens %v", ids)
	}
	text, err := m.Detokenize(ids, AddBOS)
	if err != nil || text != "Once upon a time" {
		t.Fatalf("round trip %q %v", text, err)
	}
	var joined string
	for _, id := range ids[1:] {
		p, err := m.TokenToPiece(id, 0)
		if err != nil {
			t.Fatal(err)
		}
		joined += p
	}
	if strings.TrimLeft(joined, " ") != "Once upon a time" {
		t.Fatalf("pieces %q", joined)
	}
	if p, _ := m.TokenToPiece(m.TokenBOS(), PieceSpecial); p != "<s>" {
		t.Fatalf("BOS piece %q", p)
	}
	// A long text grows the token buffer.
	long := strings.Repeat("The little dog ran to the park. ", 300)
	ids, err = m.Tokenize(long, 0)
	if err != nil || len(ids) < 1000 {
		t.Fatalf("long text: %d tokens, %v", len(ids), err)
	}
	back, err := m.Detokenize(ids, 0)
	if err != nil || strings.TrimLeft(back, " ") != long {
		t.Fatalf("long round trip differs (%v)", err)
	}
}

func TestChatRender(t *testing.T) {
	m := openStories(t)
	msgs := []ChatMessage{{"system", "Be brief."}, {"user", "Hi"}}
	out, err := m.ChatRender("chatml", msgs, true)
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if err != nil || out != want {
		t.Fatalf("chatml: %q %v", out, err)
	}
	if _, err := m.ChatRender("", msgs, true); !errors.Is(err, StatusUnsupported) {
		t.Fatalf("stories260K has no chat template: %v", err)
	}
	if _, err := m.ChatRender("nonsense", msgs, true); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("unknown template name: %v", err)
	}
}

func TestGreedyGenerate(t *testing.T) {
	m := openStories(t)
	s := newSession(t, m)
	if err := s.Eval(tokenize(t, m, "")); err != nil {
		t.Fatal(err)
	}
	o := GreedySamplerOptions()
	smp, err := NewSampler(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	var text strings.Builder
	var toks []int32
	g := DefaultGenerateOptions()
	g.MaxTokens = 40
	g.OnToken = func(tok int32, piece string) bool {
		if tok >= 0 {
			toks = append(toks, tok)
		}
		text.WriteString(piece)
		return true
	}
	res, err := s.Generate(smp, &g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), lily) {
		t.Fatalf("greedy text %q", text.String())
	}
	if res.NGenerated != 40 || res.StopReason != StopMaxTokens || len(toks) != 40 {
		t.Fatalf("result %+v, %d callback tokens", res, len(toks))
	}
	if s.Position() != 1+40 {
		t.Fatalf("position %d", s.Position())
	}
	// The same tokens as sampling by hand.
	if want := greedyAlone(t, m, tokenize(t, m, ""), 40); !equalIDs(toks, want) {
		t.Fatalf("generate %v\nby hand %v", toks, want)
	}
	detok, _ := m.Detokenize(append(tokenize(t, m, ""), toks...), AddBOS)
	if detok != text.String() {
		t.Fatalf("detokenized %q, streamed %q", detok, text.String())
	}

	// Truncate back to the prompt and generate again: the same text.
	if err := s.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Logits(); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("logits right after truncate: %v", err)
	}
	if err := s.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := s.Eval(tokenize(t, m, "")); err != nil {
		t.Fatal(err)
	}
	smp2, _ := NewSampler(&o)
	defer smp2.Close()
	var again []int32
	g.OnToken = func(tok int32, _ string) bool {
		if tok >= 0 {
			again = append(again, tok)
		}
		return len(again) < 10 // stop after 10
	}
	res, err = s.Generate(smp2, &g)
	if err != nil || res.StopReason != StopCallback || res.NGenerated != 10 || !equalIDs(again, toks[:10]) {
		t.Fatalf("after truncate: %+v %v %v", res, again, err)
	}
}

func TestEvalAllAndLogits(t *testing.T) {
	m := openStories(t)
	s := newSession(t, m)
	if _, err := s.Logits(); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("logits before eval: %v", err)
	}
	ids := tokenize(t, m, "Lily had a red ball.")
	all, err := s.EvalAll(ids)
	if err != nil || len(all) != len(ids)*m.NVocab() {
		t.Fatalf("eval all: %d floats, %v", len(all), err)
	}
	last, err := s.Logits()
	if err != nil {
		t.Fatal(err)
	}
	row := all[(len(ids)-1)*m.NVocab():]
	for i := range last {
		if last[i] != row[i] {
			t.Fatalf("logit %d: %v vs %v", i, last[i], row[i])
		}
	}
	// Context full: nothing is evaluated.
	big := make([]int32, 300)
	for i := range big {
		big[i] = 100
	}
	pos := s.Position()
	if err := s.Eval(big); !errors.Is(err, StatusContextFull) || s.Position() != pos {
		t.Fatalf("context full: %v at %d", err, s.Position())
	}
	if err := s.Eval([]int32{99999}); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("bad token id: %v", err)
	}
}

func TestAbort(t *testing.T) {
	m := openStories(t)
	calls := 0
	o := sessionOpts()
	o.Abort = func() bool { calls++; return calls > 2 }
	s, err := m.NewSession(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Eval(tokenize(t, m, "Once upon a time"))
	if !errors.Is(err, StatusCancelled) || s.Position() != 0 || calls != 3 {
		t.Fatalf("abort: %v, position %d, %d calls", err, s.Position(), calls)
	}
}

func TestCallbackPanicPropagates(t *testing.T) {
	m := openStories(t)
	s := newSession(t, m)
	if err := s.Eval(tokenize(t, m, "")); err != nil {
		t.Fatal(err)
	}
	smp, _ := NewSampler(nil)
	defer smp.Close()
	g := DefaultGenerateOptions()
	g.OnToken = func(int32, string) bool { panic("boom") }
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v", r)
		}
		if s.Position() != 1 { // stopped at the first token
			t.Fatalf("position %d", s.Position())
		}
	}()
	s.Generate(smp, &g)
	t.Fatal("no panic")
}

func engineOpts(nSeq uint32) *EngineOptions {
	o := DefaultEngineOptions()
	o.NCtx, o.NSeqMax, o.NThreads, o.NoPin = 256, nSeq, 2, true
	return &o
}

var prompts = []string{"Once upon a time", "Tom and Sue went to the", "The little dog", "Lily had a red ball."}

func TestEngineEqualsSessions(t *testing.T) {
	m := openStories(t)
	e, err := m.NewEngine(engineOpts(4))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if d, err := e.Describe(); err != nil || !strings.Contains(d, "4 slots") || e.NThreads() < 1 {
		t.Fatalf("describe %q %v", d, err)
	}
	if md, mn, mx, err := e.ReadBandwidth(32<<20, 3); err != nil || !(mn > 0 && mn <= md && md <= mx) {
		t.Fatalf("read bandwidth %v %v %v %v", md, mn, mx, err)
	}
	const n = 24
	seqs := make([]*Sequence, len(prompts))
	texts := make([]strings.Builder, len(prompts))
	fromCB := make([][]int32, len(prompts))
	greedy := GreedySamplerOptions()
	for i, p := range prompts {
		seq, err := e.NewSequence()
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = seq
		if err := seq.AddText(p, AddBOS); err != nil {
			t.Fatal(err)
		}
		i := i
		g := DefaultGenerateOptions()
		g.MaxTokens, g.StopAtEOS = n, false
		if i%2 == 0 { // half with callbacks, half polled
			g.OnToken = func(tok int32, text string) bool {
				if tok >= 0 {
					fromCB[i] = append(fromCB[i], tok)
				}
				texts[i].WriteString(text)
				// Mutating the engine from a callback is refused...
				if _, err := e.NewSequence(); !errors.Is(err, StatusInvalidArgument) {
					t.Errorf("NewSequence inside a callback: %v", err)
				}
				// ...reading is fine.
				if seqs[i].State() != SeqGenerating {
					t.Errorf("state inside the callback: %v", seqs[i].State())
				}
				return true
			}
		}
		if err := seq.Generate(&greedy, &g); err != nil {
			t.Fatal(err)
		}
		if seq.State() != SeqPrefill {
			t.Fatalf("state %v", seq.State())
		}
	}
	steps := 0
	for {
		active, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		steps++
		if active == 0 {
			break
		}
		if steps > 10*n {
			t.Fatal("engine does not finish")
		}
	}
	for i, p := range prompts {
		want := greedyAlone(t, m, tokenize(t, m, p), n)
		got, err := seqs[i].Generated()
		if err != nil || !equalIDs(got, want) {
			t.Fatalf("%q: engine %v\nalone %v (%v)", p, got, want, err)
		}
		if seqs[i].State() != SeqFinished || seqs[i].StopReason() != StopMaxTokens {
			t.Fatalf("%q: %v %v", p, seqs[i].State(), seqs[i].StopReason())
		}
		if i%2 == 0 {
			wantText, _ := m.Detokenize(want, 0)
			if !equalIDs(fromCB[i], want) || texts[i].String() != wantText {
				t.Fatalf("%q: callback %v %q, want %q", p, fromCB[i], texts[i].String(), wantText)
			}
		}
	}
	if !strings.HasPrefix(prompts[0]+texts[0].String(), lily) {
		t.Fatalf("first story %q", prompts[0]+texts[0].String())
	}
	// Closing the engine invalidates its sequences without freeing them twice.
	e.Close()
	if _, err := seqs[0].Generated(); err == nil {
		t.Fatal("sequence usable after its engine closed")
	}
	if err := seqs[1].Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSequenceSaveAndResume(t *testing.T) {
	sampling := DefaultSamplerOptions()
	sampling.Temperature, sampling.TopK, sampling.Seed = 0.8, 40, 7
	file := filepath.Join(t.TempDir(), "seq.state")
	var want []int32
	{
		m := openStories(t)
		e, err := m.NewEngine(engineOpts(2))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		seq, _ := e.NewSequence()
		if err := seq.AddText("Once upon a time", AddBOS); err != nil {
			t.Fatal(err)
		}
		g := DefaultGenerateOptions()
		g.MaxTokens, g.StopAtEOS = 30, false
		if err := seq.Generate(&sampling, &g); err != nil {
			t.Fatal(err)
		}
		for got, _ := seq.Generated(); len(got) < 10; got, _ = seq.Generated() {
			if _, err := e.Step(); err != nil {
				t.Fatal(err)
			}
		}
		if err := seq.SaveState(file); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		want, _ = seq.Generated()
	}
	m := openStories(t) // another handle, as another process would have
	e, err := m.NewEngine(engineOpts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seq, err := e.LoadSequence(file)
	if err != nil {
		t.Fatal(err)
	}
	var after []int32
	g := DefaultGenerateOptions()
	g.OnToken = func(tok int32, _ string) bool {
		if tok >= 0 {
			after = append(after, tok)
		}
		return true
	}
	if err := seq.Resume(&g); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := seq.Generated()
	if len(want) != 30 || !equalIDs(got, want) || !equalIDs(after, want[10:]) {
		t.Fatalf("resumed %v (callback %v), want %v", got, after, want)
	}
	if err := seq.Resume(nil); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("second resume: %v", err)
	}
}

func TestEngineFork(t *testing.T) {
	m := openStories(t)
	e, err := m.NewEngine(engineOpts(4))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prefix := "Once upon a time, there was a"
	root, err := e.NewSequence()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.AddText(prefix, AddBOS); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if root.State() != SeqIdle || root.Position() != len(tokenize(t, m, prefix)) {
		t.Fatalf("root %v at %d", root.State(), root.Position())
	}
	suffixes := []string{" dog", " little boy", " big tree"}
	const n = 16
	forks := make([]*Sequence, len(suffixes))
	greedy := GreedySamplerOptions()
	for i, sfx := range suffixes {
		f, err := root.Fork()
		if err != nil {
			t.Fatal(err)
		}
		forks[i] = f
		ids, _ := m.Tokenize(sfx, 0)
		if err := f.AddTokens(ids); err != nil {
			t.Fatal(err)
		}
		g := DefaultGenerateOptions()
		g.MaxTokens, g.StopAtEOS = n, false
		if err := f.Generate(&greedy, &g); err != nil {
			t.Fatal(err)
		}
	}
	// The root is done with: free it while the forks still run.
	root.Close()
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	for i, sfx := range suffixes {
		sfxIDs, _ := m.Tokenize(sfx, 0)
		want := greedyAlone(t, m, append(tokenize(t, m, prefix), sfxIDs...), n)
		got, _ := forks[i].Generated()
		if !equalIDs(got, want) {
			t.Fatalf("fork %q: %v, alone %v", sfx, got, want)
		}
		forks[i].Close()
	}
}

func TestSequenceCloseInsideCallback(t *testing.T) {
	m := openStories(t)
	e, err := m.NewEngine(engineOpts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, _ := e.NewSequence()
	b, _ := e.NewSequence()
	for _, s := range []*Sequence{a, b} {
		if err := s.AddText("The little dog", AddBOS); err != nil {
			t.Fatal(err)
		}
	}
	greedy := GreedySamplerOptions()
	g := DefaultGenerateOptions()
	g.MaxTokens, g.StopAtEOS = 8, false
	g.OnToken = func(int32, string) bool { b.Close(); return true } // deferred to after the step
	if err := a.Generate(&greedy, &g); err != nil {
		t.Fatal(err)
	}
	bCalls := 0
	g.OnToken = func(int32, string) bool { bCalls++; return true }
	if err := b.Generate(&greedy, &g); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Generated(); len(got) != 8 {
		t.Fatalf("a generated %d", len(got))
	}
	if b.State() != SeqFinished {
		t.Fatal("b still open")
	}
	if bCalls > 1 { // at most once: when b came before a in the first step
		t.Fatalf("b's callback ran %d times after it was closed", bCalls)
	}
	// Its slot is free again: two new sequences fit (a is finished and
	// gave its slot back too).
	c, err1 := e.NewSequence()
	d, err2 := e.NewSequence()
	if err1 != nil || err2 != nil {
		t.Fatalf("slots not freed: %v %v", err1, err2)
	}
	c.Close()
	d.Close()
}

func TestModelSharedAcrossGoroutines(t *testing.T) {
	m := openStories(t)
	want := tokenize(t, m, "Sam was sad because the sun was hot.")
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ids, err := m.Tokenize("Sam was sad because the sun was hot.", AddBOS)
				if err != nil || !equalIDs(ids, want) {
					errs <- "tokenize differs"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestModelCloseWaitsForSessions(t *testing.T) {
	m, err := OpenModel(testFile(t, "models/stories260K.gguf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(sessionOpts())
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := m.Tokenize("x", 0); err == nil {
		t.Fatal("tokenize on a closed model")
	}
	if _, err := m.NewSession(nil); err == nil {
		t.Fatal("session on a closed model")
	}
	// The session still works: the model is freed when it closes.
	if err := s.Eval([]int32{1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if m.ptr != nil {
		t.Fatal("model not freed after its last session")
	}
}

func TestSyntheticModel(t *testing.T) {
	shapes, err := SyntheticShapes()
	if err != nil || len(shapes) == 0 || shapes[0] == "" {
		t.Fatalf("shapes %v %v", shapes, err)
	}
	so := DefaultSynthesizeOptions()
	if so.Shape != "tiny" || so.WeightType != "q4_0" {
		t.Fatalf("defaults %+v", so)
	}
	so.NThreads = 2
	var logged []string
	mo := DefaultModelOptions()
	mo.LogLevel = LogInfo
	mo.Log = func(level LogLevel, msg string) { logged = append(logged, msg) }
	m, err := OpenSyntheticModel(&so, &mo)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.NVocab() <= 0 {
		t.Fatal("no vocabulary")
	}
	if wt, _ := m.WeightType(); wt != "q4_0" {
		t.Fatalf("weight type %q", wt)
	}
	if len(logged) == 0 {
		t.Fatal("no log message at info level")
	}
	so.Shape = "no-such-shape"
	if _, err := OpenSyntheticModel(&so, nil); err == nil {
		t.Fatal("unknown shape accepted")
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	so.Shape = "tiny"
	if err := SynthesizeModel(path, &so); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenModel(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2.Close()
}

// Sequences dropped without Close are freed by the engine (on its own
// goroutine) once the GC finds them, so their slots come back.
func TestEngineCollectsUnreachableSequences(t *testing.T) {
	m := openStories(t)
	e, err := m.NewEngine(engineOpts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	func() {
		for i := 0; i < 2; i++ {
			s, err := e.NewSequence()
			if err != nil {
				t.Fatal(err)
			}
			g := DefaultGenerateOptions()
			g.OnToken = func(int32, string) bool { return true }
			s.AddText("The little dog", AddBOS)
			if err := s.Generate(nil, &g); err != nil {
				t.Fatal(err)
			}
		}
	}()
	if _, err := e.NewSequence(); !errors.Is(err, StatusOutOfMemory) {
		t.Fatalf("a third sequence in two slots: %v", err)
	}
	for i := 0; i < 100; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if s, err := e.NewSequence(); err == nil {
			if len(e.handles) != 0 {
				t.Fatalf("%d callback handles left", len(e.handles))
			}
			s.Close()
			return
		}
	}
	t.Fatal("unreachable sequences were never freed")
}

func TestTypeNames(t *testing.T) {
	all := []Type{TypeAuto, TypeF32, TypeF16, TypeQ4_0, TypeQ4_1, TypeQ8_0, TypeQ4K, TypeQ5K, TypeQ6K, TypeBF16}
	seen := map[string]bool{}
	for _, ty := range all {
		name := ty.String()
		if name == "" || strings.HasPrefix(name, "Type(") || name != strings.ToLower(name) || seen[name] {
			t.Fatalf("type %d: name %q", int32(ty), name)
		}
		seen[name] = true
		for _, n := range []string{name, strings.ToUpper(name)} {
			if back, err := TypeFromName(n); err != nil || back != ty {
				t.Fatalf("TypeFromName(%q) = %v, %v; want %v", n, back, err, ty)
			}
		}
	}
	if TypeQ4_0.String() != "q4_0" || TypeAuto.String() != "auto" || TypeF16.String() != "f16" {
		t.Fatalf("names %q %q %q", TypeQ4_0, TypeAuto, TypeF16)
	}
	if s := Type(77).String(); s != "Type(77)" {
		t.Fatalf("not a type: %q", s)
	}
	_, err := TypeFromName("q3_xs")
	var be *Error
	if !errors.Is(err, StatusNotFound) || !errors.As(err, &be) || !strings.Contains(be.Message, "q8_0") {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestPhysicalCoresAndMaxSequences(t *testing.T) {
	if n := PhysicalCores(); n < 1 || n > runtime.NumCPU() {
		t.Fatalf("physical cores %d (%d CPUs)", n, runtime.NumCPU())
	}
	m := openStories(t)
	n, err := m.MaxSequences(engineOpts(4))
	if err != nil || n != 4 {
		t.Fatalf("max sequences: %d %v (stories260K fits 4 slots easily)", n, err)
	}
	if n, err := m.MaxSequences(nil); err != nil || n < 1 || n > int(DefaultEngineOptions().NSeqMax) {
		t.Fatalf("max sequences with the defaults: %d %v", n, err)
	}
	tiny := engineOpts(4)
	tiny.MemoryBudget = 4096
	if n, err := m.MaxSequences(tiny); err != nil || n != 0 {
		t.Fatalf("max sequences in 4 KiB: %d %v", n, err)
	}
	m.Close()
	if _, err := m.MaxSequences(nil); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("closed model: %v", err)
	}
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func TestModelIdentity(t *testing.T) {
	a, b := openStories(t), openStories(t)
	ida, err := a.Identity()
	if err != nil || len(ida) != 32 || !isHex(ida) {
		t.Fatalf("identity %q %v", ida, err)
	}
	if idb, err := b.Identity(); err != nil || idb != ida {
		t.Fatalf("two handles of one file: %q vs %q (%v)", ida, idb, err)
	}
	synth, err := OpenSyntheticModel(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer synth.Close()
	if ids, err := synth.Identity(); err != nil || len(ids) != 32 || ids == ida {
		t.Fatalf("another model's identity %q %v (stories %q)", ids, err, ida)
	}
}

func TestChatRenderEx(t *testing.T) {
	m := openStories(t)
	msgs := []ChatMessage{{"system", "Be brief."}, {"user", "Hi"}}
	d := DefaultChatOptions()
	if d.Template != "" || !d.AddAssistant || d.AllowControlTokens {
		t.Fatalf("defaults %+v", d)
	}
	for _, add := range []bool{true, false} {
		o := DefaultChatOptions()
		o.Template, o.AddAssistant = "chatml", add
		got, err := m.ChatRenderEx(msgs, &o)
		want, err2 := m.ChatRender("chatml", msgs, add)
		if err != nil || err2 != nil || got != want {
			t.Fatalf("add_assistant %v: ex %q (%v), render %q (%v)", add, got, err, want, err2)
		}
	}
	// nil options: the model's own template, which stories260K has not.
	if _, err := m.ChatRenderEx(msgs, nil); !errors.Is(err, StatusUnsupported) {
		t.Fatalf("no chat template: %v", err)
	}
	// Control-token text in a message is refused unless allowed.
	forged := []ChatMessage{{"user", "Hi</s><s>"}}
	if _, err := m.ChatRender("chatml", forged, true); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("control tokens in ChatRender: %v", err)
	}
	o := DefaultChatOptions()
	o.Template = "chatml"
	if _, err := m.ChatRenderEx(forged, &o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("control tokens, not allowed: %v", err)
	}
	o.AllowControlTokens = true
	if out, err := m.ChatRenderEx(forged, &o); err != nil || !strings.Contains(out, "Hi</s><s>") {
		t.Fatalf("control tokens allowed: %q %v", out, err)
	}
}

// generateIDs runs Session.Generate for n tokens and returns them.
func generateIDs(t *testing.T, s *Session, smp *Sampler, n int32) []int32 {
	t.Helper()
	var out []int32
	g := DefaultGenerateOptions()
	g.MaxTokens, g.StopAtEOS = n, false
	g.OnToken = func(tok int32, _ string) bool {
		if tok >= 0 {
			out = append(out, tok)
		}
		return true
	}
	if res, err := s.Generate(smp, &g); err != nil || res.NGenerated != int(n) {
		t.Fatalf("generate: %+v %v", res, err)
	}
	return out
}

func TestSessionSaveAndLoadState(t *testing.T) {
	sampling := DefaultSamplerOptions()
	sampling.Temperature, sampling.TopK, sampling.Seed = 0.8, 40, 7
	dir := t.TempDir()
	file := filepath.Join(dir, "session.state")
	greedyFile := filepath.Join(dir, "greedy.state")
	var saved, want, wantGreedy []int32
	{
		m := openStories(t)
		s := newSession(t, m)
		smp, err := NewSampler(&sampling)
		if err != nil {
			t.Fatal(err)
		}
		defer smp.Close()
		prompt := tokenize(t, m, "Once upon a time")
		if err := s.Eval(prompt); err != nil {
			t.Fatal(err)
		}
		saved = append(append([]int32{}, prompt...), generateIDs(t, s, smp, 12)...)
		if s.Position() != len(saved) {
			t.Fatalf("position %d, %d tokens", s.Position(), len(saved))
		}
		// n_tokens must equal the position.
		if err := s.SaveState(smp, saved[:len(saved)-1], file); !errors.Is(err, StatusInvalidArgument) {
			t.Fatalf("save with too few tokens: %v", err)
		}
		if err := s.SaveState(smp, saved, file); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveState(nil, saved, greedyFile); err != nil {
			t.Fatal(err)
		}
		want = generateIDs(t, s, smp, 20)
		wantGreedy = greedyAlone(t, m, saved, 20)
	}
	if got, err := StateFileTokens(file); err != nil || !equalIDs(got, saved) {
		t.Fatalf("state file tokens %v %v, saved %v", got, err, saved)
	}

	m := openStories(t) // another handle, as another process would have
	s := newSession(t, m)
	smp, err := NewSampler(&sampling) // a fresh sampler: its state comes from the file
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	if err := s.LoadState(smp, file); err != nil {
		t.Fatal(err)
	}
	if s.Position() != len(saved) {
		t.Fatalf("position after load %d, want %d", s.Position(), len(saved))
	}
	if got := generateIDs(t, s, smp, 20); !equalIDs(got, want) {
		t.Fatalf("after load %v, want %v", got, want)
	}
	// Without a sampler state: the same greedy continuation.
	g := newSession(t, m)
	if err := g.LoadState(nil, greedyFile); err != nil {
		t.Fatal(err)
	}
	o := GreedySamplerOptions()
	greedy, _ := NewSampler(&o)
	defer greedy.Close()
	if got := generateIDs(t, g, greedy, 20); !equalIDs(got, wantGreedy) {
		t.Fatalf("greedy after load %v, want %v", got, wantGreedy)
	}

	// A damaged file is refused and changes nothing.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	bad := filepath.Join(dir, "damaged.state")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pos := g.Position()
	if err := g.LoadState(nil, bad); !errors.Is(err, StatusChecksum) || g.Position() != pos {
		t.Fatalf("damaged file: %v, position %d (was %d)", err, g.Position(), pos)
	}
	if _, err := StateFileTokens(bad); !errors.Is(err, StatusChecksum) {
		t.Fatalf("tokens of a damaged file: %v", err)
	}
	if _, err := StateFileTokens(filepath.Join(dir, "none.state")); !errors.Is(err, StatusNotFound) {
		t.Fatalf("tokens of a missing file: %v", err)
	}
}

func TestSequenceTruncate(t *testing.T) {
	m := openStories(t)
	e, err := m.NewEngine(engineOpts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	shared := tokenize(t, m, "Once upon a time, there was a")
	other := tokenize(t, m, "Once upon a time, there was a dog named Max")[len(shared):]
	mine, _ := m.Tokenize(" little cat", 0)
	seq, _ := e.NewSequence()
	if err := seq.AddTokens(append(append([]int32{}, shared...), other...)); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if seq.State() != SeqIdle || seq.Position() != len(shared)+len(other) {
		t.Fatalf("state %v position %d", seq.State(), seq.Position())
	}
	if err := seq.Truncate(seq.Position() + 1); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("truncate past the position: %v", err)
	}
	if err := seq.Truncate(len(shared)); err != nil || seq.Position() != len(shared) {
		t.Fatalf("truncate: %v, position %d", err, seq.Position())
	}
	if err := seq.AddTokens(mine); err != nil {
		t.Fatal(err)
	}
	const n = 20
	greedy := GreedySamplerOptions()
	g := DefaultGenerateOptions()
	g.MaxTokens, g.StopAtEOS = n, false
	if err := seq.Generate(&greedy, &g); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := seq.Generated()
	want := greedyAlone(t, m, append(append([]int32{}, shared...), mine...), n)
	if !equalIDs(got, want) {
		t.Fatalf("after truncate %v\nfresh %v", got, want)
	}
	if err := seq.Truncate(0); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("truncate a finished sequence: %v", err)
	}
}
