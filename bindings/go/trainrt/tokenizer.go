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
	"unsafe"
)

// Tokenizer is a Hugging Face tokenizer of the byte-level BPE family (a tokenizer.json: GPT-2,
// Llama 3 and the like), as libtrainrt reproduces it exactly, or a SentencePiece model (a
// tokenizer.model: Llama 2 style). Unlike Config and Session, its
// calls are not serialized: a loaded tokenizer is immutable and libtrainrt lets several
// threads use one at once, so goroutines encode and decode in parallel. Close is explicit,
// idempotent and safe from any goroutine (it waits for calls in flight); afterwards every
// method returns ErrClosed. A finalizer closes a forgotten tokenizer.
type Tokenizer struct {
	mu sync.RWMutex // read-held by every call (many at once); Close holds it to free t
	t  *C.trainrt_tokenizer
}

// LoadTokenizer reads a tokenizer.json or tokenizer.model, or the one in a folder (a Hugging
// Face model folder).
// A file libtrainrt cannot reproduce exactly is refused with ErrUnsupported.
func LoadTokenizer(path string) (*Tokenizer, error) {
	p, err := cstrArg(path, "path")
	if err != nil {
		return nil, err
	}
	defer free(p)
	var t *C.trainrt_tokenizer
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_tokenizer_load(&t, p)); err != nil {
		return nil, err
	}
	tok := &Tokenizer{t: t}
	runtime.SetFinalizer(tok, (*Tokenizer).Close)
	return tok, nil
}

// Close frees the tokenizer once no call is in flight. Idempotent; safe from any goroutine.
func (tok *Tokenizer) Close() error {
	tok.mu.Lock()
	defer tok.mu.Unlock()
	if tok.t != nil {
		C.trainrt_tokenizer_destroy(tok.t)
		tok.t = nil
		runtime.SetFinalizer(tok, nil)
	}
	return nil
}

func (tok *Tokenizer) rlock() error {
	tok.mu.RLock()
	if tok.t == nil {
		tok.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Encode returns the ids of text, which must be UTF-8 (else ErrInvalidArgument naming the
// byte). No special token is added; the text of an added token ("<|endoftext|>") becomes its
// id.
func (tok *Tokenizer) Encode(text string) ([]int32, error) {
	if err := tok.rlock(); err != nil {
		return nil, err
	}
	defer tok.mu.RUnlock()
	var tp *C.char
	if len(text) > 0 {
		b := []byte(text)
		tp = (*C.char)(unsafe.Pointer(&b[0]))
	}
	// Every token covers at least one byte: len(text) ids always suffice, so one call.
	ids := make([]int32, len(text))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		var ip *C.int32_t
		if len(ids) > 0 {
			ip = (*C.int32_t)(unsafe.Pointer(&ids[0]))
		}
		var needed C.size_t
		if err := check(C.trainrt_tokenizer_encode(ip, C.size_t(len(ids)), &needed, tok.t, tp,
			C.size_t(len(text)))); err != nil {
			return nil, err
		}
		if int(needed) <= len(ids) {
			return ids[:needed:needed], nil
		}
		ids = make([]int32, int(needed))
	}
}

// Decode returns the text of ids (each in [0, VocabSize)). It may hold NUL bytes (byte tokens)
// and, for a cut-off sequence, end inside a UTF-8 character (Go strings hold any bytes).
func (tok *Tokenizer) Decode(ids []int32) (string, error) {
	if err := tok.rlock(); err != nil {
		return "", err
	}
	defer tok.mu.RUnlock()
	var ip *C.int32_t
	if len(ids) > 0 {
		ip = (*C.int32_t)(unsafe.Pointer(&ids[0]))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(4*len(ids)+16, func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_tokenizer_decode(buf, cap, needed, tok.t, ip, C.size_t(len(ids)))
	})
}

// VocabSize is the largest id plus one (added tokens included): the smallest
// model.vocab_size that can train on this tokenizer's shards.
func (tok *Tokenizer) VocabSize() (int32, error) {
	if err := tok.rlock(); err != nil {
		return 0, err
	}
	defer tok.mu.RUnlock()
	var v C.int32_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_tokenizer_vocab_size(&v, tok.t)); err != nil {
		return 0, err
	}
	return int32(v), nil
}

// TokenID returns the id of a token given by its text: an added token ("<|endoftext|>") or a
// vocabulary entry in its byte-level spelling ("Ġthe"); (-1, false, nil) when there is none.
func (tok *Tokenizer) TokenID(token string) (id int32, ok bool, err error) {
	if err := tok.rlock(); err != nil {
		return -1, false, err
	}
	defer tok.mu.RUnlock()
	p, err := cstrArg(token, "token")
	if err != nil {
		return -1, false, err
	}
	defer free(p)
	out := C.int32_t(-1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_tokenizer_token_id(&out, tok.t, p)); err != nil {
		return -1, false, err
	}
	return int32(out), out >= 0, nil
}

// PrepareOptions of PrepareText. Tokenizer is required; the zero value of the rest means
// text inputs, no validation split, all cores, no progress reports.
type PrepareOptions struct {
	// A tokenizer.json or tokenizer.model, or a model folder holding one. Its end-of-text
	// token begins every document: eos_token of the tokenizer_config.json beside it, else a
	// SentencePiece model's own, else <|endoftext|>, <|end_of_text|> or </s>.
	Tokenizer string
	// "": each input file is a document. Otherwise the inputs are JSON lines and each line's
	// string field JSONLField is a document.
	JSONLField string
	// The share of the input bytes, at the end, that goes to val.bin: [0, 1).
	ValFraction float64
	// Threads that tokenize; 0 = all cores.
	Threads int32
	// 0: one train.bin and val.bin. N: train_000000.bin, train_000001.bin, ... (and
	// val_*.bin) of at most N tokens each.
	ShardTokens int64
	// Progress, when set, is called now and then with the input bytes done of total, on the
	// goroutine that called PrepareText. Return true to stop the run, as a ProgressFunc stops
	// Session.Train: PrepareText then returns an *Error with status ErrCancelled and writes no
	// shard. A panic in it stops the run too and is re-raised by PrepareText once the library
	// has returned.
	Progress func(done, total int64) (stop bool)
	// Chat data: Tokenizer is a model folder with a chat template; each input line is a
	// conversation rendered with it, and mask_train.bin / mask_val.bin hold each token's loss
	// mask (LossMask says which tokens are targets). JSONLField and ShardTokens must be unset.
	Chat     bool
	LossMask LossMask
	// One of the folder's named templates; "" = "default".
	ChatTemplate string
	// A JSON object of more template variables; "" = none.
	TemplateVars string
}

// PrepareResult is what PrepareText wrote.
type PrepareResult struct {
	Documents   int64
	TrainTokens int64
	ValTokens   int64
	Bytes       int64 // input bytes tokenized
	TokenBytes  int32 // 2 or 4: the shards' id width (uint16 when every id fits, else uint32)
	VocabSize   int32 // the tokenizer's: the smallest model.vocab_size for these shards
	EOSID       int32 // the end-of-text token that begins each document
	TrainShards int32 // shard files written per split (1 without ShardTokens)
	ValShards   int32
	// Chat data (Documents then counts the conversations):
	Examples     int64 // examples written (a conversation in the per-turn form gives several)
	TargetTokens int64 // the tokens of both splits whose loss counts
	PerTurn      int64 // conversations written one example per assistant turn
}

// PrepareText tokenizes inputs (read in order) with a Hugging Face tokenizer into llm.c
// shards, outDir/train.bin and outDir/val.bin, each written complete or not at all.
func PrepareText(inputs []string, outDir string, opts PrepareOptions) (PrepareResult, error) {
	ptrs := make([]*C.char, len(inputs)+1) // +1: never pass a nil array
	for i, in := range inputs {
		p, err := cstrArg(in, fmt.Sprintf("inputs[%d]", i))
		if err != nil {
			return PrepareResult{}, err // the deferred frees release those before it
		}
		ptrs[i] = p
		defer free(p)
	}
	o, err := cstrArg(outDir, "outDir")
	if err != nil {
		return PrepareResult{}, err
	}
	defer free(o)
	tp, err := cstrArg(opts.Tokenizer, "opts.Tokenizer")
	if err != nil {
		return PrepareResult{}, err
	}
	defer free(tp)
	var fp *C.char
	if opts.JSONLField != "" {
		if fp, err = cstrArg(opts.JSONLField, "opts.JSONLField"); err != nil {
			return PrepareResult{}, err
		}
		defer free(fp)
	}
	var np, vp *C.char
	if opts.ChatTemplate != "" {
		if np, err = cstrArg(opts.ChatTemplate, "opts.ChatTemplate"); err != nil {
			return PrepareResult{}, err
		}
		defer free(np)
	}
	if opts.TemplateVars != "" {
		if vp, err = cstrArg(opts.TemplateVars, "opts.TemplateVars"); err != nil {
			return PrepareResult{}, err
		}
		defer free(vp)
	}
	var c C.trainrt_prepare_options
	C.trainrt_prepare_options_init(&c)
	if opts.Chat {
		c.chat = 1
	}
	c.loss_mask = C.int32_t(opts.LossMask)
	c.chat_template, c.template_vars = np, vp
	c.tokenizer, c.jsonl_field = tp, fp
	c.val_fraction = C.double(opts.ValFraction)
	c.threads = C.int32_t(opts.Threads)
	c.shard_tokens = C.int64_t(opts.ShardTokens)
	var h cgo.Handle
	var st *prepareProgressState
	if opts.Progress != nil {
		st = &prepareProgressState{fn: opts.Progress}
		h = cgo.NewHandle(st)
		defer h.Delete()
	}
	var r C.trainrt_prepare_result
	C.trainrt_prepare_result_init(&r)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = check(C.trgo_prepare_text(&r, &ptrs[0], C.size_t(len(inputs)), o, &c, C.uintptr_t(h)))
	if st != nil && st.panicked {
		panic(st.value)
	}
	if err != nil {
		return PrepareResult{}, err
	}
	return PrepareResult{int64(r.documents), int64(r.train_tokens), int64(r.val_tokens),
		int64(r.bytes), int32(r.token_bytes), int32(r.vocab_size), int32(r.eos_id),
		int32(r.train_shards), int32(r.val_shards), int64(r.examples), int64(r.target_tokens),
		int64(r.per_turn)}, nil
}
