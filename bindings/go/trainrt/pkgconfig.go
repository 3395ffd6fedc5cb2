//go:build trainrt_pkgconfig

package trainrt

// With `-tags trainrt_pkgconfig` the compiler and linker flags come from pkg-config's
// trainrt.pc (the libtrainrt-dev package; PKG_CONFIG_PATH for another prefix), so neither
// CGO_CFLAGS nor CGO_LDFLAGS is needed. A #cgo line in the user's own package would not
// reach this one: cgo flags are per package.

// #cgo pkg-config: trainrt
import "C"
