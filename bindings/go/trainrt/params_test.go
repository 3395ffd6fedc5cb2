package trainrt

import (
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParamInfoLayout(t *testing.T) {
	size, shape, offset, trainable, initSize := paramInfoLayout()
	if size != 72 || shape != 16 || offset != 56 || trainable != 68 {
		t.Fatalf("trainrt_param_info: size %d, shape at %d, offset at %d, trainable at %d; want 72, 16, 56, 68",
			size, shape, offset, trainable)
	}
	if initSize != size {
		t.Fatalf("trainrt_param_info_init wrote struct_size %d, header says %d", initSize, size)
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestParamsList(t *testing.T) {
	cfg := mustConfig(t)
	s := mustSession(t, cfg)
	tensors, numel, err := s.ParamCount()
	if err != nil {
		t.Fatal(err)
	}
	params, err := s.Params()
	if err != nil {
		t.Fatal(err)
	}
	if len(params) != tensors || tensors < 3 {
		t.Fatalf("%d params listed, count %d", len(params), tensors)
	}
	want := ParamInfo{Name: "wte.weight", Role: RoleTokenEmbedding, Shape: []int{256, 32},
		Numel: 256 * 32, Offset: 0, Layer: -1, Trainable: true}
	if !reflect.DeepEqual(params[0], want) {
		t.Fatalf("first tensor %+v, want %+v", params[0], want)
	}
	if params[0].Role.String() != "token_embedding" || params[1].Role != RolePositionEmbedding {
		t.Fatalf("roles %v %v", params[0].Role, params[1].Role)
	}
	next, linear, layer1 := 0, false, false
	for _, p := range params {
		if p.Offset != next {
			t.Fatalf("%s starts at %d, previous ends at %d", p.Name, p.Offset, next)
		}
		prod := 1
		for _, d := range p.Shape {
			prod *= d
		}
		if prod != p.Numel || len(p.Shape) < 1 || len(p.Shape) > 2 {
			t.Fatalf("%s: shape %v, numel %d", p.Name, p.Shape, p.Numel)
		}
		if p.Layer < -1 || p.Layer > 1 {
			t.Fatalf("%s: layer %d", p.Name, p.Layer)
		}
		linear = linear || p.Role == RoleLinear
		layer1 = layer1 || p.Layer == 1
		next += p.Numel
	}
	if next != numel {
		t.Fatalf("offsets sum to %d, flat buffer holds %d", next, numel)
	}
	if !linear || !layer1 {
		t.Fatal("no linear weight or no tensor of block 1")
	}
	if info, err := cfg.ModelInfo(); err != nil || info.Parameters != int64(numel) {
		t.Fatalf("model info parameters %d (%v), flat buffer %d", info.Parameters, err, numel)
	}
}

func TestParamsReadFlatIsNamedConcatenated(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	flat, err := s.ReadParams()
	if err != nil {
		t.Fatal(err)
	}
	params, err := s.Params()
	if err != nil {
		t.Fatal(err)
	}
	var concat []float32
	for _, p := range params {
		v, err := s.ReadParam(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != p.Numel || !sameBits(v, flat[p.Offset:p.Offset+p.Numel]) {
			t.Fatalf("%s differs from its slice of the flat buffer", p.Name)
		}
		concat = append(concat, v...)
	}
	if !sameBits(flat, concat) {
		t.Fatal("flat buffer != concatenation of the named reads")
	}
}

func TestParamsWriteChangesEvalAndRestores(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	before, err := s.Eval()
	if err != nil {
		t.Fatal(err)
	}
	orig, err := s.ReadParam("wte.weight")
	if err != nil {
		t.Fatal(err)
	}
	scaled := make([]float32, len(orig))
	for i, v := range orig {
		scaled[i] = v*3 + 0.01
	}
	if err := s.WriteParam("wte.weight", scaled); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadParam("wte.weight"); !sameBits(got, scaled) {
		t.Fatal("read after write differs")
	}
	changed, err := s.Eval()
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(changed) == math.Float64bits(before) {
		t.Fatalf("eval loss %v unchanged by the write", changed)
	}
	if err := s.WriteParam("wte.weight", orig); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Eval(); err != nil || math.Float64bits(again) != math.Float64bits(before) {
		t.Fatalf("eval after restoring %v (%v), before %v", again, err, before)
	}
	flat, err := s.ReadParams()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteParams(flat); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Eval(); err != nil || math.Float64bits(again) != math.Float64bits(before) {
		t.Fatalf("eval after a flat write-back %v (%v), before %v", again, err, before)
	}
	if r, err := s.Step(); err != nil || math.IsNaN(r.Loss) {
		t.Fatalf("step after writes %+v %v", r, err)
	}
}

func TestParamsRefusedWritesLeaveWeights(t *testing.T) {
	s := mustSession(t, mustConfig(t))
	before, err := s.ReadParams()
	if err != nil {
		t.Fatal(err)
	}
	wte, err := s.ReadParam("wte.weight")
	if err != nil {
		t.Fatal(err)
	}
	e := asError(t, s.WriteParam("wte.weight", wte[1:]), ErrInvalidArgument)
	if !strings.Contains(e.Message, "wte.weight") {
		t.Fatalf("size mismatch message %q", e.Message)
	}
	e = asError(t, s.WriteParams(before[:10]), ErrInvalidArgument)
	if !strings.Contains(e.Message, strconv.Itoa(len(before))) {
		t.Fatalf("flat size mismatch message %q does not say %d", e.Message, len(before))
	}
	asError(t, s.WriteParams(nil), ErrInvalidArgument)

	poisoned := append([]float32(nil), before...)
	poisoned[len(poisoned)-1] = float32(math.NaN())
	e = asError(t, s.WriteParams(poisoned), ErrNonFinite)
	if e.Status != -13 || e.Message == "" {
		t.Fatalf("non-finite error %+v", e)
	}
	bad := append([]float32(nil), wte...)
	bad[7] = float32(math.Inf(1))
	asError(t, s.WriteParam("wte.weight", bad), ErrNonFinite)

	_, err = s.ReadParam("wte.weigth")
	e = asError(t, err, ErrInvalidArgument)
	if !strings.Contains(e.Message, "did you mean") || !strings.Contains(e.Message, "wte.weight") {
		t.Fatalf("unknown name message %q", e.Message)
	}
	e = asError(t, s.WriteParam("wte.weigth", wte), ErrInvalidArgument)
	if !strings.Contains(e.Message, "did you mean") {
		t.Fatalf("unknown name message %q", e.Message)
	}
	asError(t, s.WriteParam("wte.weight\x00x", wte), ErrInvalidArgument)

	after, err := s.ReadParams()
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(before, after) {
		t.Fatal("a refused write changed the weights")
	}
}

func TestMetadata(t *testing.T) {
	cfg := mustConfig(t)
	s := mustSession(t, cfg)
	if keys, err := s.MetadataKeys(); err != nil || len(keys) != 0 {
		t.Fatalf("fresh session keys %v %v", keys, err)
	}
	if v, ok, err := s.Metadata("client"); err != nil || ok || v != "" {
		t.Fatalf("absent key: %q %v %v", v, ok, err)
	}
	long := strings.Repeat("y", 5000)
	for _, kv := range [][2]string{{"run.name", "tiny ünïcødé"}, {"client", "7"}, {"Zeta-1", ""},
		{"long_value", long}, {"client", "8"}} {
		if err := s.SetMetadata(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for k, want := range map[string]string{"client": "8", "Zeta-1": "", "long_value": long} {
		if v, ok, err := s.Metadata(k); err != nil || !ok || v != want {
			t.Fatalf("%s: %.20q %v %v", k, v, ok, err)
		}
	}
	if keys, _ := s.MetadataKeys(); !reflect.DeepEqual(keys, []string{"Zeta-1", "client", "long_value", "run.name"}) {
		t.Fatalf("keys %v", keys)
	}
	if err := s.RemoveMetadata("long_value"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveMetadata("never-set"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Metadata("long_value"); ok {
		t.Fatal("removed key still there")
	}
	e := asError(t, s.SetMetadata("a key", "v"), ErrInvalidArgument)
	if e.Message == "" {
		t.Fatal("no message")
	}
	asError(t, s.SetMetadata("k", "a\x00b"), ErrInvalidArgument)

	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(scratch(t), "ckpt")
	if _, err := s.Save(ckpt); err != nil {
		t.Fatal(err)
	}
	b := mustSession(t, cfg)
	if err := b.SetMetadata("replaced", "by the load"); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	if keys, _ := b.MetadataKeys(); !reflect.DeepEqual(keys, []string{"Zeta-1", "client", "run.name"}) {
		t.Fatalf("keys after load %v", keys)
	}
	if v, ok, err := b.Metadata("run.name"); err != nil || !ok || v != "tiny ünïcødé" {
		t.Fatalf("run.name after load %q %v %v", v, ok, err)
	}
	wa, _ := s.ReadParams()
	wb, _ := b.ReadParams()
	if !sameBits(wa, wb) {
		t.Fatal("loaded weights differ")
	}
	s.Close()
	if _, err := s.Params(); err != ErrClosed {
		t.Fatalf("Params after Close: %v", err)
	}
	if _, _, err := s.Metadata("client"); err != ErrClosed {
		t.Fatalf("Metadata after Close: %v", err)
	}
}
