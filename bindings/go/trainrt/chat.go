package trainrt

/*
#include <stdlib.h>
#include "shims.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// LossMask says which tokens of a chat example are targets (TRAINRT_LOSS_MASK_*).
type LossMask int32

// Loss masks of PrepareOptions.LossMask.
const (
	LossMaskDefault    LossMask = C.TRAINRT_LOSS_MASK_DEFAULT    // assistant for "messages", completion for prompt-completion
	LossMaskAssistant  LossMask = C.TRAINRT_LOSS_MASK_ASSISTANT  // every assistant turn, its end-of-turn token included
	LossMaskCompletion LossMask = C.TRAINRT_LOSS_MASK_COMPLETION // the completion; of "messages", the last assistant turn
	LossMaskAll        LossMask = C.TRAINRT_LOSS_MASK_ALL        // every token but the first
)

// ChatTemplate is a model folder's chat template (its chat_template.jinja, else
// tokenizer_config.json's "chat_template"), rendered as Hugging Face transformers'
// apply_chat_template renders it. A construct the engine does not support is refused at load
// (ErrUnsupported naming it and its line). Like a Tokenizer it is immutable once loaded, so
// goroutines render with one in parallel; Close is explicit, idempotent and safe from any
// goroutine (it waits for calls in flight). A finalizer closes a forgotten template.
type ChatTemplate struct {
	mu sync.RWMutex // read-held by every call (many at once); Close holds it to free t
	t  *C.trainrt_chat_template
}

// LoadChatTemplate reads the template of a model folder; name picks one of its named
// templates ("" = "default", or the only one).
func LoadChatTemplate(folder, name string) (*ChatTemplate, error) {
	f, err := cstrArg(folder, "folder")
	if err != nil {
		return nil, err
	}
	defer free(f)
	var n *C.char
	if name != "" {
		if n, err = cstrArg(name, "name"); err != nil {
			return nil, err
		}
		defer free(n)
	}
	var t *C.trainrt_chat_template
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(C.trainrt_chat_template_load(&t, f, n)); err != nil {
		return nil, err
	}
	ct := &ChatTemplate{t: t}
	runtime.SetFinalizer(ct, (*ChatTemplate).Close)
	return ct, nil
}

// Close frees the template once no call is in flight. Idempotent; safe from any goroutine.
func (ct *ChatTemplate) Close() error {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.t != nil {
		C.trainrt_chat_template_destroy(ct.t)
		ct.t = nil
		runtime.SetFinalizer(ct, nil)
	}
	return nil
}

func (ct *ChatTemplate) rlock() error {
	ct.mu.RLock()
	if ct.t == nil {
		ct.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Render returns the text of a conversation: conversationJSON is {"messages": [...],
// "tools": [...]?} or a list of messages; addGenerationPrompt appends what opens the
// assistant's reply; varsJSON ("" = none) is a JSON object of more template variables. A
// template that raises is ErrInvalidArgument with its message.
func (ct *ChatTemplate) Render(conversationJSON string, addGenerationPrompt bool, varsJSON string) (string, error) {
	if err := ct.rlock(); err != nil {
		return "", err
	}
	defer ct.mu.RUnlock()
	c, err := cstrArg(conversationJSON, "conversationJSON")
	if err != nil {
		return "", err
	}
	defer free(c)
	var v *C.char
	if varsJSON != "" {
		if v, err = cstrArg(varsJSON, "varsJSON"); err != nil {
			return "", err
		}
		defer free(v)
	}
	agp := C.int32_t(0)
	if addGenerationPrompt {
		agp = 1
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return getString(256+2*len(conversationJSON), func(buf *C.char, cap C.size_t, needed *C.size_t) C.trainrt_status {
		return C.trainrt_chat_template_render(buf, cap, needed, ct.t, c, agp, v)
	})
}

// StopIDs returns the ids a reply ends with (generation_config.json's eos_token_id, else
// tokenizer_config.json's eos_token), for Session.Generate. tok: the folder's tokenizer.
func (ct *ChatTemplate) StopIDs(tok *Tokenizer) ([]int32, error) {
	if err := ct.rlock(); err != nil {
		return nil, err
	}
	defer ct.mu.RUnlock()
	if err := tok.rlock(); err != nil {
		return nil, err
	}
	defer tok.mu.RUnlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var needed C.size_t
	if err := check(C.trainrt_chat_template_stop_ids(nil, 0, &needed, ct.t, tok.t)); err != nil {
		return nil, err
	}
	for {
		ids := make([]int32, int(needed)+1) // +1: never pass a nil buffer
		cap := needed
		if err := check(C.trainrt_chat_template_stop_ids((*C.int32_t)(unsafe.Pointer(&ids[0])), cap,
			&needed, ct.t, tok.t)); err != nil {
			return nil, err
		}
		if needed <= cap {
			return ids[:needed], nil
		}
	}
}
