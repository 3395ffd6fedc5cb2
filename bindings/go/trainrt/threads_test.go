package trainrt

import (
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
)

// onFreshThread runs f on a goroutine locked to an OS thread that ends with it (the goroutine
// never unlocks), so two calls never share a thread: what a Go program does to libtrainrt
// all the time, since its goroutines move between OS threads between cgo calls.
func onFreshThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		f()
	}()
	<-done
}

// Regression test of the "signal.Notify slowdown" (bindings/go/README.md): a session created
// on one OS thread and stepped on another, whose OpenMP default differs, must still run
// OpenBLAS with runtime.threads threads — with and without signal.Notify — and leave the
// host thread's own OpenMP setting alone. The cause was structural, so this checks the
// structure, not a time: libtrainrt set OpenBLAS's count once, through the creating thread's
// OpenMP ICV; OpenBLAS (OpenMP build) re-reads the *calling* thread's omp_get_max_threads()
// at every call, so on any other thread it ran with that thread's default (all cores),
// nested inside the library's one-thread regions, creating and destroying a thread per
// matmul: 70-130x slower steps (bench/results/2026-11-25-go-signal.md).
func TestCPUThreadsDoNotDependOnTheCallingThread(t *testing.T) {
	if probeBLASThreads() < 0 || probeOMPMaxThreads() < 0 {
		t.Skip("this libtrainrt does not use OpenBLAS with OpenMP")
	}
	want := expected(t)
	const hostThreads = 3 // the stepping thread's own OpenMP default, as a host might set it
	for _, notify := range []bool{false, true} {
		t.Run(fmt.Sprintf("signalNotify=%v", notify), func(t *testing.T) {
			if notify {
				ch := make(chan os.Signal, 1)
				signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
				defer signal.Stop(ch)
			}
			cfg := mustConfig(t)
			threads, err := cfg.GetInt("runtime.threads")
			if err != nil {
				t.Fatal(err)
			}
			if threads != 1 {
				t.Fatalf("the test config has runtime.threads = %d; this test expects 1", threads)
			}
			var s *Session
			onFreshThread(func() { s, err = NewSession(cfg) })
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			type probe struct {
				loss      uint64
				blas, omp int
			}
			var got []probe
			var stepErr error
			setOK := true
			onFreshThread(func() {
				if setOK = probeSetOMPThreads(hostThreads); !setOK {
					return
				}
				for range want {
					r, err := s.Step()
					if err != nil {
						stepErr = err
						return
					}
					got = append(got, probe{math.Float64bits(r.Loss), probeBLASThreads(),
						probeOMPMaxThreads()})
				}
			})
			if !setOK {
				t.Fatal("omp_set_num_threads not found")
			}
			if stepErr != nil {
				t.Fatal(stepErr)
			}
			for i, p := range got {
				if p.loss != want[i] {
					t.Errorf("step %d: loss bits %016x, C API %016x", i+1, p.loss, want[i])
				}
				if p.blas != int(threads) {
					t.Errorf("step %d on another OS thread: OpenBLAS runs %d threads, "+
						"runtime.threads = %d (it followed the calling thread's OpenMP default)",
						i+1, p.blas, threads)
				}
				if p.omp != hostThreads {
					t.Errorf("step %d: the calling thread's omp_get_max_threads() is %d after "+
						"the call, was %d: libtrainrt changed the host's OpenMP setting",
						i+1, p.omp, hostThreads)
				}
			}
		})
	}
}
