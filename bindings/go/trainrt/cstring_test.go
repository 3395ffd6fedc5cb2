package trainrt

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wantNUL checks err is the binding's refusal of a string argument holding a NUL: C would see
// only the part before it (a path "x\x00y" naming the file "x").
func wantNUL(t *testing.T, what string, at int, err error) {
	t.Helper()
	e := asError(t, err, ErrInvalidArgument)
	want := what + " holds a NUL character at byte " + strconv.Itoa(at)
	if !strings.Contains(e.Message, want) {
		t.Fatalf("message %q, want it to hold %q", e.Message, want)
	}
}

// absent fails the test if p exists: the prefix before a NUL must not have been acted on.
func absent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("%s was written through a string cut at its NUL: %v", p, err)
	}
}

// Every string argument that becomes a C string refuses a NUL (ErrInvalidArgument naming the
// argument), before any library call; the same call without the NUL works. Each refused
// argument here has a prefix the library would have accepted.
func TestNULInStringArguments(t *testing.T) {
	dir := scratch(t)
	cfgPath := testConfig(t)

	// Config: file, text, base folder, checkpoint; Set and the getters.
	cfg, err := ConfigFromFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	_, err = ConfigFromFile(cfgPath + "\x00.bak")
	wantNUL(t, "path", len(cfgPath), err)
	dump, err := cfg.Dump()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ConfigFromString(dump+"\x00[x]", "")
	wantNUL(t, "toml", len(dump), err)
	_, err = ConfigFromString(dump, dir+"\x00/x")
	wantNUL(t, "baseDir", len(dir), err)

	wantNUL(t, "key", 8, cfg.Set("optim.lr\x00x", "1e-3"))
	wantNUL(t, "tomlValue", 4, cfg.Set("optim.lr", "1e-3\x00x"))
	if lr, err := cfg.GetFloat("optim.lr"); err != nil || lr != 0.003 {
		t.Fatalf("a refused Set changed the config: %v %v", lr, err)
	}
	if err := cfg.Set("optim.lr", "1e-3"); err != nil {
		t.Fatal(err)
	}
	_, err = cfg.GetInt("train.batch_size\x00")
	wantNUL(t, "key", 16, err)
	_, err = cfg.GetFloat("optim.lr\x00")
	wantNUL(t, "key", 8, err)
	_, err = cfg.GetBool("train.batch_size\x00")
	wantNUL(t, "key", 16, err)
	_, err = cfg.GetString("data.sampler\x00")
	wantNUL(t, "key", 12, err)
	if s, err := cfg.GetString("data.sampler"); err != nil || s != "random" {
		t.Fatalf("GetString: %q %v", s, err)
	}

	// Session: Save, Load, Export, ExportAdapter; the checkpoint functions.
	s := mustSession(t, cfg)
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "ckpt")
	_, err = s.Save(ckpt + "\x00x")
	wantNUL(t, "dir", len(ckpt), err)
	absent(t, ckpt)
	if _, err := s.Save(ckpt); err != nil {
		t.Fatal(err)
	}
	wantNUL(t, "path", len(ckpt), s.Load(ckpt+"\x00x"))
	if err := s.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "hf")
	wantNUL(t, "outDir", len(hf), s.Export(hf+"\x00x", DTypeF32))
	absent(t, hf)
	wantNUL(t, "outDir", len(hf), s.ExportAdapter(hf+"\x00x", DTypeF32))
	_, err = ConfigFromCheckpoint(ckpt + "\x00x")
	wantNUL(t, "path", len(ckpt), err)
	if c, err := ConfigFromCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	_, err = CheckpointLatest(dir + "\x00x")
	wantNUL(t, "outDir", len(dir), err)
	wantNUL(t, "path", len(ckpt), CheckpointExport(ckpt+"\x00x", hf, DTypeF32))
	wantNUL(t, "outDir", len(hf), CheckpointExport(ckpt, hf+"\x00x", DTypeF32))
	absent(t, hf)
	wantNUL(t, "path", len(ckpt), CheckpointExportAdapter(ckpt+"\x00x", hf, DTypeF32))
	wantNUL(t, "outDir", len(hf), CheckpointExportAdapter(ckpt, hf+"\x00x", DTypeF32))
	if err := CheckpointExport(ckpt, hf, DTypeF32); err != nil {
		t.Fatal(err)
	}

	// Tokenizer: Load, TokenID.
	tokPath := writeTinyTokenizer(t, dir)
	_, err = LoadTokenizer(tokPath + "\x00x")
	wantNUL(t, "path", len(tokPath), err)
	tok, err := LoadTokenizer(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	_, _, err = tok.TokenID("hell\x00o")
	wantNUL(t, "token", 4, err)
	if id, ok, err := tok.TokenID("hell"); err != nil || !ok || id != 258 {
		t.Fatalf("TokenID: %d %v %v", id, ok, err)
	}

	// Data preparation: every path and the JSONL field.
	eos := filepath.Join(dir, "tokenizer_config.json")
	if err := os.WriteFile(eos, []byte(`{"eos_token": "<|eot|>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(text, []byte("hello\nhello hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(dir, "shards")
	_, _, err = PrepareBytes(text+"\x00x", shards, 0.1)
	wantNUL(t, "textPath", len(text), err)
	_, _, err = PrepareBytes(text, shards+"\x00x", 0.1)
	wantNUL(t, "outDir", len(shards), err)
	absent(t, shards)
	opts := PrepareOptions{Tokenizer: tokPath}
	_, err = PrepareText([]string{text, text + "\x00x"}, shards, opts)
	wantNUL(t, "inputs[1]", len(text), err)
	_, err = PrepareText([]string{text}, shards+"\x00x", opts)
	wantNUL(t, "outDir", len(shards), err)
	_, err = PrepareText([]string{text}, shards, PrepareOptions{Tokenizer: tokPath + "\x00x"})
	wantNUL(t, "opts.Tokenizer", len(tokPath), err)
	_, err = PrepareText([]string{text}, shards, PrepareOptions{Tokenizer: tokPath, JSONLField: "text\x00x"})
	wantNUL(t, "opts.JSONLField", 4, err)
	absent(t, shards)
	if r, err := PrepareText([]string{text}, shards, opts); err != nil || r.Documents != 1 {
		t.Fatalf("PrepareText: %+v %v", r, err)
	}
}
