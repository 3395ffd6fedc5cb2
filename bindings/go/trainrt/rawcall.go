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

// paramInfoLayout is sizeof(trainrt_param_info), the offsets of shape, offset and trainable,
// and the struct_size the library's own trainrt_param_info_init writes (for the tests).
func paramInfoLayout() (size, shape, offset, trainable, initSize uintptr) {
	var p C.trainrt_param_info
	C.trainrt_param_info_init(&p)
	return unsafe.Sizeof(p), unsafe.Offsetof(p.shape), unsafe.Offsetof(p.offset),
		unsafe.Offsetof(p.trainable), uintptr(p.struct_size)
}
