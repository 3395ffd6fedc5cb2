package trainrt

/*
#include <stdlib.h>
#include "shims.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Config is a run configuration: a TOML document (docs/CONFIG.md), validated on every change.
// Keys are dotted TOML paths ("optim.lr"). Close it when done; a Session keeps its own copy.
type Config struct {
	mu       sync.Mutex
	c        *C.trainrt_config
	logFn    LogFunc
	logLevel LogLevel
}

func newConfig(c *C.trainrt_config) *Config {
	cfg := &Config{c: c}
	runtime.SetFinalizer(cfg, (*Config).Close)
	return cfg
}

// NewConfig returns a config with every default.
func NewConfig() (*Config, error) {
	var c *C.trainrt_config
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_create(&c)); err != nil {
		return nil, err
	}
	return newConfig(c), nil
}

// ConfigFromFile reads a TOML file; relative paths in it resolve against its folder.
func ConfigFromFile(path string) (*Config, error) {
	p, err := cstrArg(path, "path")
	if err != nil {
		return nil, err
	}
	defer free(p)
	var c *C.trainrt_config
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_from_file(&c, p)); err != nil {
		return nil, err
	}
	return newConfig(c), nil
}

// ConfigFromString parses a TOML document; baseDir ("" = current directory) anchors
// relative paths.
func ConfigFromString(toml, baseDir string) (*Config, error) {
	t, err := cstrArg(toml, "toml")
	if err != nil {
		return nil, err
	}
	defer free(t)
	var b *C.char
	if baseDir != "" {
		if b, err = cstrArg(baseDir, "baseDir"); err != nil {
			return nil, err
		}
		defer free(b)
	}
	var c *C.trainrt_config
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_from_string(&c, t, b)); err != nil {
		return nil, err
	}
	return newConfig(c), nil
}

// ConfigFromCheckpoint returns the run config a checkpoint was trained with.
func ConfigFromCheckpoint(path string) (*Config, error) {
	p, err := cstrArg(path, "path")
	if err != nil {
		return nil, err
	}
	defer free(p)
	var c *C.trainrt_config
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_from_checkpoint(&c, p)); err != nil {
		return nil, err
	}
	return newConfig(c), nil
}

// Close frees the config. Idempotent; safe from any goroutine.
func (cfg *Config) Close() error {
	cfg.mu.Lock()
	defer cfg.mu.Unlock()
	if cfg.c != nil {
		C.trainrt_config_destroy(cfg.c)
		cfg.c = nil
	}
	return nil
}

func (cfg *Config) lock() error {
	cfg.mu.Lock()
	if cfg.c == nil {
		cfg.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Set sets one key from a TOML value: Set("optim.lr", "1e-3"), Set("data.train",
// `"shards/train.bin"`). On error the config is unchanged.
func (cfg *Config) Set(key, tomlValue string) error {
	if err := cfg.lock(); err != nil {
		return err
	}
	defer cfg.mu.Unlock()
	k, err := cstrArg(key, "key")
	if err != nil {
		return err
	}
	defer free(k)
	v, err := cstrArg(tomlValue, "tomlValue")
	if err != nil {
		return err
	}
	defer free(v)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(C.trainrt_config_set(cfg.c, k, v))
}

// GetInt returns an integer key's resolved value.
func (cfg *Config) GetInt(key string) (int64, error) {
	if err := cfg.lock(); err != nil {
		return 0, err
	}
	defer cfg.mu.Unlock()
	k, err := cstrArg(key, "key")
	if err != nil {
		return 0, err
	}
	defer free(k)
	var out C.int64_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_get_int(&out, cfg.c, k)); err != nil {
		return 0, err
	}
	return int64(out), nil
}

// GetFloat returns a floating-point key's resolved value.
func (cfg *Config) GetFloat(key string) (float64, error) {
	if err := cfg.lock(); err != nil {
		return 0, err
	}
	defer cfg.mu.Unlock()
	k, err := cstrArg(key, "key")
	if err != nil {
		return 0, err
	}
	defer free(k)
	var out C.double
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_get_double(&out, cfg.c, k)); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// GetBool returns a boolean key's resolved value.
func (cfg *Config) GetBool(key string) (bool, error) {
	if err := cfg.lock(); err != nil {
		return false, err
	}
	defer cfg.mu.Unlock()
	k, err := cstrArg(key, "key")
	if err != nil {
		return false, err
	}
	defer free(k)
	var out C.int32_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_get_bool(&out, cfg.c, k)); err != nil {
		return false, err
	}
	return out != 0, nil
}

// GetString returns a string key's value, or any other key's value as TOML text.
func (cfg *Config) GetString(key string) (string, error) {
	if err := cfg.lock(); err != nil {
		return "", err
	}
	defer cfg.mu.Unlock()
	k, err := cstrArg(key, "key")
	if err != nil {
		return "", err
	}
	defer free(k)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(256, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_config_get_string(buf, cap, needed, cfg.c, k)
	})
}

// Dump returns the whole resolved config as TOML (defaults included).
func (cfg *Config) Dump() (string, error) {
	if err := cfg.lock(); err != nil {
		return "", err
	}
	defer cfg.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(4096, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_config_dump(buf, cap, needed, cfg.c)
	})
}

// SetLog sets the log sink of sessions created from this config from now on (so their first
// lines reach it). fn = nil: the process default. Each session gets its own reference to fn.
func (cfg *Config) SetLog(fn LogFunc, minLevel LogLevel) error {
	if err := cfg.lock(); err != nil {
		return err
	}
	defer cfg.mu.Unlock()
	cfg.logFn, cfg.logLevel = fn, minLevel
	return nil
}

// ModelInfo is what a config's model costs (Config.ModelInfo).
type ModelInfo struct {
	Parameters       int64
	FlopsPerToken    float64
	BytesParameters  int64
	BytesOptimizer   int64
	BytesActivations int64
	BytesTotal       int64
	// TrainableParameters: those that train (all, or LoRA adapters and train.trainable's).
	TrainableParameters int64
}

// ModelInfo computes the model's size and memory without allocating it.
func (cfg *Config) ModelInfo() (ModelInfo, error) {
	if err := cfg.lock(); err != nil {
		return ModelInfo{}, err
	}
	defer cfg.mu.Unlock()
	var m C.trainrt_model_info
	m.struct_size = C.uint32_t(unsafe.Sizeof(m))
	m.version = C.TRAINRT_MODEL_INFO_VERSION
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_config_model_info(&m, cfg.c)); err != nil {
		return ModelInfo{}, err
	}
	return ModelInfo{int64(m.parameters), float64(m.flops_per_token), int64(m.bytes_parameters),
		int64(m.bytes_optimizer), int64(m.bytes_activations), int64(m.bytes_total),
		int64(m.trainable_parameters)}, nil
}

// createSession builds a session from cfg, giving it its own handle of the config's log sink.
func (cfg *Config) createSession() (*C.trainrt_session, cgo.Handle, error) {
	if err := cfg.lock(); err != nil {
		return nil, 0, err
	}
	defer cfg.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var h cgo.Handle
	if cfg.logFn != nil {
		h = cgo.NewHandle(cfg.logFn)
		if err := check(C.trgo_config_set_log(cfg.c, C.uintptr_t(h), C.int32_t(cfg.logLevel))); err != nil {
			h.Delete()
			return nil, 0, err
		}
	}
	var s *C.trainrt_session
	err := check(C.trainrt_session_create(&s, cfg.c))
	if h != 0 {
		// The C config must not keep a payload the session owns (and frees on Close).
		C.trgo_config_set_log(cfg.c, 0, C.TRAINRT_LOG_WARN)
		if err != nil {
			h.Delete()
			h = 0
		}
	}
	if err != nil {
		return nil, 0, err
	}
	return s, h, nil
}
