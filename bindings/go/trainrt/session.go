package trainrt

/*
#include <stdlib.h>
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// StepResult holds the figures of one completed optimizer step.
type StepResult struct {
	Step        int64   // 1-based step number; 0 = no step completed yet
	Loss        float64 // mean train loss over the step's micro-batches (nats/token)
	LR          float64
	GradNorm    float64 // global L2 norm of the gradient before clipping
	Tokens      int64   // tokens this step trained on
	TokensTotal int64   // tokens trained on since step 1
	Ms          float64 // wall time of the step
}

// Metrics are the running figures of a session.
type Metrics struct {
	Step          int64
	TokensTotal   int64
	TokensPerS    float64
	StepMsP50     float64
	StepMsP95     float64
	BytesInUse    int64
	LastLoss      float64 // NaN before the first step
	LastValLoss   float64 // NaN before the first eval
	BytesReserved int64
	SkippedSteps  int64
	LossScale     float64
	// Version 3: training FLOPs per token (6N + 6*L*C*T), the device's dense peak FLOP/s in
	// the run's precision (0 = unknown, e.g. the CPU) and MFU (0 when the peak is unknown).
	ModelFlopsPerToken float64
	PeakFlops          float64
	Mfu                float64
	// Data parallel: this process's rank and the ranks training together (0 and 1 alone).
	Rank      int32
	WorldSize int32
}

// ProgressKind says what a Progress reports.
type ProgressKind int32

// Progress kinds.
const (
	ProgressStep ProgressKind = C.TRAINRT_PROGRESS_STEP
	ProgressEval ProgressKind = C.TRAINRT_PROGRESS_EVAL
)

// Progress is what Session.Train reports to its ProgressFunc.
type Progress struct {
	Kind        ProgressKind
	Step        int64
	StepsTotal  int64
	Loss        float64 // step: train loss of that step; eval: val loss
	LR          float64
	GradNorm    float64
	TokensTotal int64
	Ms          float64
	TokensPerS  float64
	ElapsedS    float64
	EtaS        float64
}

// SampleOptions of Session.Sample.
type SampleOptions struct {
	Temperature float64 // > 0 scales the logits; 0 = greedy
	TopK        int32   // 0 = all tokens
	Seed        uint64
}

// DefaultSampleOptions: temperature 1, all tokens, seed 1337.
func DefaultSampleOptions() SampleOptions {
	return SampleOptions{Temperature: 1, TopK: 0, Seed: 1337}
}

// Session is one training run. Its methods may be called from any goroutine; they are
// serialized. RequestStop and Close may be called while another goroutine is inside Train.
type Session struct {
	mu      sync.Mutex // held for the duration of every call using h
	stopMu  sync.Mutex // guards h against Close while RequestStop uses it
	closing atomic.Bool
	h       *C.trainrt_session
	logH    cgo.Handle // payload of the session's log sink, freed on Close
}

// NewSession builds model, optimizer, data and backend from a copy of cfg.
func NewSession(cfg *Config) (*Session, error) {
	h, logH, err := cfg.createSession()
	if err != nil {
		return nil, err
	}
	s := &Session{h: h, logH: logH}
	runtime.SetFinalizer(s, (*Session).Close)
	return s, nil
}

// NewSessionFromFile is ConfigFromFile followed by NewSession.
func NewSessionFromFile(path string) (*Session, error) {
	cfg, err := ConfigFromFile(path)
	if err != nil {
		return nil, err
	}
	defer cfg.Close()
	return NewSession(cfg)
}

// Close stops a Train in progress (waiting for it to return) and frees the session.
// Idempotent and safe from any goroutine; afterwards every method returns ErrClosed.
func (s *Session) Close() error {
	s.stopMu.Lock()
	if s.h == nil {
		s.stopMu.Unlock()
		return nil
	}
	s.closing.Store(true)
	C.trainrt_session_request_stop(s.h) // a running Train returns after its current step
	s.stopMu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopMu.Lock()
	h, logH := s.h, s.logH
	s.h, s.logH = nil, 0
	s.stopMu.Unlock()
	if h != nil {
		C.trainrt_session_destroy(h)
		if logH != 0 {
			logH.Delete()
		}
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// lock takes the call lock; on success the caller must s.mu.Unlock().
func (s *Session) lock() error {
	if s.closing.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	if s.h == nil || s.closing.Load() {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// RequestStop asks a running Train to stop after its current step. Safe from any goroutine
// (it does not wait for the session's lock). A request made while no Train runs stops the
// next one at once.
func (s *Session) RequestStop() error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.h == nil {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_request_stop(s.h))
}

// SetLog sets this session's log sink (overriding the config's and the process default).
// fn = nil: back to the process default.
func (s *Session) SetLog(fn LogFunc, minLevel LogLevel) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	var h cgo.Handle
	if fn != nil {
		h = cgo.NewHandle(fn)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trgo_session_set_log(s.h, C.uintptr_t(h), C.int32_t(minLevel))); err != nil {
		if h != 0 {
			h.Delete()
		}
		return err
	}
	if s.logH != 0 {
		s.logH.Delete()
	}
	s.logH = h
	return nil
}

func newStepResult() C.trainrt_step_result {
	var r C.trainrt_step_result
	r.struct_size = C.uint32_t(unsafe.Sizeof(r))
	r.version = C.TRAINRT_STEP_RESULT_VERSION
	return r
}

func stepResultFromC(r *C.trainrt_step_result) StepResult {
	return StepResult{int64(r.step), float64(r.loss), float64(r.lr), float64(r.grad_norm),
		int64(r.tokens), int64(r.tokens_total), float64(r.ms)}
}

// Step runs one optimizer step on batches drawn by the session's sampler. The result is the
// most recent completed step (on an asynchronous backend it may lag: use Sync).
func (s *Session) Step() (StepResult, error) {
	if err := s.lock(); err != nil {
		return StepResult{}, err
	}
	defer s.mu.Unlock()
	r := newStepResult()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_step(&r, s.h)); err != nil {
		return StepResult{}, err
	}
	return stepResultFromC(&r), nil
}

// StepTokens runs one step on host tokens: grad_accum * batch_size * (seq_len + 1) ids.
func (s *Session) StepTokens(tokens []int32) (StepResult, error) {
	if err := s.lock(); err != nil {
		return StepResult{}, err
	}
	defer s.mu.Unlock()
	r := newStepResult()
	var p *C.int32_t
	if len(tokens) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&tokens[0]))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_step_tokens(&r, s.h, p, C.size_t(len(tokens)))); err != nil {
		return StepResult{}, err
	}
	return stepResultFromC(&r), nil
}

// StepMasked is StepTokens training on some targets only (instruction tuning): lossMask holds
// grad_accum * batch_size * seq_len bytes, non-zero where the target tokens[k][b][t+1] counts
// (nil: all count); positions as many values (nil: 0 .. seq_len-1 in every row). The loss is
// the mean over the step's counted targets. When both are given they have the same length.
func (s *Session) StepMasked(tokens []int32, lossMask []uint8, positions []int32) (StepResult, error) {
	if lossMask != nil && positions != nil && len(lossMask) != len(positions) {
		return StepResult{}, &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf(
			"StepMasked: lossMask holds %d values but positions %d; both hold "+
				"grad_accum * batch_size * seq_len", len(lossMask), len(positions))}
	}
	if err := s.lock(); err != nil {
		return StepResult{}, err
	}
	defer s.mu.Unlock()
	r := newStepResult()
	var p *C.int32_t
	if len(tokens) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&tokens[0]))
	}
	var m *C.uint8_t
	var pos *C.int32_t
	n := 0
	if len(lossMask) > 0 {
		m = (*C.uint8_t)(unsafe.Pointer(&lossMask[0]))
		n = len(lossMask)
	}
	if len(positions) > 0 {
		pos = (*C.int32_t)(unsafe.Pointer(&positions[0]))
		n = len(positions)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_step_masked(&r, s.h, p, C.size_t(len(tokens)), m, pos,
		C.size_t(n))); err != nil {
		return StepResult{}, err
	}
	return stepResultFromC(&r), nil
}

// Sync waits for all queued work and returns the last step's figures.
func (s *Session) Sync() (StepResult, error) {
	if err := s.lock(); err != nil {
		return StepResult{}, err
	}
	defer s.mu.Unlock()
	r := newStepResult()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_sync(&r, s.h)); err != nil {
		return StepResult{}, err
	}
	return stepResultFromC(&r), nil
}

// Eval returns the mean loss over train.eval_batches windows of data.val.
func (s *Session) Eval() (float64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var out C.double
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_eval(&out, s.h)); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// EvalResult is a whole evaluation: every target of a token stream scored exactly once.
type EvalResult struct {
	Loss       float64 // mean loss over the scored targets (nats/token)
	Perplexity float64 // exp(Loss)
	Tokens     int64   // targets scored: the stream's tokens - 1
	Windows    int64   // windows of train.seq_len targets run (the last may be shorter)
}

func (s *Session) evalWhole(call func(r *C.trainrt_eval_result) C.trainrt_status) (EvalResult, error) {
	if err := s.lock(); err != nil {
		return EvalResult{}, err
	}
	defer s.mu.Unlock()
	var r C.trainrt_eval_result
	r.struct_size = C.uint32_t(unsafe.Sizeof(r))
	r.version = C.TRAINRT_EVAL_RESULT_VERSION
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(call(&r)); err != nil {
		return EvalResult{}, err
	}
	return EvalResult{float64(r.loss), float64(r.perplexity), int64(r.tokens), int64(r.windows)}, nil
}

// EvalWhole scores every token of data.val but the first exactly once, in disjoint windows of
// train.seq_len targets (the shards read as one stream; the last window shorter; no wrap).
func (s *Session) EvalWhole() (EvalResult, error) {
	return s.evalWhole(func(r *C.trainrt_eval_result) C.trainrt_status {
		return C.trainrt_session_eval_whole(r, s.h)
	})
}

// EvalTokens is EvalWhole over host ids (at least 2) taken as one stream.
func (s *Session) EvalTokens(tokens []int32) (EvalResult, error) {
	var p *C.int32_t
	if len(tokens) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&tokens[0]))
	}
	return s.evalWhole(func(r *C.trainrt_eval_result) C.trainrt_status {
		return C.trainrt_session_eval_tokens(r, s.h, p, C.size_t(len(tokens)))
	})
}

// EvalText is EvalWhole over raw text, tokenized in memory as PrepareText lays out one text
// file: with tokenizer (a tokenizer.json/.model or a model folder) its end-of-text token, then
// the text's ids; tokenizer "" = byte-level (one id per byte).
func (s *Session) EvalText(text string, tokenizer string) (EvalResult, error) {
	var tok *C.char
	if tokenizer != "" {
		t, err := cstrArg(tokenizer, "tokenizer")
		if err != nil {
			return EvalResult{}, err
		}
		defer free(t)
		tok = t
	}
	body := C.CBytes([]byte(text))
	defer C.free(body)
	return s.evalWhole(func(r *C.trainrt_eval_result) C.trainrt_status {
		return C.trainrt_session_eval_text(r, s.h, (*C.char)(body), C.size_t(len(text)), tok)
	})
}

// Forward returns the loss of the current model on rows of (seqLen + 1) host tokens without
// updating it. logits may be nil; otherwise it receives rows * seqLen * vocab_size floats.
func (s *Session) Forward(tokens []int32, rows, seqLen int64, logits []float32) (float64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if int64(len(tokens)) < rows*(seqLen+1) || rows < 1 || seqLen < 1 {
		return 0, &Error{Status: ErrInvalidArgument, Message: "Forward: len(tokens) must be at least rows * (seqLen + 1)"}
	}
	var lp *C.float
	if len(logits) > 0 {
		lp = (*C.float)(unsafe.Pointer(&logits[0]))
	}
	var out C.double
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_forward(&out, lp, C.size_t(len(logits)), s.h,
		(*C.int32_t)(unsafe.Pointer(&tokens[0])), C.int64_t(rows), C.int64_t(seqLen))); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// Train runs nSteps more steps (nSteps <= 0: until train.steps) with the config's log and eval
// cadence, calling fn (may be nil) at each logged step and eval. stopped is true when
// RequestStop, Close or fn ended it early. A panic in fn stops training and is re-raised here.
func (s *Session) Train(nSteps int64, fn ProgressFunc) (stopped bool, err error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	var h cgo.Handle
	var st *progressState
	if fn != nil {
		st = &progressState{fn: fn}
		h = cgo.NewHandle(st)
		defer h.Delete()
	}
	runtime.LockOSThread()
	status := C.trgo_session_train(s.h, C.int64_t(nSteps), C.uintptr_t(h))
	err = check(status)
	runtime.UnlockOSThread()
	if st != nil && st.panicked {
		panic(st.value)
	}
	if err != nil {
		return false, err
	}
	return status == C.TRAINRT_STOPPED, nil
}

// Metrics returns the session's running figures.
func (s *Session) Metrics() (Metrics, error) {
	if err := s.lock(); err != nil {
		return Metrics{}, err
	}
	defer s.mu.Unlock()
	var m C.trainrt_metrics
	m.struct_size = C.uint32_t(unsafe.Sizeof(m))
	m.version = C.TRAINRT_METRICS_VERSION
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_metrics(&m, s.h)); err != nil {
		return Metrics{}, err
	}
	return Metrics{int64(m.step), int64(m.tokens_total), float64(m.tokens_per_s),
		float64(m.step_ms_p50), float64(m.step_ms_p95), int64(m.bytes_in_use),
		float64(m.last_loss), float64(m.last_val_loss), int64(m.bytes_reserved),
		int64(m.skipped_steps), float64(m.loss_scale), float64(m.model_flops_per_token),
		float64(m.peak_flops), float64(m.mfu), int32(m.rank), int32(m.world_size)}, nil
}

// ConfigDump returns the session's resolved config as TOML.
func (s *Session) ConfigDump() (string, error) {
	if err := s.lock(); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(4096, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_session_config_dump(buf, cap, needed, s.h)
	})
}

// Save writes a checkpoint and returns its directory. dir = "": into train.out_dir as
// step_<8 digits>/ (rotating old ones); otherwise exactly dir, which must not exist.
func (s *Session) Save(dir string) (string, error) {
	if err := s.lock(); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	var d *C.char
	if dir != "" {
		var err error
		if d, err = cstrArg(dir, "dir"); err != nil {
			return "", err
		}
		defer free(d)
	}
	// One call only (a second would write a second checkpoint): a buffer no path outgrows.
	buf := make([]byte, 1<<16)
	var needed C.size_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_save((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed, s.h, d)); err != nil {
		return "", err
	}
	if int(needed) >= len(buf) {
		needed = C.size_t(len(buf) - 1)
	}
	return string(buf[:needed]), nil
}

// Load restores weights, optimizer state, step, tokens and sampler cursor from a checkpoint
// directory or a folder whose `latest` file names one.
func (s *Session) Load(path string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := cstrArg(path, "path")
	if err != nil {
		return err
	}
	defer free(p)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_load(s.h, p))
}

// Export writes a Hugging Face GPT-2 export (model.safetensors + config.json) into outDir.
func (s *Session) Export(outDir string, dtype int32) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return err
	}
	defer free(o)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_export(s.h, o, C.int32_t(dtype)))
}

// ExportAdapter writes a LoRA run's adapters as a Hugging Face PEFT folder
// (adapter_model.safetensors + adapter_config.json) into outDir; Export of such a run writes
// the merged model. A run without adapters is an InvalidArgument error.
func (s *Session) ExportAdapter(outDir string, dtype int32) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return err
	}
	defer free(o)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_export_adapter(s.h, o, C.int32_t(dtype)))
}

// Generate generates up to maxNew tokens continuing prompt, ending after one of stopIDs (the
// last id returned; a chat model's end-of-turn: ChatTemplate.StopIDs) when one comes. opts
// nil = DefaultSampleOptions().
func (s *Session) Generate(prompt []int32, maxNew int, opts *SampleOptions, stopIDs []int32) ([]int32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if len(prompt) == 0 || maxNew < 0 {
		return nil, &Error{Status: ErrInvalidArgument, Message: "Generate: empty prompt or negative maxNew"}
	}
	var o C.trainrt_sample_options
	o.struct_size = C.uint32_t(unsafe.Sizeof(o))
	o.version = C.TRAINRT_SAMPLE_OPTIONS_VERSION
	d := DefaultSampleOptions()
	if opts != nil {
		d = *opts
	}
	o.temperature, o.top_k, o.seed = C.double(d.Temperature), C.int32_t(d.TopK), C.uint64_t(d.Seed)
	if len(stopIDs) > 0 {
		// C memory: a Go struct passed to C may not point at Go memory (cgo's pointer rules).
		stops := (*C.int32_t)(C.malloc(C.size_t(len(stopIDs)) * C.size_t(unsafe.Sizeof(C.int32_t(0)))))
		defer C.free(unsafe.Pointer(stops))
		copy(unsafe.Slice((*int32)(unsafe.Pointer(stops)), len(stopIDs)), stopIDs)
		o.stop_ids, o.n_stop_ids = stops, C.size_t(len(stopIDs))
	}
	out := make([]int32, maxNew+1) // +1: never pass a nil buffer
	var n C.size_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_generate(&n, (*C.int32_t)(unsafe.Pointer(&out[0])), C.size_t(maxNew), s.h,
		(*C.int32_t)(unsafe.Pointer(&prompt[0])), C.size_t(len(prompt)), C.size_t(maxNew), &o)); err != nil {
		return nil, err
	}
	return out[:n], nil
}

// Sample generates nNew tokens continuing prompt. opts nil = DefaultSampleOptions().
func (s *Session) Sample(prompt []int32, nNew int, opts *SampleOptions) ([]int32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if len(prompt) == 0 || nNew < 0 {
		return nil, &Error{Status: ErrInvalidArgument, Message: "Sample: empty prompt or negative nNew"}
	}
	var o C.trainrt_sample_options
	o.struct_size = C.uint32_t(unsafe.Sizeof(o))
	o.version = C.TRAINRT_SAMPLE_OPTIONS_VERSION
	d := DefaultSampleOptions()
	if opts != nil {
		d = *opts
	}
	o.temperature, o.top_k, o.seed = C.double(d.Temperature), C.int32_t(d.TopK), C.uint64_t(d.Seed)
	out := make([]int32, nNew+1) // +1: never pass a nil buffer
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_session_sample((*C.int32_t)(unsafe.Pointer(&out[0])), C.size_t(nNew), s.h,
		(*C.int32_t)(unsafe.Pointer(&prompt[0])), C.size_t(len(prompt)), C.size_t(nNew), &o)); err != nil {
		return nil, err
	}
	return out[:nNew], nil
}
