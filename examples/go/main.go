// Command train trains a model from a TOML config through the Go binding of libtrainrt and
// prints the loss of every step.
//
//	go run . CONFIG.toml [STEPS]
//
// STEPS defaults to the config's train.steps.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/libtrainrt/trainrt/bindings/go/trainrt"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: %s CONFIG.toml [STEPS]", os.Args[0])
	}
	cfg, err := trainrt.ConfigFromFile(os.Args[1])
	if err != nil {
		return err
	}
	defer cfg.Close()
	steps, err := cfg.GetInt("train.steps")
	if err != nil {
		return err
	}
	if len(os.Args) > 2 {
		if steps, err = strconv.ParseInt(os.Args[2], 10, 64); err != nil {
			return fmt.Errorf("bad STEPS %q", os.Args[2])
		}
	}
	// Library warnings go to stderr, tagged.
	if err := cfg.SetLog(func(level trainrt.LogLevel, msg string) {
		fmt.Fprintf(os.Stderr, "[trainrt %d] %s\n", level, msg)
	}, trainrt.LogWarn); err != nil {
		return err
	}
	s, err := trainrt.NewSession(cfg)
	if err != nil {
		return err
	}
	defer s.Close()

	fmt.Printf("# libtrainrt %s, %d steps\n", trainrt.Version(), steps)
	for i := int64(0); i < steps; i++ {
		if _, err := s.Step(); err != nil {
			return err
		}
		r, err := s.Sync() // the figures of this very step, on any backend
		if err != nil {
			return err
		}
		fmt.Printf("step %d loss %.6f lr %.3e grad_norm %.4f (%.1f ms)\n", r.Step, r.Loss, r.LR,
			r.GradNorm, r.Ms)
	}
	return nil
}
