package trainrt

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The environment comes from tests/bindings/run_binding.sh (through bindings/go/test.sh).
func testConfig(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TRAINRT_TEST_CONFIG")
	if p == "" {
		t.Fatal("TRAINRT_TEST_CONFIG is not set (run bindings/go/test.sh)")
	}
	return p
}

// expected reads "STEP LOSS_BITS" lines: the C API's own losses for the test config.
func expected(t *testing.T) []uint64 {
	t.Helper()
	p := os.Getenv("TRAINRT_TEST_EXPECTED")
	if p == "" {
		t.Fatal("TRAINRT_TEST_EXPECTED is not set (run bindings/go/test.sh)")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bits []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		step, _ := strconv.Atoi(fields[0])
		b, err := strconv.ParseUint(fields[1], 16, 64)
		if err != nil || step != len(bits)+1 {
			t.Fatalf("bad expected line %q", sc.Text())
		}
		bits = append(bits, b)
	}
	if len(bits) == 0 {
		t.Fatal("no expected losses")
	}
	return bits
}

func scratch(t *testing.T) string {
	t.Helper()
	if base := os.Getenv("TRAINRT_TEST_TMP"); base != "" {
		d, err := os.MkdirTemp(base, "go-"+t.Name()+"-")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func mustSession(t *testing.T, cfg *Config) *Session {
	t.Helper()
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := ConfigFromFile(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	return cfg
}

func asError(t *testing.T, err error, want Status) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *trainrt.Error with status %d, got %T %v", want, err, err)
	}
	if e.Status != want {
		t.Fatalf("want status %v (%d), got %v (%d): %v", want, want, e.Status, e.Status, err)
	}
	return e
}

func TestVersion(t *testing.T) {
	v := Version()
	if strings.Count(v, ".") != 2 {
		t.Fatalf("version %q", v)
	}
	if ABIVersion() != ABIVersionCompiled {
		t.Fatalf("ABI %d, header %d", ABIVersion(), ABIVersionCompiled)
	}
	if BuildFeatures()&FeatureCPU == 0 {
		t.Fatal("CPU feature bit missing")
	}
	if ErrConfig.String() == "" || StatusOK.String() == "" {
		t.Fatal("empty status string")
	}
}

// Steps through the binding reproduce the C API's losses bit for bit.
func TestLossesMatchC(t *testing.T) {
	want := expected(t)
	s, err := NewSessionFromFile(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, w := range want {
		r, err := s.Step()
		if err != nil {
			t.Fatal(err)
		}
		r, err = s.Sync()
		if err != nil {
			t.Fatal(err)
		}
		if r.Step != int64(i+1) {
			t.Fatalf("step %d, want %d", r.Step, i+1)
		}
		if got := math.Float64bits(r.Loss); got != w {
			t.Fatalf("step %d: loss bits %016x (%v), C API %016x (%v)", r.Step, got, r.Loss, w,
				math.Float64frombits(w))
		}
		if r.Tokens <= 0 || r.TokensTotal != int64(i+1)*r.Tokens || r.LR < 0 || !(r.GradNorm > 0) {
			t.Fatalf("step figures %+v", r)
		}
	}
	m, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.Step != int64(len(want)) || math.Float64bits(m.LastLoss) != want[len(want)-1] {
		t.Fatalf("metrics %+v", m)
	}
	// Metrics v3 on the CPU: FLOPs per token known, no peak, so no MFU.
	if !(m.ModelFlopsPerToken > 0) || m.PeakFlops != 0 || m.Mfu != 0 {
		t.Fatalf("metrics v3 fields %+v", m)
	}
	if m.Rank != 0 || m.WorldSize != 1 {
		t.Fatalf("metrics v4: alone is rank 0 of 1: %+v", m)
	}
}

func TestConfig(t *testing.T) {
	cfg := mustConfig(t)
	if n, err := cfg.GetInt("train.batch_size"); err != nil || n != 4 {
		t.Fatalf("batch_size %d %v", n, err)
	}
	if lr, err := cfg.GetFloat("optim.lr"); err != nil || lr != 0.003 {
		t.Fatalf("lr %v %v", lr, err)
	}
	if err := cfg.Set("optim.lr", "1e-3"); err != nil {
		t.Fatal(err)
	}
	if lr, _ := cfg.GetFloat("optim.lr"); lr != 1e-3 {
		t.Fatalf("lr after Set %v", lr)
	}
	if _, err := cfg.GetBool("train.batch_size"); err == nil {
		t.Fatal("GetBool of an int key succeeded")
	}
	if s, err := cfg.GetString("data.sampler"); err != nil || s != "random" {
		t.Fatalf("sampler %q %v", s, err)
	}
	// Unknown key: a *Error with the config status and the library's message; config unchanged.
	err := cfg.Set("optim.no_such_key", "1")
	e := asError(t, err, ErrConfig)
	if e.Message == "" || !strings.Contains(err.Error(), "no_such_key") {
		t.Fatalf("message %q", err.Error())
	}
	asError(t, cfg.Set("train.batch_size", "\"four\""), ErrConfig)
	if n, _ := cfg.GetInt("train.batch_size"); n != 4 {
		t.Fatalf("failed Set changed the config: %d", n)
	}
	dump, err := cfg.Dump()
	if err != nil || !strings.Contains(dump, "batch_size") || len(dump) < 200 {
		t.Fatalf("dump (%d bytes) %v", len(dump), err)
	}
	info, err := cfg.ModelInfo()
	if err != nil || info.Parameters <= 0 || info.BytesTotal < info.BytesParameters {
		t.Fatalf("model info %+v %v", info, err)
	}

	// FromString: the dump round-trips; bad TOML is ErrConfig; a missing file is ErrIO.
	c2, err := ConfigFromString(dump, filepath.Dir(testConfig(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if lr, _ := c2.GetFloat("optim.lr"); lr != 1e-3 {
		t.Fatalf("round-tripped lr %v", lr)
	}
	if _, err := ConfigFromString("[model\nvocab_size = ", ""); err == nil {
		t.Fatal("bad TOML accepted")
	} else {
		asError(t, err, ErrConfig)
	}
	if _, err := ConfigFromFile(filepath.Join(scratch(t), "missing.toml")); err == nil {
		t.Fatal("missing file accepted")
	}
	d, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	d.Close()
	if _, err := d.GetInt("train.batch_size"); err != ErrClosed {
		t.Fatalf("closed config: %v", err)
	}
}

// The message of a failure is read on the failing call's thread, even under heavy
// goroutine churn (each goroutine gets its own key in the message).
func TestErrorMessagesPerGoroutine(t *testing.T) {
	cfg := mustConfig(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c, err := ConfigFromString("", "")
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			key := fmt.Sprintf("train.bogus_%d", g)
			for i := 0; i < 200; i++ {
				err := c.Set(key, "1")
				if err == nil || !strings.Contains(err.Error(), key) {
					errs <- fmt.Errorf("goroutine %d: %v", g, err)
					return
				}
			}
		}(g)
	}
	_ = cfg
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A mask of all ones is StepTokens bit for bit; a mask that counts nothing is refused.
func TestStepMasked(t *testing.T) {
	cfg := mustConfig(t)
	ga, _ := cfg.GetInt("train.grad_accum")
	b, _ := cfg.GetInt("train.batch_size")
	seq, _ := cfg.GetInt("train.seq_len")
	rows := int(ga * b)
	tokens := make([]int32, rows*int(seq+1))
	for i := range tokens {
		tokens[i] = int32((i*37 + 11) % 256)
	}
	ones := make([]uint8, rows*int(seq))
	for i := range ones {
		ones[i] = 1
	}
	s1, s2 := mustSession(t, cfg), mustSession(t, cfg)
	r1, err := s1.StepTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s2.StepMasked(tokens, ones, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(r1.Loss) != math.Float64bits(r2.Loss) {
		t.Fatalf("all-ones mask %v != StepTokens %v", r2.Loss, r1.Loss)
	}
	zeros := make([]uint8, len(ones))
	_, err = s2.StepMasked(tokens, zeros, nil)
	asError(t, err, ErrInvalidArgument)
	_, err = s2.StepMasked(tokens, ones, make([]int32, 3))
	asError(t, err, ErrInvalidArgument)
}

func TestCloseIdempotentAndErrClosed(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checks := map[string]error{}
	_, checks["Step"] = s.Step()
	_, checks["Sync"] = s.Sync()
	_, checks["Eval"] = s.Eval()
	_, checks["Metrics"] = s.Metrics()
	_, checks["ConfigDump"] = s.ConfigDump()
	_, checks["Train"] = s.Train(1, nil)
	_, checks["Save"] = s.Save("")
	_, checks["Sample"] = s.Sample([]int32{65}, 1, nil)
	_, checks["StepTokens"] = s.StepTokens([]int32{1})
	_, checks["StepMasked"] = s.StepMasked([]int32{1}, nil, nil)
	_, checks["Forward"] = s.Forward([]int32{1, 2}, 1, 1, nil)
	checks["Load"] = s.Load("x")
	checks["Export"] = s.Export("x", DTypeF32)
	checks["RequestStop"] = s.RequestStop()
	checks["SetLog"] = s.SetLog(nil, LogInfo)
	for name, err := range checks {
		if err != ErrClosed {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	// Concurrent Close calls from many goroutines.
	s2 := mustSession(t, mustConfig(t))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); s2.Close() }()
	}
	wg.Wait()
	if _, err := s2.Step(); err != ErrClosed {
		t.Fatalf("step after concurrent Close: %v", err)
	}
}

func TestLogCallbacks(t *testing.T) {
	cfg := mustConfig(t)
	var mu sync.Mutex
	var lines []string
	if err := cfg.SetLog(func(level LogLevel, msg string) {
		mu.Lock()
		lines = append(lines, msg)
		mu.Unlock()
	}, LogDebug); err != nil {
		t.Fatal(err)
	}
	s := mustSession(t, cfg)
	mu.Lock()
	n := len(lines)
	mu.Unlock()
	if n == 0 {
		t.Fatal("no log lines at session creation (the backend is logged at INFO)")
	}
	// A session-level sink replaces it; the config's handle stays valid after the config closes.
	cfg.Close()
	var own []string
	if err := s.SetLog(func(level LogLevel, msg string) { own = append(own, msg) }, LogDebug); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Train(2, nil); err != nil {
		t.Fatal(err)
	}
	if len(own) == 0 {
		t.Fatal("no log lines from Train with log_every = 1")
	}
	// A panicking sink does not crash the process.
	if err := s.SetLog(func(LogLevel, string) { panic("boom") }, LogDebug); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLog(nil, LogWarn); err != nil {
		t.Fatal(err)
	}
}

func longConfig(t *testing.T) *Config {
	cfg := mustConfig(t)
	if err := cfg.Set("train.steps", "1000000"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTrainProgress(t *testing.T) {
	want := expected(t)
	s := mustSession(t, mustConfig(t))
	var steps []int64
	var losses []float64
	stopped, err := s.Train(0, func(p Progress) bool {
		if p.Kind == ProgressStep {
			steps = append(steps, p.Step)
			losses = append(losses, p.Loss)
		}
		return false
	})
	if err != nil || stopped {
		t.Fatalf("train: stopped=%v err=%v", stopped, err)
	}
	if len(steps) != len(want) {
		t.Fatalf("progress steps %v, want %d", steps, len(want))
	}
	for i := range steps {
		if steps[i] != int64(i+1) || math.Float64bits(losses[i]) != want[i] {
			t.Fatalf("progress %d: step %d loss %v", i, steps[i], losses[i])
		}
	}
	// The callback asks to stop at step 3.
	s2 := mustSession(t, longConfig(t))
	stopped, err = s2.Train(0, func(p Progress) bool { return p.Step >= 3 })
	if err != nil || !stopped {
		t.Fatalf("callback stop: stopped=%v err=%v", stopped, err)
	}
	if r, _ := s2.Sync(); r.Step != 3 {
		t.Fatalf("stopped at step %d, want 3", r.Step)
	}
	// A panic in the callback stops training and is re-raised in Train's goroutine.
	func() {
		defer func() {
			if r := recover(); r != "progress panic" {
				t.Fatalf("recovered %v", r)
			}
		}()
		s2.Train(0, func(p Progress) bool { panic("progress panic") })
		t.Fatal("Train did not re-panic")
	}()
	if _, err := s2.Step(); err != nil {
		t.Fatalf("session unusable after callback panic: %v", err)
	}
}

// RequestStop from another goroutine ends a Train that would otherwise run for a long time.
func TestRequestStopFromGoroutine(t *testing.T) {
	s := mustSession(t, longConfig(t))
	started := make(chan struct{}, 1)
	go func() {
		<-started
		if err := s.RequestStop(); err != nil {
			t.Error(err)
		}
	}()
	done := make(chan struct{})
	var stopped bool
	var err error
	go func() {
		defer close(done)
		stopped, err = s.Train(0, func(p Progress) bool {
			select {
			case started <- struct{}{}:
			default:
			}
			return false
		})
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Train did not stop")
	}
	if err != nil || !stopped {
		t.Fatalf("stopped=%v err=%v", stopped, err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatalf("session unusable after stop: %v", err)
	}
}

// Close from another goroutine while Train runs: Train returns (stopped), Close waits for it,
// and every later call fails with ErrClosed.
func TestCloseDuringTrain(t *testing.T) {
	s := mustSession(t, longConfig(t))
	started := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		stopped, err := s.Train(0, func(p Progress) bool {
			select {
			case started <- struct{}{}:
			default:
			}
			return false
		})
		if err == nil && !stopped {
			err = errors.New("Train completed instead of stopping")
		}
		done <- err
	}()
	<-started
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}

func TestSaveLoadEvalSample(t *testing.T) {
	dir := scratch(t)
	cfg := mustConfig(t)
	a := mustSession(t, cfg)
	for i := 0; i < 3; i++ {
		if _, err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := filepath.Join(dir, "ckpt")
	written, err := a.Save(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if written == "" {
		t.Fatal("Save returned no path")
	}
	asError(t, func() error { _, err := a.Save(ckpt); return err }(), ErrIO) // must not exist
	b := mustSession(t, cfg)
	if err := b.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	ra, err := a.Step()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Step()
	if err != nil {
		t.Fatal(err)
	}
	if ra.Step != 4 || rb.Step != 4 || math.Float64bits(ra.Loss) != math.Float64bits(rb.Loss) {
		t.Fatalf("resumed diverged: %+v vs %+v", ra, rb)
	}
	asError(t, b.Load(filepath.Join(dir, "nope")), ErrIO)

	val, err := a.Eval()
	if err != nil || !(val > 0) || math.IsInf(val, 0) {
		t.Fatalf("eval %v %v", val, err)
	}
	// Whole evals: of data.val, of host ids, of text (bytes: the same stream as the ids).
	w, err := a.EvalWhole()
	if err != nil || w.Tokens <= 0 || math.Abs(w.Perplexity-math.Exp(w.Loss)) > 1e-9*w.Perplexity {
		t.Fatalf("EvalWhole %+v %v", w, err)
	}
	ids := []int32{'R', 'O', 'M', 'E', 'O'}
	et, err := a.EvalTokens(ids)
	if err != nil || et.Tokens != 4 || et.Windows != 1 {
		t.Fatalf("EvalTokens %+v %v", et, err)
	}
	ex, err := a.EvalText("ROMEO", "")
	if err != nil || math.Float64bits(ex.Loss) != math.Float64bits(et.Loss) {
		t.Fatalf("EvalText %+v vs %+v (%v)", ex, et, err)
	}
	_, err = a.EvalTokens(ids[:1])
	asError(t, err, ErrInvalidArgument)
	_, err = a.EvalText("ab", "t\x00k")
	asError(t, err, ErrInvalidArgument)

	opts := SampleOptions{Temperature: 0.8, TopK: 40, Seed: 5}
	prompt := []int32{'R', 'O', 'M', 'E', 'O', ':'}
	s1, err := a.Sample(prompt, 16, &opts)
	if err != nil || len(s1) != 16 {
		t.Fatalf("sample %v %v", s1, err)
	}
	s2, _ := a.Sample(prompt, 16, &opts)
	for i := range s1 {
		if s1[i] != s2[i] || s1[i] < 0 || s1[i] >= 256 {
			t.Fatalf("sample not reproducible: %v vs %v", s1, s2)
		}
	}
	if _, err := a.Sample([]int32{999}, 4, nil); err == nil {
		t.Fatal("out-of-vocab prompt accepted")
	}
	// Forward with logits on host tokens; StepTokens with a wrong count is refused.
	tokens := make([]int32, 2*(8+1))
	for i := range tokens {
		tokens[i] = int32('a' + i%26)
	}
	logits := make([]float32, 2*8*256)
	loss, err := a.Forward(tokens, 2, 8, logits)
	if err != nil || !(loss > 0) {
		t.Fatalf("forward %v %v", loss, err)
	}
	nonzero := false
	for _, v := range logits {
		nonzero = nonzero || v != 0
	}
	if !nonzero {
		t.Fatal("logits all zero")
	}
	asError(t, func() error { _, err := a.StepTokens(tokens); return err }(), ErrInvalidArgument)
	cd, err := a.ConfigDump()
	if err != nil || !strings.Contains(cd, "seq_len") {
		t.Fatalf("config dump %v", err)
	}
	exp := filepath.Join(dir, "hf")
	if err := a.Export(exp, DTypeF32); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(exp, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	// No LoRA adapters in this run: nothing to export as an adapter.
	asError(t, a.ExportAdapter(filepath.Join(dir, "adapter"), DTypeF32), ErrInvalidArgument)
	asError(t, CheckpointExportAdapter(ckpt, filepath.Join(dir, "adapter"), DTypeF32), ErrInvalidArgument)
	if _, err := ConfigFromCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	if latest, err := CheckpointLatest(dir); err != nil || latest != "" {
		t.Fatalf("latest %q %v", latest, err)
	}
}

// Sessions used from many goroutines at once: calls are serialized, nothing reports BUSY.
func TestConcurrentUse(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				if _, err := s.Step(); err != nil {
					errs <- err
				}
				if _, err := s.Metrics(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m, _ := s.Metrics(); m.Step != 12 {
		t.Fatalf("steps %d, want 12", m.Step)
	}
}

// Per-call overhead of the binding (mutex, LockOSThread, cgo transition, struct conversion)
// next to a bare cgo call. Logged; the bound is loose so slow CI machines pass.
func TestCallOverhead(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	const n = 100000
	// Best of 5 rounds each, interleaved, so warm-up and noise do not decide the figure.
	timeIt := func(f func()) time.Duration {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			f()
		}
		return time.Since(t0) / n
	}
	bare, raw, wrapped := time.Hour, time.Hour, time.Hour
	for round := 0; round < 5; round++ {
		if d := timeIt(func() { ABIVersion() }); d < bare {
			bare = d
		}
		if d := timeIt(func() { rawMetrics(s) }); d < raw {
			raw = d
		}
		if d := timeIt(func() {
			if _, err := s.Metrics(); err != nil {
				t.Fatal(err)
			}
		}); d < wrapped {
			wrapped = d
		}
	}
	t.Logf("bare cgo call (trainrt_abi_version): %v/call", bare)
	t.Logf("trainrt_session_metrics raw cgo: %v/call; through Session.Metrics: %v/call (binding overhead %v)",
		raw, wrapped, wrapped-raw)
	// Reported, never asserted: timings depend on the machine (no timed assertions).
}

func BenchmarkBareCgo(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ABIVersion()
	}
}
