package ane

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/anemone-go/anemone/lower"
)

// ModelPathPrefix starts every weight path in MIL text; the framework
// replaces it with the model's temporary directory.
const ModelPathPrefix = "@model_path/"

// File names inside the model's temporary directory.
const (
	MILFile    = "model.mil"
	WeightsDir = "weights"
)

// weightIDLen is how many hex digits of the program hash go into the weight
// file's name: 128 bits, so that two different programs never share one.
const weightIDLen = 32

// Model is what one program hands the framework: the MIL text and the
// weights dictionary of +[_ANEInMemoryModelDescriptor
// modelWithMILText:weights:optionsPlist:], and the files written into the
// model's directory before compiling.
//
// The framework's model identifier (hexStringIdentifier) is reported to be
// derived from the MIL text and the weights dictionary's keys, not from the
// weight bytes, and the identifier names the model's directory and, in the
// daemon, the compiled program. Two programs with the same MIL and different
// weights would then share both. So the weight file is named after a hash
// of the whole program (MIL and weights), and the MIL's BLOBFILE paths and
// the dictionary key are rewritten to that name: programs that differ
// anywhere differ in their MIL text too.
type Model struct {
	MIL       []byte // the program's MIL with its weight path rewritten
	Blob      []byte // the weight file; empty when the program has none
	WeightKey string // "@model_path/weights/<hash>.bin", or "" without weights
	Hash      string // hex SHA-256 of the program's MIL and weights
}

// ProgramHash is the hex SHA-256 of a program's MIL text and weight blob,
// each preceded by its length so that no two (MIL, blob) pairs collide by
// concatenation.
func ProgramHash(p *lower.Program) string {
	h := sha256.New()
	var n [8]byte
	for _, b := range [][]byte{p.MIL, p.Blob} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PlanModel prepares a program for the framework. Every weight path in the
// MIL must be lower.WeightPath, the one file the lowering writes; it is replaced, in the MIL and in the dictionary key alike, by a
// name that carries the program hash. A program that names another file,
// or names the weight file without having weights, is refused with
// ErrProgram: that file would not exist, which fails like a malformed
// program.
func PlanModel(p *lower.Program) (*Model, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil program", ErrProgram)
	}
	m := &Model{Hash: ProgramHash(p), Blob: p.Blob}
	quoted := []byte(`"` + lower.WeightPath + `"`)
	uses := bytes.Count(p.MIL, quoted)
	if all := bytes.Count(p.MIL, []byte(ModelPathPrefix)); all != uses {
		return nil, fmt.Errorf("%w: the MIL names %d weight files other than %q; the device writes only that one", ErrProgram, all-uses, lower.WeightPath)
	}
	if len(p.Blob) == 0 {
		if uses > 0 {
			return nil, fmt.Errorf("%w: the MIL reads %q but the program has no weight blob", ErrProgram, lower.WeightPath)
		}
		m.MIL = p.MIL
		return m, nil
	}
	m.WeightKey = ModelPathPrefix + WeightsDir + "/" + m.Hash[:weightIDLen] + ".bin"
	m.MIL = bytes.ReplaceAll(p.MIL, quoted, []byte(`"`+m.WeightKey+`"`))
	return m, nil
}

// WeightsDict is the weights argument of the descriptor as Go data:
// {WeightKey: {"offset": int64(0), "data": blob}}. The offset is 0 although
// the MIL's BLOBFILE offset is 64: the dictionary locates the file, the MIL
// the blob's record inside it. A program without weights
// gets an empty, non-nil map: nil crashes the framework.
func (m *Model) WeightsDict() map[string]any {
	d := map[string]any{}
	if m != nil && len(m.Blob) > 0 {
		d[m.WeightKey] = map[string]any{"offset": int64(0), "data": m.Blob}
	}
	return d
}

// File is one file to write into the model's temporary directory before
// compiling: Rel is slash-separated and relative to that directory.
type File struct {
	Rel  string
	Data []byte
}

// Files lists the files the compiler expects in the model's temporary
// directory: model.mil with exactly the (rewritten) MIL bytes, and the
// weight blob at its dictionary key with the @model_path/ prefix removed.
// A missing file fails like a malformed program.
func (m *Model) Files() ([]File, error) {
	files := []File{{Rel: MILFile, Data: m.MIL}}
	if len(m.Blob) > 0 {
		rel, err := WeightRel(m.WeightKey)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Rel: rel, Data: m.Blob})
	}
	return files, nil
}

// WeightRel turns a weights-dictionary key into a path relative to the model
// directory, refusing anything that could escape it.
func WeightRel(key string) (string, error) {
	rel, ok := strings.CutPrefix(key, ModelPathPrefix)
	if !ok {
		return "", fmt.Errorf("%w: weight path %q does not start with %q", ErrProgram, key, ModelPathPrefix)
	}
	if rel == "" || strings.Contains(rel, `\`) || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("%w: weight path %q is not a relative file path", ErrProgram, key)
	}
	clean := path.Clean(rel)
	if clean != rel || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: weight path %q is not a clean path inside the model directory", ErrProgram, key)
	}
	return clean, nil
}

// ModelDirName checks that the model's hexStringIdentifier is safe to use as
// one path element under the temporary directory.
func ModelDirName(hex string) (string, error) {
	if hex == "" || hex == "." || hex == ".." || strings.ContainsAny(hex, `/\`+"\x00") {
		return "", fmt.Errorf("%w: model identifier %q is not a usable directory name", ErrDevice, hex)
	}
	return hex, nil
}

// WriteFiles creates dir, dir/weights and the planned files. Directories
// are 0755 and files 0644, as in the public drivers: the compiler may read
// them from a system daemon rather than this process, so they are kept
// readable (the directory sits in the per-user temporary directory).
func WriteFiles(dir string, files []File) error {
	if err := os.MkdirAll(filepath.Join(dir, WeightsDir), 0o755); err != nil {
		return fmt.Errorf("ane: writing model files: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("ane: writing model files: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("ane: writing model files: %w", err)
		}
	}
	return nil
}

// identities maps each model identifier in use in this process to the hash
// of the program it was given for, with a count of the executables using
// it. It is the second guard against a shared identifier (PlanModel's
// rewrite is the first): a clash is refused instead of silently running
// another program's compilation.
type identities struct {
	mu sync.Mutex
	m  map[string]identity
}

type identity struct {
	hash string
	refs int
}

var modelIDs = &identities{m: map[string]identity{}}

// claim records that an executable of the program with hash uses id. It
// fails with ErrClash if id is in use by a program with another hash.
func (r *identities) claim(id, hash string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[id]; ok && e.hash != hash {
		return fmt.Errorf("%w: identifier %s is in use by program %.16s…, refusing program %.16s… (close the other executable first)", ErrClash, id, e.hash, hash)
	}
	e := r.m[id]
	e.hash = hash
	e.refs++
	r.m[id] = e
	return nil
}

// release drops one use of id and reports whether it was the last, when
// the model's directory may be removed.
func (r *identities) release(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[id]
	if !ok {
		return false
	}
	e.refs--
	if e.refs > 0 {
		r.m[id] = e
		return false
	}
	delete(r.m, id)
	return true
}
