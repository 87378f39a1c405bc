package mil

import (
	"bytes"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		briefProgram, everyKind, maderixStyle, oldStyle,
		body(`tensor<fp16, [2]> y = add(x = x, y = x;`),
		body(`(tensor<fp16, [1]> a, tensor<fp16, [1]> b) = split(x = x); // c`),
		body(`tensor<fp16, [2, 2]> m = const()[val = tensor<fp16, [2, 2]>([[1, 2], [3e-3, -inf]])];`),
		body(`string s = const()[val = string("a\"b\\c\n")];`),
		"program(1.3)\n{\n}\n",
		"program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, []>>({})]\n{\n}\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Parse(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T, want *SyntaxError: %v", err, err)
			}
			return
		}
		out := Print(p)
		p2, err := Parse(out)
		if err != nil {
			t.Fatalf("printed program does not parse: %v\n%s", err, out)
		}
		if out2 := Print(p2); !bytes.Equal(out, out2) {
			t.Fatalf("Print is not a fixed point:\n%s\n---\n%s", out, out2)
		}
		_ = p.Check() // must not panic
	})
}

func FuzzReadBlob(f *testing.F) {
	w, _, _ := threeBlobs()
	good := w.Bytes()
	f.Add(good)
	f.Add(good[:300])
	f.Add(NewBlobWriter().Bytes())
	one := NewBlobWriter()
	one.Add(BlobFP16, FP16Data([]float64{1, 2, 3}))
	f.Add(one.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		bf, err := ReadBlob(b)
		if err != nil {
			if _, ok := err.(*BlobError); !ok {
				t.Fatalf("error %T, want *BlobError: %v", err, err)
			}
			return
		}
		end := uint64(64)
		for i, e := range bf.Entries {
			if e.Offset%64 != 0 || e.Offset < end || e.Offset+64 > uint64(len(b)) {
				t.Fatalf("entry %d: metadata offset %d out of bounds (file %d bytes)", i, e.Offset, len(b))
			}
			data := e.Offset + 64 // data starts at or after the metadata's end
			if uint64(len(e.Data)) > uint64(len(b))-data {
				t.Fatalf("entry %d: %d data bytes cannot fit after offset %d", i, len(e.Data), data)
			}
			got, err := bf.At(e.Offset)
			if err != nil || got.Offset != e.Offset {
				t.Fatalf("At(%d) = %v, %v", e.Offset, got.Offset, err)
			}
			end = e.Offset + 64 + uint64(len(e.Data))
		}
	})
}
