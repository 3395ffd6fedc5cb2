package trainrt

/*
#include <stdlib.h>
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// cstrArg is cstr refusing a string with a NUL byte: C would see only the part before it (a
// path "x\x00y" naming the file "x"). what names the argument in the error. Every string the
// binding hands to the library goes through it.
func cstrArg(s, what string) (*C.char, error) {
	if at := strings.IndexByte(s, 0); at >= 0 {
		return nil, &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf("%s holds a NUL character "+
			"at byte %d (C strings end there, so the library would see only what comes before it)", what, at)}
	}
	return cstr(s), nil
}

// ParamRole says what a model tensor is for (TRAINRT_PARAM_ROLE_*).
type ParamRole int32

// Parameter roles.
const (
	RoleTokenEmbedding    ParamRole = C.TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING
	RolePositionEmbedding ParamRole = C.TRAINRT_PARAM_ROLE_POSITION_EMBEDDING
	RoleNorm              ParamRole = C.TRAINRT_PARAM_ROLE_NORM // LayerNorm / RMSNorm weight
	RoleNormBias          ParamRole = C.TRAINRT_PARAM_ROLE_NORM_BIAS
	RoleLinear            ParamRole = C.TRAINRT_PARAM_ROLE_LINEAR // a linear layer's weight
	RoleLinearBias        ParamRole = C.TRAINRT_PARAM_ROLE_LINEAR_BIAS
	RoleHead              ParamRole = C.TRAINRT_PARAM_ROLE_HEAD   // an untied output head
	RoleLoRAA             ParamRole = C.TRAINRT_PARAM_ROLE_LORA_A // LoRA down projection [r, in]
	RoleLoRAB             ParamRole = C.TRAINRT_PARAM_ROLE_LORA_B // LoRA up projection [out, r]
)

var roleNames = [...]string{"token_embedding", "position_embedding", "norm", "norm_bias",
	"linear", "linear_bias", "head", "lora_a", "lora_b"}

func (r ParamRole) String() string {
	if r >= 0 && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("ParamRole(%d)", int32(r))
}

// ParamInfo describes one tensor of the model, in the session's table order.
type ParamInfo struct {
	Name      string // Hugging Face name: "wte.weight", "h.0.attn.c_attn.weight", ...
	Role      ParamRole
	Shape     []int // its ndim dims, as in Hugging Face files
	Numel     int   // elements (the product of Shape)
	Offset    int   // where it starts in the flat buffer: flat[p.Offset : p.Offset+p.Numel]
	Layer     int   // the block it belongs to; -1 for the embeddings, final norm and head
	Trainable bool  // false: frozen (a LoRA run's base, train.trainable)
}

func newParamInfo() C.trainrt_param_info {
	var p C.trainrt_param_info
	C.trainrt_param_info_init(&p)
	return p
}

// paramCount is trainrt_session_param_count; the caller holds s.mu and LockOSThread.
func (s *Session) paramCount() (tensors, numel int, err error) {
	var t, n C.int64_t
	if err := check(C.trainrt_session_param_count(&t, &n, s.h)); err != nil {
		return 0, 0, err
	}
	return int(t), int(n), nil
}

// paramInfo is trainrt_session_param_info; the caller holds s.mu and LockOSThread.
func (s *Session) paramInfo(index int) (ParamInfo, error) {
	p := newParamInfo()
	name, err := getString(128, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_session_param_info(&p, buf, cap, needed, s.h, C.int64_t(index))
	})
	if err != nil {
		return ParamInfo{}, err
	}
	ndim := int(p.ndim)
	if ndim < 0 {
		ndim = 0
	} else if ndim > len(p.shape) {
		ndim = len(p.shape)
	}
	shape := make([]int, ndim)
	for i := range shape {
		shape[i] = int(p.shape[i])
	}
	return ParamInfo{Name: name, Role: ParamRole(p.role), Shape: shape, Numel: int(p.numel),
		Offset: int(p.offset), Layer: int(p.layer), Trainable: p.trainable != 0}, nil
}

// ParamCount returns how many tensors the model has and how many floats the flat buffer
// (ReadParams) holds.
func (s *Session) ParamCount() (tensors, numel int, err error) {
	if err := s.lock(); err != nil {
		return 0, 0, err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return s.paramCount()
}

// Params lists the model's tensors in table order (embeddings, each block, final norm, head;
// a LoRA run's adapters after the linear they adapt).
func (s *Session) Params() ([]ParamInfo, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, _, err := s.paramCount()
	if err != nil {
		return nil, err
	}
	out := make([]ParamInfo, n)
	for i := range out {
		if out[i], err = s.paramInfo(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readParams copies the tensor name (nil: the flat buffer) into a new slice of n floats.
// The caller holds s.mu and LockOSThread.
func (s *Session) readParams(name *C.char, n int) ([]float32, error) {
	// At least one float: an unknown name still reaches the library, whose error names the
	// closest tensor.
	out := make([]float32, n+1)
	if err := check(C.trainrt_session_read_params((*C.float)(unsafe.Pointer(&out[0])),
		C.size_t(n), s.h, name)); err != nil {
		return nil, err
	}
	return out[:n:n], nil
}

// ReadParams returns the flat buffer: every tensor's fp32 master weights back to back, in
// table order, without padding (ParamInfo.Offset says where each starts).
func (s *Session) ReadParams() ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, n, err := s.paramCount()
	if err != nil {
		return nil, err
	}
	return s.readParams(nil, n)
}

// ReadParam returns the fp32 master weights of the tensor called name. An unknown name is an
// ErrInvalidArgument *Error whose message suggests the closest name.
func (s *Session) ReadParam(name string) ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	count, _, err := s.paramCount()
	if err != nil {
		return nil, err
	}
	n := 0
	for i := 0; i < count; i++ {
		p, err := s.paramInfo(i)
		if err != nil {
			return nil, err
		}
		if p.Name == name {
			n = p.Numel
			break
		}
	}
	c, err := cstrArg(name, "tensor name")
	if err != nil {
		return nil, err
	}
	defer free(c)
	return s.readParams(c, n)
}

func (s *Session) writeParams(name *C.char, values []float32) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	var one [1]float32
	p := (*C.float)(unsafe.Pointer(&one[0])) // never NULL: the library's size check speaks
	if len(values) > 0 {
		p = (*C.float)(unsafe.Pointer(&values[0]))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_write_params(s.h, name, p, C.size_t(len(values))))
}

// WriteParams replaces every tensor from a flat buffer of exactly ReadParams' length. The
// bf16/fp16 working copies follow; the optimizer's moments, step and schedule are kept. A
// size mismatch (ErrInvalidArgument) or a NaN or infinity (ErrNonFinite) is refused with the
// session unchanged.
func (s *Session) WriteParams(values []float32) error {
	return s.writeParams(nil, values)
}

// WriteParam replaces the tensor called name with values (exactly its Numel floats), as
// WriteParams does. Any tensor may be written, frozen ones included.
func (s *Session) WriteParam(name string, values []float32) error {
	c, err := cstrArg(name, "tensor name")
	if err != nil {
		return err
	}
	defer free(c)
	return s.writeParams(c, values)
}

// SetMetadata sets a user metadata key (1-128 bytes of [A-Za-z0-9_.-]) to value (UTF-8, up to
// 64 KiB; at most 256 keys). Checkpoints save them; Load restores them.
func (s *Session) SetMetadata(key, value string) error { return s.setMetadata(key, &value) }

// RemoveMetadata removes a metadata key (no error if absent).
func (s *Session) RemoveMetadata(key string) error { return s.setMetadata(key, nil) }

// setMetadata: trainrt_session_set_metadata with value, or NULL (a removal) for nil.
func (s *Session) setMetadata(key string, value *string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k, err := cstrArg(key, "metadata key")
	if err != nil {
		return err
	}
	defer free(k)
	var v *C.char
	if value != nil {
		if v, err = cstrArg(*value, "metadata value"); err != nil {
			return err
		}
		defer free(v)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_session_set_metadata(s.h, k, v))
}

// Metadata returns the value of a metadata key; ok is false (and value "") when the session
// has no such key.
func (s *Session) Metadata(key string) (value string, ok bool, err error) {
	if err := s.lock(); err != nil {
		return "", false, err
	}
	defer s.mu.Unlock()
	k, err := cstrArg(key, "metadata key")
	if err != nil {
		return "", false, err
	}
	defer free(k)
	var found C.int32_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	value, err = getString(256, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_session_get_metadata(buf, cap, needed, &found, s.h, k)
	})
	if err != nil {
		return "", false, err
	}
	return value, found != 0, nil
}

// MetadataKeys returns every metadata key, sorted bytewise.
func (s *Session) MetadataKeys() ([]string, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var n C.int64_t
	if err := check(C.trainrt_session_metadata_count(&n, s.h)); err != nil {
		return nil, err
	}
	keys := make([]string, int(n))
	for i := range keys {
		k, err := getString(256, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
			return C.trainrt_session_metadata_key(buf, cap, needed, s.h, C.int64_t(i))
		})
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}
