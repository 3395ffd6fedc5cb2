// Command go_signal times CPU training steps of the Go binding in the situations behind the
// "signal.Notify slowdown" (bindings/go/README.md, bench/results/2026-11-25-go-signal.md):
//
//	go_signal -mode MODE -work DIR [-steps N] [-warmup W] [-threads T]
//
// MODE:
//
//	same          create the session and step it on one OS thread (the baseline)
//	notify        signal.Notify(SIGINT, SIGTERM), then train in a goroutine while main waits
//	              for a signal or the end: the usual shape of a Go program that handles signals
//	other         create the session on one OS thread, step it on another (what the Go
//	              scheduler does whenever a goroutine resumes on a different thread)
//	other-notify  other, with signal.Notify active
//
// Prints one line: mode, ms per step (mean over N timed steps after W warm-up steps), whether
// the steps ran on the creating thread, OpenBLAS's thread count afterwards, and the process's
// thread count. DIR receives the tiny byte-level dataset and config (tests/bindings'
// tiny.toml, 1 thread) on first use. bench/go_signal/run.sh runs the modes side by side.
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
static int blas_threads(void) {
    int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    return f ? f() : -1;
}
*/
import "C"

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/libtrainrt/trainrt/bindings/go/trainrt"
)

const tinyToml = `# bench/go_signal: the binding tests' tiny byte-level GPT (tests/bindings/run_binding.sh).
[model]
vocab_size = 256
context_length = 32
n_layer = 2
n_head = 2
d_model = 32
seed = 7

[data]
train = "data/train.bin"
val = "data/val.bin"
sampler = "random"
seed = 3

[train]
batch_size = 4
seq_len = 32
steps = 100000
eval_every = 0
eval_batches = 2

[optim]
lr = 0.003
warmup_steps = 2

[runtime]
threads = %d
log_every = 1
`

func main() {
	mode := flag.String("mode", "same", "same | notify | other | other-notify")
	work := flag.String("work", "", "folder for the dataset and config (created)")
	text := flag.String("text", "", "text to tokenize on first use (default: examples/data/tinyshakespeare.txt)")
	steps := flag.Int("steps", 30, "timed steps")
	warmup := flag.Int("warmup", 3, "untimed steps first")
	threads := flag.Int("threads", 1, "runtime.threads")
	flag.Parse()
	if err := run(*mode, *work, *text, *steps, *warmup, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "go_signal:", err)
		os.Exit(1)
	}
}

func setup(work, text string, threads int) (string, error) {
	if work == "" {
		return "", fmt.Errorf("-work DIR is required")
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(work, "data", "train.bin")); err != nil {
		if text == "" {
			_, self, _, _ := runtime.Caller(0)
			text = filepath.Join(filepath.Dir(self), "..", "..", "examples", "data", "tinyshakespeare.txt")
		}
		if _, _, err := trainrt.PrepareBytes(text, filepath.Join(work, "data"), 0.1); err != nil {
			return "", err
		}
	}
	cfg := filepath.Join(work, fmt.Sprintf("tiny-t%d.toml", threads))
	return cfg, os.WriteFile(cfg, []byte(fmt.Sprintf(tinyToml, threads)), 0o644)
}

// onFreshThread runs f on a goroutine locked to an OS thread that ends with it.
func onFreshThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		f()
	}()
	<-done
}

func timeSteps(s *trainrt.Session, warmup, steps int) (float64, error) {
	for i := 0; i < warmup; i++ {
		if _, err := s.Step(); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	for i := 0; i < steps; i++ {
		if _, err := s.Step(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t0).Microseconds()) / 1000 / float64(steps), nil
}

func run(mode, work, text string, steps, warmup, threads int) error {
	cfgPath, err := setup(work, text, threads)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	if mode == "notify" || mode == "other-notify" {
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(sig)
	}
	var s *trainrt.Session
	var createTid, stepTid int
	create := func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		createTid = syscall.Gettid()
		s, err = trainrt.NewSessionFromFile(cfgPath)
	}
	var ms float64
	stepAll := func() {
		runtime.LockOSThread()
		stepTid = syscall.Gettid()
		runtime.UnlockOSThread()
		ms, err = timeSteps(s, warmup, steps)
	}
	switch mode {
	case "same":
		runtime.LockOSThread()
		create()
		if err == nil {
			stepAll()
		}
		runtime.UnlockOSThread()
	case "notify":
		create()
		if err != nil {
			break
		}
		done := make(chan struct{})
		go func() { stepAll(); close(done) }()
		select {
		case <-sig:
			s.RequestStop()
			<-done
		case <-done:
		}
	case "other", "other-notify":
		onFreshThread(create)
		if err == nil {
			onFreshThread(stepAll)
		}
	default:
		return fmt.Errorf("unknown -mode %q", mode)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	tasks, _ := os.ReadDir("/proc/self/task")
	fmt.Printf("mode=%s threads=%d ms_per_step=%.3f same_thread=%v blas_threads=%d os_threads=%d\n",
		mode, threads, ms, createTid == stepTid, int(C.blas_threads()), len(tasks))
	return nil
}
