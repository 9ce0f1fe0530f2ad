// SPDX-License-Identifier: MIT

// shipbundle: calibrate a model on your own logs, quantize it to a size
// budget with that calibration, and ship it as a verified .brisk bundle.
//
//	go run . -m MODEL.gguf -data app.log -target-size 4.5M -o model.brisk
//
// Steps, all through the brisk binding:
//  1. Calibrate on the log file (its tail is held out for evaluation); the
//     statistics go to OUT.calib. Ctrl-C stops cleanly; -resume continues.
//  2. Quantize with those statistics, each matrix's type chosen to fit the
//     budget with the least predicted damage; the report (size, KL against
//     the input on the held-out logs) goes to OUT.report.md/.json.
//  3. Verify the quantized GGUF's checksums, pack it into OUT, and verify
//     the bundle.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"brisk/bindings/go/brisk"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// parseSize reads "4718592", "4608K", "4.5M" or "1G" (powers of 1024).
func parseSize(s string) (uint64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q (bytes, or a number with K, M or G)", s)
	}
	return uint64(v * mult), nil
}

// progress prints a line per stage and at most one more a second.
func progress() func(brisk.Progress) {
	var stage string
	var last time.Time
	return func(p brisk.Progress) {
		if p.Stage == stage && time.Since(last) < time.Second && p.Done != p.Total {
			return
		}
		stage, last = p.Stage, time.Now()
		pct := 0.0
		if p.Total > 0 {
			pct = 100 * float64(p.Done) / float64(p.Total)
		}
		fmt.Fprintf(os.Stderr, "  %-11s %5.1f%%  %s\n", p.Stage, pct, p.Detail)
	}
}

func main() {
	var data multi
	model := flag.String("m", "", "input model (GGUF, F32 or F16)")
	out := flag.String("o", "model.brisk", "bundle to write")
	flag.Var(&data, "data", "log file (or directory, or JSONL) to calibrate on; repeatable")
	target := flag.String("target-size", "", "size budget of the quantized model (bytes, or K/M/G)")
	tokens := flag.Uint64("tokens", 4096, "calibration token budget (0: all)")
	sensTokens := flag.Uint("sensitivity-tokens", 0, "calibration tokens for measuring each tensor's damage (0: brisk's default)")
	evalChunks := flag.Uint("eval-chunks", 16, "held-out chunks evaluated for the report")
	threads := flag.Uint("t", 0, "threads (0: one per physical core)")
	resume := flag.Bool("resume", false, "continue a calibration stopped with Ctrl-C")
	flag.Parse()
	if *model == "" || len(data) == 0 || *target == "" {
		fmt.Fprintln(os.Stderr, "usage: shipbundle -m MODEL.gguf -data LOGFILE -target-size SIZE [-o OUT.brisk]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	budget, err := parseSize(*target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shipbundle:", err)
		os.Exit(2)
	}
	// Ctrl-C cancels whatever step is running; brisk leaves no half-written file.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *model, data, *out, budget, *tokens, uint32(*sensTokens), uint32(*evalChunks), uint32(*threads), *resume); err != nil {
		fmt.Fprintln(os.Stderr, "shipbundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, model string, data []string, out string, budget, tokens uint64,
	sensTokens, evalChunks, threads uint32, resume bool) error {
	base := strings.TrimSuffix(out, ".brisk")
	calib, gguf := base+".calib", base+".gguf"

	fmt.Fprintf(os.Stderr, "1. calibrating %s on %s\n", model, strings.Join(data, ", "))
	co := brisk.DefaultCalibrateOptions()
	co.MaxTokens, co.NThreads, co.Resume = tokens, threads, resume
	co.OnProgress = progress()
	co.Log = func(_ brisk.LogLevel, msg string) { fmt.Fprintln(os.Stderr, "  warning:", msg) }
	if err := brisk.Calibrate(ctx, model, calib, data, &co); err != nil {
		if errors.Is(err, context.Canceled) { // Ctrl-C: the partial statistics are kept
			return fmt.Errorf("%w\ninterrupted: run again with -resume to continue the calibration", err)
		}
		return err
	}

	fmt.Fprintf(os.Stderr, "2. quantizing to at most %d bytes\n", budget)
	qo := brisk.DefaultQuantizeOptions()
	qo.Calibration, qo.TargetSize, qo.NThreads = calib, budget, threads
	qo.SensitivityTokens, qo.EvalMaxChunks, qo.Report = sensTokens, evalChunks, true
	qo.OnProgress = progress()
	qo.Log = co.Log
	if err := brisk.Quantize(ctx, model, gguf, &qo); err != nil {
		return err
	}
	defer os.Remove(gguf) // the bundle is what ships
	if err := summarize(base + ".report.json"); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "3. verifying and packing %s\n", out)
	vo := brisk.DefaultVerifyOptions()
	vo.NThreads = threads
	vo.OnMismatch = func(m brisk.Mismatch) { fmt.Fprintf(os.Stderr, "  mismatch: %s: %s\n", m.Where, m.Detail) }
	if _, err := brisk.Verify(ctx, gguf, &vo); err != nil {
		return err
	}
	po := brisk.DefaultPackOptions()
	po.NThreads = threads
	po.OnProgress = progress()
	if err := brisk.Pack(ctx, gguf, out, &po); err != nil {
		return err
	}
	checked, err := brisk.Verify(ctx, out, &vo)
	if err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("verified bundle %s: %d bytes, %d bytes of model checked\n", out, st.Size(), checked)
	return nil
}

// summarize prints the figures of the quantization report.
func summarize(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r struct {
		Size struct {
			FileBytes     uint64  `json:"file_bytes"`
			TargetSize    uint64  `json:"target_size"`
			BitsPerWeight float64 `json:"bits_per_weight"`
		} `json:"size"`
		Quality struct {
			KLDMean    float64 `json:"kld_mean"`
			SameTopPct float64 `json:"same_top_pct"`
			PPL        float64 `json:"ppl"`
			SourcePPL  float64 `json:"source_ppl"`
		} `json:"quality"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Printf("quantized: %d bytes (budget %d), %.2f bits per weight\n", r.Size.FileBytes, r.Size.TargetSize, r.Size.BitsPerWeight)
	fmt.Printf("on held-out logs: KL %.6f, same top token %.1f%%, perplexity %.3f (input %.3f)\n",
		r.Quality.KLDMean, r.Quality.SameTopPct, r.Quality.PPL, r.Quality.SourcePPL)
	return nil
}
