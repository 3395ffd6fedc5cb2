package trainrt

// This file holds the //export trampolines through which libtrainrt calls back into Go. A file
// with //export may only declare things in its preamble, so the C shims that take the
// trampolines' addresses live in trainrt.go.

/*
#include <stdint.h>
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/cgo"
	"unsafe"
)

// LogFunc receives one library log line (no trailing newline). It runs on the thread of the
// libtrainrt call that logs, while that call is in progress: it must not call back into the
// same Session (that Session's lock is held), and it should return quickly.
type LogFunc func(level LogLevel, message string)

// ProgressFunc is called by Session.Train at each logged step and each eval. Return true to
// stop training after the current step (Train then reports stopped = true).
type ProgressFunc func(p Progress) (stop bool)

type progressState struct {
	fn       ProgressFunc
	panicked bool
	value    interface{}
}

type prepareProgressState struct {
	fn       func(done, total int64) (stop bool)
	panicked bool
	value    interface{}
}

//export trainrtGoLog
func trainrtGoLog(level C.int32_t, message *C.char, payload unsafe.Pointer) {
	fn, ok := cgo.Handle(uintptr(payload)).Value().(LogFunc)
	if !ok || fn == nil {
		return
	}
	msg := C.GoString(message)
	defer func() {
		// A panic must not unwind through C frames; report it and carry on.
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "trainrt: panic in log callback: %v\n", r)
		}
	}()
	fn(LogLevel(level), msg)
}

//export trainrtGoProgress
func trainrtGoProgress(p *C.trainrt_progress, payload unsafe.Pointer) (ret C.int32_t) {
	st, ok := cgo.Handle(uintptr(payload)).Value().(*progressState)
	if !ok || st.fn == nil {
		return 0
	}
	defer func() {
		// Stop training and re-panic in Train once control is back in Go.
		if r := recover(); r != nil {
			st.panicked, st.value = true, r
			ret = 1
		}
	}()
	if st.fn(progressFromC(p)) {
		return 1
	}
	return 0
}

//export trainrtGoPrepareProgress
func trainrtGoPrepareProgress(done, total C.int64_t, payload unsafe.Pointer) (ret C.int32_t) {
	st, ok := cgo.Handle(uintptr(payload)).Value().(*prepareProgressState)
	if !ok || st.fn == nil {
		return 0
	}
	if st.panicked {
		return 1
	}
	defer func() {
		// Stop the run and re-panic in PrepareText once control is back in Go.
		if r := recover(); r != nil {
			st.panicked, st.value = true, r
			ret = 1
		}
	}()
	if st.fn(int64(done), int64(total)) {
		return 1
	}
	return 0
}

func progressFromC(p *C.trainrt_progress) Progress {
	return Progress{
		Kind:        ProgressKind(p.kind),
		Step:        int64(p.step),
		StepsTotal:  int64(p.steps_total),
		Loss:        float64(p.loss),
		LR:          float64(p.lr),
		GradNorm:    float64(p.grad_norm),
		TokensTotal: int64(p.tokens_total),
		Ms:          float64(p.ms),
		TokensPerS:  float64(p.tokens_per_s),
		ElapsedS:    float64(p.elapsed_s),
		EtaS:        float64(p.eta_s),
	}
}
