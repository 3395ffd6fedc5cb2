package trainrt

/*
#include "shims.h"
*/
import "C"

import "unsafe"

// rawMetrics is trainrt_session_metrics with none of the binding's guards; it exists only so
// the tests can measure the binding's per-call overhead.
func rawMetrics(s *Session) int64 {
	var m C.trainrt_metrics
	m.struct_size = C.uint32_t(unsafe.Sizeof(m))
	m.version = C.TRAINRT_METRICS_VERSION
	C.trainrt_session_metrics(&m, s.h)
	return int64(m.step)
}
