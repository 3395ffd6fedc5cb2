package trainrt

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// byteChar is GPT-2's byte alphabet: byte b stands for itself when printable, else U+0100 on.
func byteChar(b int) rune {
	keep := func(k int) bool { return (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE }
	if keep(b) {
		return rune(b)
	}
	next := 0x100
	for k := 0; k < b; k++ {
		if !keep(k) {
			next++
		}
	}
	return rune(next)
}

// writeTinyTokenizer writes dir/tokenizer.json, the byte-level BPE of
// tests/unit/capi/capi_test_util.h (tiny_tokenizer_json): bytes are ids 0..255; "he" 256,
// "ll" 257, "hell" 258, "hello" 259; "<|eot|>" 300. It returns the file's path.
func writeTinyTokenizer(t *testing.T, dir string) string {
	t.Helper()
	var vocab strings.Builder
	for b := 0; b < 256; b++ {
		c := string(byteChar(b))
		if c == `"` || c == `\` {
			c = `\` + c
		}
		fmt.Fprintf(&vocab, "\"%s\": %d, ", c, b)
	}
	vocab.WriteString(`"he": 256, "ll": 257, "hell": 258, "hello": 259`)
	json := `{"added_tokens": [{"id": 300, "content": "<|eot|>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {` + vocab.String() + `}, "merges": ["h e", "l l", "he ll", "hell o"]}}`
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustTokenizer(t *testing.T) (*Tokenizer, string) {
	t.Helper()
	dir := scratch(t)
	tok, err := LoadTokenizer(writeTinyTokenizer(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tok.Close() })
	return tok, dir
}

func mustEncode(t *testing.T, tok *Tokenizer, text string) []int32 {
	t.Helper()
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func mustDecode(t *testing.T, tok *Tokenizer, ids []int32) string {
	t.Helper()
	text, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func TestTokenizerEncodeDecodeLookups(t *testing.T) {
	tok, _ := mustTokenizer(t)
	ids := mustEncode(t, tok, "hello hello<|eot|>")
	if !reflect.DeepEqual(ids, []int32{259, 32, 259, 300}) {
		t.Fatalf("encode: %v", ids)
	}
	if got := mustDecode(t, tok, ids); got != "hello hello<|eot|>" {
		t.Fatalf("decode: %q", got)
	}
	odd := "a\x00b 日" // a NUL and a CJK character
	if got := mustDecode(t, tok, mustEncode(t, tok, odd)); got != odd {
		t.Fatalf("round trip: %q, want %q", got, odd)
	}
	// A cut-off sequence: 日 is three byte tokens; the first alone is one byte, not UTF-8.
	cjk := mustEncode(t, tok, "日")
	if got := mustDecode(t, tok, cjk[:1]); len(cjk) != 3 || got != "\xe6" {
		t.Fatalf("cut sequence: %v %q", cjk, got)
	}
	if ids := mustEncode(t, tok, ""); len(ids) != 0 {
		t.Fatalf("empty text: %v", ids)
	}
	if got := mustDecode(t, tok, nil); got != "" {
		t.Fatalf("no ids: %q", got)
	}
	long := strings.Repeat("hello world ", 500) // longer than the first decode buffer
	if got := mustDecode(t, tok, mustEncode(t, tok, long)); got != long {
		t.Fatal("long text does not round-trip")
	}
	if v, err := tok.VocabSize(); err != nil || v != 301 {
		t.Fatalf("vocab size %d %v", v, err)
	}
	if id, ok, err := tok.TokenID("<|eot|>"); err != nil || !ok || id != 300 {
		t.Fatalf("token id <|eot|>: %d %v %v", id, ok, err)
	}
	if id, ok, err := tok.TokenID("hell"); err != nil || !ok || id != 258 {
		t.Fatalf("token id hell: %d %v %v", id, ok, err)
	}
	if id, ok, err := tok.TokenID("not a token"); err != nil || ok || id != -1 {
		t.Fatalf("absent token: %d %v %v", id, ok, err)
	}
}

func TestTokenizerErrors(t *testing.T) {
	tok, dir := mustTokenizer(t)
	_, err := LoadTokenizer(filepath.Join(dir, "missing.json"))
	if e := asError(t, err, ErrIO); !strings.Contains(e.Message, "missing.json") {
		t.Fatalf("message: %v", e)
	}
	_, err = tok.Encode("ok\xff")
	if e := asError(t, err, ErrInvalidArgument); !strings.Contains(e.Message, "byte 2") {
		t.Fatalf("message: %v", e)
	}
	_, err = tok.Decode([]int32{301})
	if e := asError(t, err, ErrInvalidArgument); !strings.Contains(e.Message, "301") {
		t.Fatalf("message: %v", e)
	}
	if ids := mustEncode(t, tok, "hello"); !reflect.DeepEqual(ids, []int32{259}) {
		t.Fatalf("after errors: %v", ids)
	}
	// A model folder holding a tokenizer.json loads too.
	folder, err := LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := folder.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checks := map[string]error{}
	_, checks["Encode"] = folder.Encode("a")
	_, checks["Decode"] = folder.Decode([]int32{1})
	_, checks["VocabSize"] = folder.VocabSize()
	_, _, checks["TokenID"] = folder.TokenID("a")
	for name, err := range checks {
		if err != ErrClosed {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// One tokenizer used by many goroutines at once gives the same ids everywhere; a Close
// racing with them waits for the calls in flight.
func TestTokenizerConcurrentUse(t *testing.T) {
	tok, _ := mustTokenizer(t)
	const text = "hello world, hello <|eot|> again\n日本"
	want := mustEncode(t, tok, text)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ids, err := tok.Encode(text)
				if err != nil || !reflect.DeepEqual(ids, want) {
					errs <- fmt.Errorf("goroutine %d: %v %v", g, ids, err)
					return
				}
				if got, err := tok.Decode(ids); err != nil || got != text {
					errs <- fmt.Errorf("goroutine %d: decode %q %v", g, got, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var racing sync.WaitGroup
	for g := 0; g < 4; g++ {
		racing.Add(1)
		go func() {
			defer racing.Done()
			for i := 0; i < 100; i++ {
				if ids, err := tok.Encode(text); err == ErrClosed {
					return
				} else if err != nil || !reflect.DeepEqual(ids, want) {
					t.Errorf("encode racing Close: %v %v", ids, err)
					return
				}
			}
		}()
	}
	tok.Close()
	racing.Wait()
}

func TestPrepareText(t *testing.T) {
	dir := scratch(t)
	writeTinyTokenizer(t, dir)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("tokenizer_config.json", `{"eos_token": "<|eot|>"}`)
	// 18 bytes each: ValFraction 0.5 cuts at b's first byte, so b is val, whole.
	a := write("a.txt", "hello\nhello hello\n")
	b := write("b.txt", "hello\nworld hello\n")
	out := filepath.Join(dir, "shards")
	var reports [][2]int64
	r, err := PrepareText([]string{a, b}, out, PrepareOptions{Tokenizer: dir, ValFraction: 0.5,
		Threads: 2, Progress: func(done, total int64) bool {
			reports = append(reports, [2]int64{done, total})
			return false
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Documents != 2 || r.EOSID != 300 || r.VocabSize != 301 || r.TokenBytes != 2 || r.Bytes != 36 ||
		r.TrainTokens <= 0 || r.ValTokens <= 0 {
		t.Fatalf("result %+v", r)
	}
	for _, f := range []string{"train.bin", "val.bin"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	if len(reports) == 0 || reports[len(reports)-1] != [2]int64{36, 36} {
		t.Fatalf("progress reports %v", reports)
	}
	if r.TrainShards != 1 || r.ValShards != 1 {
		t.Fatalf("shards %+v", r)
	}

	// Numbered shards of at most 2 tokens; the single files of the first run are removed.
	s, err := PrepareText([]string{a, b}, out, PrepareOptions{Tokenizer: dir, ValFraction: 0.5,
		ShardTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.TrainTokens != r.TrainTokens || int64(s.TrainShards) != (r.TrainTokens+1)/2 {
		t.Fatalf("sharded %+v, single %+v", s, r)
	}
	if _, err := os.Stat(filepath.Join(out, "train_000000.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "train.bin")); !os.IsNotExist(err) {
		t.Fatalf("train.bin of the first run is still there: %v", err)
	}

	// JSON lines, the tokenizer file itself, no progress.
	jl := write("docs.jsonl", "{\"text\": \"hello\"}\n{\"text\": \"hello hello\"}\n")
	opts := PrepareOptions{Tokenizer: filepath.Join(dir, "tokenizer.json"), JSONLField: "text"}
	r, err = PrepareText([]string{jl}, filepath.Join(dir, "jl"), opts)
	if err != nil || r.Documents != 2 || r.TrainTokens != 6 || r.ValTokens != 0 {
		t.Fatalf("jsonl: %+v %v", r, err)
	}
	_, err = PrepareText([]string{filepath.Join(dir, "none.txt")}, filepath.Join(dir, "x"), opts)
	asError(t, err, ErrIO)
	_, err = PrepareText(nil, filepath.Join(dir, "x"), opts)
	asError(t, err, ErrInvalidArgument)

	// A panic in Progress comes back out of PrepareText once C has returned.
	func() {
		defer func() {
			if r := recover(); r != "boom in progress" {
				t.Fatalf("recovered %v", r)
			}
		}()
		PrepareText([]string{a}, filepath.Join(dir, "p"), PrepareOptions{Tokenizer: dir,
			Progress: func(done, total int64) bool { panic("boom in progress") }})
	}()
	// The panic stopped the run: no shard.
	if _, err := os.Stat(filepath.Join(dir, "p", "train.bin")); !os.IsNotExist(err) {
		t.Fatalf("train.bin after a panic in Progress: %v", err)
	}
}

func TestPrepareTextProgressCanStop(t *testing.T) {
	dir := scratch(t)
	writeTinyTokenizer(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"),
		[]byte(`{"eos_token": "<|eot|>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("hello\nhello hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	calls := 0
	_, err := PrepareText([]string{a}, out, PrepareOptions{Tokenizer: dir,
		Progress: func(done, total int64) bool {
			calls++
			return true
		}})
	asError(t, err, ErrCancelled)
	if calls != 1 {
		t.Fatalf("Progress called %d times after asking to stop", calls)
	}
	for _, f := range []string{"train.bin", "val.bin"} {
		if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
			t.Fatalf("%s after a stop: %v", f, err)
		}
	}
}
