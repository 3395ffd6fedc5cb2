/* C shims of the Go binding: they hand the Go trampolines (callbacks.go) to libtrainrt with a
 * cgo.Handle as payload, so Go code never converts an integer to a pointer. */
#ifndef TRAINRT_GO_SHIMS_H
#define TRAINRT_GO_SHIMS_H
#include <stdint.h>
/* Without the header cgo's compiler would only say "trainrt/trainrt.h: No such file": say
 * what to set instead (every file of the package includes this one). */
#ifdef __has_include
#if !__has_include(<trainrt/trainrt.h>)
#error "trainrt/trainrt.h not found. Against a source build set CGO_CFLAGS=-I<checkout>/include and CGO_LDFLAGS='-L<build folder> -Wl,-rpath,<build folder>'; against the libtrainrt-dev package build with -tags trainrt_pkgconfig. See bindings/go/README.md, Building."
#endif
#endif
#include <trainrt/trainrt.h>

trainrt_status trgo_log_set_default(uintptr_t handle, int32_t min_level);
trainrt_status trgo_config_set_log(trainrt_config* config, uintptr_t handle, int32_t min_level);
trainrt_status trgo_session_set_log(trainrt_session* session, uintptr_t handle,
                                    int32_t min_level);
trainrt_status trgo_session_train(trainrt_session* session, int64_t n_steps, uintptr_t handle);
/* trainrt_prepare_text with the Go progress trampoline (int32_t trainrtGoPrepareProgress(
 * int64_t, int64_t, void*): non-zero stops the run) set in *options when handle != 0. */
trainrt_status trgo_prepare_text(trainrt_prepare_result* out, char** inputs, size_t n_inputs,
                                 const char* out_dir, trainrt_prepare_options* options,
                                 uintptr_t handle);
#endif
