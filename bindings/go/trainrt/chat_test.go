package trainrt

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// chatTemplate wraps each message as <|role|>content<|eot|>; <|assistant|> opens a reply.
const chatTemplate = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}" +
	"{% if add_generation_prompt %}<|assistant|>{% endif %}"

const chatConversation = `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`

// chatFolder writes a model folder: the tiny tokenizer and a tokenizer_config.json (config,
// or chatTemplate with eos_token <|eot|> when nil).
func chatFolder(t *testing.T, config any) string {
	t.Helper()
	dir := scratch(t)
	writeTinyTokenizer(t, dir)
	if config == nil {
		config = map[string]any{"eos_token": "<|eot|>", "chat_template": chatTemplate}
	}
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestChatTemplateRenderAndStopIDs(t *testing.T) {
	dir := chatFolder(t, nil)
	ct, err := LoadChatTemplate(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	got, err := ct.Render(chatConversation, false, "")
	if err != nil || got != "<|user|>hi<|eot|><|assistant|>yo<|eot|>" {
		t.Fatalf("Render = %q, %v", got, err)
	}
	user := `[{"role": "user", "content": "hi"}]`
	if got, err = ct.Render(user, true, `{"x": 1}`); err != nil || got != "<|user|>hi<|eot|><|assistant|>" {
		t.Fatalf("Render(add_generation_prompt) = %q, %v", got, err)
	}
	long := `[{"role": "user", "content": "` + strings.Repeat("x", 3000) + `"}]`
	if got, err = ct.Render(long, false, ""); err != nil || len(got) != 3000+len("<|user|><|eot|>") {
		t.Fatalf("long Render: %d bytes, %v", len(got), err)
	}
	_, err = ct.Render("[1", false, "")
	asError(t, err, ErrInvalidArgument)
	_, err = ct.Render(user, false, "[]")
	if e := asError(t, err, ErrInvalidArgument); !strings.Contains(e.Message, "vars_json") {
		t.Fatalf("message does not name vars_json: %s", e.Message)
	}
	_, err = ct.Render("[]\x00", false, "")
	asError(t, err, ErrInvalidArgument)

	tok, err := LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	ids, err := ct.StopIDs(tok)
	if err != nil || !reflect.DeepEqual(ids, []int32{300}) {
		t.Fatalf("StopIDs = %v, %v", ids, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"),
		[]byte(`{"eos_token_id": [300, 10, 259]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if ids, err = ct.StopIDs(tok); err != nil || !reflect.DeepEqual(ids, []int32{300, 10, 259}) {
		t.Fatalf("StopIDs = %v, %v", ids, err)
	}

	_, err = LoadChatTemplate(dir, "nope")
	if e := asError(t, err, ErrInvalidArgument); !strings.Contains(e.Message, "nope") {
		t.Fatalf("message does not name the template: %s", e.Message)
	}
	_, err = LoadChatTemplate(chatFolder(t, map[string]any{"eos_token": "<|eot|>"}), "")
	if err == nil || !strings.Contains(err.Error(), "chat_template") {
		t.Fatalf("a folder without a template: %v", err)
	}

	// Close from several goroutines, then use: ErrClosed, no crash.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); ct.Close() }()
	}
	wg.Wait()
	if _, err := ct.Render(user, false, ""); err != ErrClosed {
		t.Fatalf("Render after Close: %v", err)
	}
	if _, err := ct.StopIDs(tok); err != ErrClosed {
		t.Fatalf("StopIDs after Close: %v", err)
	}
}

func TestGenerateStopsAtAStopID(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	prompt := []int32{'R', 'O', 'M', 'E', 'O', ':'}
	greedy := SampleOptions{Temperature: 0, Seed: 1337}
	a, err := s.Sample(prompt, 6, &greedy)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := s.Generate(prompt, 6, &greedy, nil); err != nil || !reflect.DeepEqual(g, a) {
		t.Fatalf("Generate without stop ids = %v, %v; Sample gave %v", g, err, a)
	}
	if g, err := s.Generate(prompt, 6, &greedy, []int32{a[0]}); err != nil || !reflect.DeepEqual(g, a[:1]) {
		t.Fatalf("Generate with stop id %d = %v, %v", a[0], g, err)
	}
	if g, err := s.Generate(prompt, 0, nil, []int32{1}); err != nil || len(g) != 0 {
		t.Fatalf("Generate(maxNew 0) = %v, %v", g, err)
	}
	_, err = s.Generate(nil, 4, nil, nil)
	asError(t, err, ErrInvalidArgument)
}

func TestPrepareTextChat(t *testing.T) {
	model := chatFolder(t, nil)
	src := filepath.Join(model, "chat.jsonl")
	if err := os.WriteFile(src, []byte(chatConversation+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(model, "data")
	opts := PrepareOptions{Tokenizer: model, Chat: true}
	r, err := PrepareText([]string{src}, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	// <|user|> 8 bytes, hi 2, <|eot|>, <|assistant|> 13, yo 2, <|eot|>: 27 tokens.
	if r.Documents != 1 || r.Examples != 1 || r.PerTurn != 0 || r.TrainTokens != 27 || r.TargetTokens != 3 {
		t.Fatalf("PrepareText = %+v", r)
	}
	b, err := os.ReadFile(filepath.Join(out, "mask_train.bin"))
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(b[8:12]))
	mask := make([]uint16, n)
	for i := range mask {
		mask[i] = binary.LittleEndian.Uint16(b[1024+2*i:])
	}
	want := make([]uint16, 27)
	want[0] = 2 // begins the example
	want[24], want[25], want[26] = 1, 1, 1
	if !reflect.DeepEqual(mask, want) {
		t.Fatalf("mask_train.bin = %v, want %v", mask, want)
	}
	opts.LossMask = LossMaskAll
	if r, err = PrepareText([]string{src}, out, opts); err != nil || r.TargetTokens != 26 {
		t.Fatalf("LossMaskAll: %+v, %v", r, err)
	}
	opts.ShardTokens = 100
	_, err = PrepareText([]string{src}, out, opts)
	asError(t, err, ErrInvalidArgument)
	opts.ShardTokens = 0
	opts.TemplateVars = "[]"
	_, err = PrepareText([]string{src}, out, opts)
	asError(t, err, ErrInvalidArgument)
}
