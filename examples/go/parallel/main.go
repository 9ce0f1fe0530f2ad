// SPDX-License-Identifier: MIT

// parallel: one goroutine drives four sequences through a brisk engine.
//
//	go run . MODEL.gguf [N_TOKENS]
//
// A shared prefix is evaluated once and forked four times; each fork gets
// its own continuation. Every Engine.Step is one forward pass over all of
// them. Two sequences stream through token callbacks, two are polled with
// Sequence.Generated — both styles work on the same engine.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"brisk/bindings/go/brisk"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s MODEL.gguf [N_TOKENS]\n", os.Args[0])
		os.Exit(2)
	}
	n := 32
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[2])
	}
	if err := run(os.Args[1], int32(n)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(path string, n int32) error {
	model, err := brisk.OpenModel(path, nil)
	if err != nil {
		return err
	}
	defer model.Close()

	opts := brisk.DefaultEngineOptions()
	opts.NCtx, opts.NSeqMax = 256, 5 // four forks and their shared prefix
	engine, err := model.NewEngine(&opts)
	if err != nil {
		return err
	}
	defer engine.Close()

	const prefix = "Once upon a time, there was a"
	suffixes := []string{" little girl", " big dog", " boy named", " tree"}

	root, err := engine.NewSequence()
	if err != nil {
		return err
	}
	if err := root.AddText(prefix, brisk.AddBOS); err != nil {
		return err
	}
	if err := engine.Run(); err != nil { // evaluate the prefix once
		return err
	}

	greedy := brisk.GreedySamplerOptions()
	texts := make([]strings.Builder, len(suffixes))
	seqs := make([]*brisk.Sequence, len(suffixes))
	for i, sfx := range suffixes {
		seq, err := root.Fork()
		if err != nil {
			return err
		}
		seqs[i] = seq
		if err := seq.AddText(sfx, 0); err != nil {
			return err
		}
		gen := brisk.DefaultGenerateOptions()
		gen.MaxTokens = n
		if i%2 == 0 {
			text := &texts[i]
			gen.OnToken = func(token int32, piece string) bool {
				text.WriteString(piece)
				return true // keep going
			}
		}
		if err := seq.Generate(&greedy, &gen); err != nil {
			return err
		}
	}
	root.Close() // the forks have their own copy of the prefix

	steps := 0
	for {
		active, err := engine.Step()
		if err != nil {
			return err
		}
		steps++
		if active == 0 {
			break
		}
	}

	for i, seq := range seqs {
		text := texts[i].String()
		if i%2 == 1 { // polled: detokenize what it generated
			ids, err := seq.Generated()
			if err != nil {
				return err
			}
			if text, err = model.Detokenize(ids, 0); err != nil {
				return err
			}
		}
		fmt.Printf("[%d] %s%s%s\n", i, prefix, suffixes[i], text)
		seq.Close()
	}
	fmt.Fprintf(os.Stderr, "%d steps for %d sequences\n", steps, len(seqs))
	return nil
}
