package trainrt

// The OpenMP and OpenBLAS thread settings as the calling OS thread sees them, looked up at
// run time (dlsym) so the binding links nothing but libtrainrt. They exist only for the tests
// (TestCPUThreadsDoNotDependOnTheCallingThread): libtrainrt once let OpenBLAS's thread count
// follow the calling thread's OpenMP default instead of runtime.threads, and a Go program,
// whose goroutines move between OS threads, then ran CPU steps 70-130x slower
// (bench/results/2026-11-25-go-signal.md).

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*trgo_int_fn)(void);
typedef void (*trgo_set_fn)(int);

static int trgo_probe_int(const char* name) {
    trgo_int_fn f = (trgo_int_fn)dlsym(RTLD_DEFAULT, name);
    return f ? f() : -1;
}
static int trgo_probe_set(const char* name, int n) {
    trgo_set_fn f = (trgo_set_fn)dlsym(RTLD_DEFAULT, name);
    if (!f) return -1;
    f(n);
    return 0;
}
*/
import "C"

import "unsafe"

func probeInt(name string) int {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return int(C.trgo_probe_int(c))
}

// probeBLASThreads is OpenBLAS's current thread count (openblas_get_num_threads), -1 when
// libtrainrt is not linked with OpenBLAS.
func probeBLASThreads() int { return probeInt("openblas_get_num_threads") }

// probeOMPMaxThreads is omp_get_max_threads() of the calling OS thread, -1 without OpenMP.
func probeOMPMaxThreads() int { return probeInt("omp_get_max_threads") }

// probeSetOMPThreads calls omp_set_num_threads(n) on the calling OS thread, as a host that
// uses OpenMP itself would; false without OpenMP.
func probeSetOMPThreads(n int) bool {
	c := C.CString("omp_set_num_threads")
	defer C.free(unsafe.Pointer(c))
	return C.trgo_probe_set(c, C.int(n)) == 0
}
