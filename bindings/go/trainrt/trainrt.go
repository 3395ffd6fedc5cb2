// Package trainrt is the Go binding of libtrainrt, a training runtime for transformer
// language models (include/trainrt/trainrt.h, docs/C_API.md).
//
//	s, err := trainrt.NewSessionFromFile("run.toml")
//	if err != nil { ... }
//	defer s.Close()
//	r, err := s.Step()
//
// Every fallible call returns a *Error (Status and Message) on failure. Handles (Config,
// Session) are safe to use from several goroutines (calls are serialized by a mutex); Close
// is explicit, idempotent and safe from any goroutine, and after it every method returns
// ErrClosed. Session.RequestStop may be called from any goroutine while Train runs. A
// Tokenizer is immutable: its calls run in parallel from any number of goroutines.
package trainrt

/*
#cgo LDFLAGS: -ltrainrt
#include <stdlib.h>
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Status is a trainrt_status code: 0 OK, negative = error, small positive = non-error outcome.
type Status int32

// Status codes (never renumbered).
const (
	StatusOK           Status = C.TRAINRT_OK
	StatusStopped      Status = C.TRAINRT_STOPPED
	ErrInvalidArgument Status = C.TRAINRT_ERR_INVALID_ARGUMENT
	ErrConfig          Status = C.TRAINRT_ERR_CONFIG
	ErrIO              Status = C.TRAINRT_ERR_IO
	ErrFormat          Status = C.TRAINRT_ERR_FORMAT
	ErrOutOfMemory     Status = C.TRAINRT_ERR_OUT_OF_MEMORY
	ErrDevice          Status = C.TRAINRT_ERR_DEVICE
	ErrUnsupported     Status = C.TRAINRT_ERR_UNSUPPORTED
	ErrBusy            Status = C.TRAINRT_ERR_BUSY
	ErrCancelled       Status = C.TRAINRT_ERR_CANCELLED
	ErrVersionMismatch Status = C.TRAINRT_ERR_VERSION_MISMATCH
	ErrInternal        Status = C.TRAINRT_ERR_INTERNAL
	ErrDeviceLost      Status = C.TRAINRT_ERR_DEVICE_LOST
	ErrNonFinite       Status = C.TRAINRT_ERR_NON_FINITE
)

// String is the library's English text for the code ("invalid argument", ...).
func (s Status) String() string {
	return C.GoString(C.trainrt_status_string(C.trainrt_status(s)))
}

// Error is a failed libtrainrt call: its status and trainrt_last_error_message().
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "trainrt: " + e.Status.String()
	}
	return fmt.Sprintf("trainrt: %s: %s", e.Status.String(), e.Message)
}

// ErrClosed is returned by every method of a Config, Session or Tokenizer after Close.
var ErrClosed = &Error{Status: ErrInvalidArgument, Message: "use of a closed trainrt handle"}

// check turns a status into an error. The caller must hold runtime.LockOSThread since the
// failing call: the message is thread-local in libtrainrt.
func check(st C.trainrt_status) error {
	if st >= 0 {
		return nil
	}
	return &Error{Status: Status(st), Message: C.GoString(C.trainrt_last_error_message())}
}

// LogLevel of a log line.
type LogLevel int32

// Log levels.
const (
	LogDebug LogLevel = C.TRAINRT_LOG_DEBUG
	LogInfo  LogLevel = C.TRAINRT_LOG_INFO
	LogWarn  LogLevel = C.TRAINRT_LOG_WARN
	LogError LogLevel = C.TRAINRT_LOG_ERROR
)

// Build feature bits of BuildFeatures.
const (
	FeatureCPU        uint64 = 1 << 0
	FeatureOpenMP     uint64 = 1 << 1
	FeatureOpenBLAS   uint64 = 1 << 2
	FeatureCUDAModule uint64 = 1 << 3
	FeatureCUDNN      uint64 = 1 << 4
	FeatureNCCL       uint64 = 1 << 5
	FeatureMPI        uint64 = 1 << 6
)

// ABIVersionCompiled is the ABI version of the header this binding was built with.
const ABIVersionCompiled = uint32(C.TRAINRT_ABI_VERSION)

// Version is "MAJOR.MINOR.PATCH" of the library actually loaded.
func Version() string { return C.GoString(C.trainrt_version_string()) }

// ABIVersion of the library actually loaded; compare with ABIVersionCompiled.
func ABIVersion() uint32 { return uint32(C.trainrt_abi_version()) }

// BuildFeatures returns the Feature* bits of the loaded library.
func BuildFeatures() uint64 { return uint64(C.trainrt_build_features()) }

var defaultLog struct {
	sync.Mutex
	handles []cgo.Handle // kept alive: another thread may still be logging through an old one
}

// SetDefaultLog sets the process-wide log sink used by sessions without their own; lines at
// minLevel and above go to fn. fn = nil selects the built-in stderr sink.
func SetDefaultLog(fn LogFunc, minLevel LogLevel) error {
	defaultLog.Lock()
	defer defaultLog.Unlock()
	var h cgo.Handle
	if fn != nil {
		h = cgo.NewHandle(fn)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trgo_log_set_default(C.uintptr_t(h), C.int32_t(minLevel))); err != nil {
		if h != 0 {
			h.Delete()
		}
		return err
	}
	if h != 0 {
		defaultLog.handles = append(defaultLog.handles, h)
	}
	return nil
}

// cstr converts s to a C string the caller frees with C.free. A NUL in s would end it early:
// strings from the user go through cstrArg (params.go), which refuses one.
func cstr(s string) *C.char { return C.CString(s) }

func free(p *C.char) { C.free(unsafe.Pointer(p)) }

// getString drives a (buf, cap, &needed) call, growing the buffer once if needed. The caller
// holds runtime.LockOSThread.
func getString(initial int, call func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status) (string, error) {
	buf := make([]byte, initial)
	for {
		var needed C.size_t
		if err := check(call((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)); err != nil {
			return "", err
		}
		if int(needed) < len(buf) {
			return string(buf[:needed]), nil
		}
		buf = make([]byte, int(needed)+1)
	}
}

// CheckpointLatest returns the checkpoint directory outDir/latest names, "" if none yet.
func CheckpointLatest(outDir string) (string, error) {
	p, err := cstrArg(outDir, "outDir")
	if err != nil {
		return "", err
	}
	defer free(p)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(1024, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_checkpoint_latest(buf, cap, needed, p)
	})
}

// Export dtypes.
const (
	DTypeF32  int32 = C.TRAINRT_DTYPE_F32
	DTypeBF16 int32 = C.TRAINRT_DTYPE_BF16
)

// CheckpointExport writes a Hugging Face GPT-2 export of a checkpoint (path as for
// Session.Load) into outDir.
func CheckpointExport(path, outDir string, dtype int32) error {
	p, err := cstrArg(path, "path")
	if err != nil {
		return err
	}
	defer free(p)
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return err
	}
	defer free(o)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_checkpoint_export(p, o, C.int32_t(dtype)))
}

// CheckpointExportAdapter writes a LoRA checkpoint's adapters as a PEFT folder into outDir.
func CheckpointExportAdapter(path, outDir string, dtype int32) error {
	p, err := cstrArg(path, "path")
	if err != nil {
		return err
	}
	defer free(p)
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return err
	}
	defer free(o)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_checkpoint_export_adapter(p, o, C.int32_t(dtype)))
}

// PrepareBytes tokenizes a text file byte by byte into outDir/train.bin and outDir/val.bin;
// it returns the token counts written.
func PrepareBytes(textPath, outDir string, valFraction float64) (trainTokens, valTokens int64, err error) {
	t, err := cstrArg(textPath, "textPath")
	if err != nil {
		return 0, 0, err
	}
	defer free(t)
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return 0, 0, err
	}
	defer free(o)
	var nt, nv C.int64_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_prepare_bytes(&nt, &nv, t, o, C.double(valFraction))); err != nil {
		return 0, 0, err
	}
	return int64(nt), int64(nv), nil
}
