package ane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
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
// weights would then share both. So every weight file is named after a hash
// of the whole program (MIL and weights), and the MIL's BLOBFILE paths and
// the dictionary keys are rewritten to those names: programs that differ
// anywhere differ in their MIL text too.
type Model struct {
	MIL     []byte   // the program's MIL with its weight paths rewritten
	Weights []Weight // the weight files; none when the program has no weights
	Hash    string   // hex SHA-256 of the program's MIL and weights
	Layout  WeightLayout
}

// Weight is one weight file: its key in the weights dictionary and in the
// MIL's BLOBFILE paths ("@model_path/weights/<hash>.bin"), and its bytes.
type Weight struct {
	Key  string
	Data []byte
}

// WeightLayout is how a program's constants are split into weight files.
type WeightLayout int

const (
	// WeightsAuto is WeightsPerConstant on M1 and WeightsShared elsewhere.
	WeightsAuto WeightLayout = iota
	// WeightsShared hands over the lowering's one weight file, every
	// constant's record at its own offset (docs/ENGINE.md §2).
	WeightsShared
	// WeightsPerConstant writes one weight file per constant, each with
	// its one record at offset 64: the only layout a working M1 driver
	// shows running on this route (docs/ENGINE.md §2).
	WeightsPerConstant
)

func (w WeightLayout) String() string {
	switch w {
	case WeightsAuto:
		return "auto"
	case WeightsShared:
		return "one shared file"
	case WeightsPerConstant:
		return "one file per constant"
	}
	return fmt.Sprintf("WeightLayout(%d)", int(w))
}

// WeightLayoutFor resolves WeightsAuto for a device target: one file per
// constant on M1, the shared file elsewhere. Any other choice stands.
func WeightLayoutFor(t lower.Target, choice WeightLayout) WeightLayout {
	if choice != WeightsAuto {
		return choice
	}
	if t.Name == lower.TargetM1.Name {
		return WeightsPerConstant
	}
	return WeightsShared
}

// ProgramHash is the hex SHA-256 of a program's MIL text and weight blob,
// each preceded by its length so that no two (MIL, blob) pairs collide by
// concatenation.
func ProgramHash(p *lower.Program) string { return engine.ProgramHash(p.MIL, p.Blob) }

// blobRef matches one BLOBFILE reference as the MIL printer spells it, with
// any spacing: group 1 is the quoted path, group 2 the offset.
var blobRef = regexp.MustCompile(`BLOBFILE\(\s*path\s*=\s*string\(("[^"]*")\)\s*,\s*offset\s*=\s*uint64\((\d+)\)\s*\)`)

// PlanModel prepares a program for the framework, with its weights laid
// out as layout says (WeightsAuto is taken for WeightsShared). Every weight
// path in the MIL must be lower.WeightPath, the one file the lowering
// writes; a program that names another file, or names the weight file
// without having weights, is refused with ErrProgram: that file would not
// exist, which fails like a malformed program.
//
// With WeightsShared the path is replaced, in the MIL and in the dictionary
// key alike, by "weights/<hash>.bin". With WeightsPerConstant each
// constant's record k of the blob becomes the file "weights/<hash>-<k>.bin"
// holding a one-record blob with the same dtype and data bytes, and each
// BLOBFILE reference is rewritten to that file at offset 64.
func PlanModel(p *lower.Program, layout WeightLayout) (*Model, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil program", ErrProgram)
	}
	if layout == WeightsAuto {
		layout = WeightsShared
	}
	m := &Model{Hash: ProgramHash(p), Layout: layout}
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
	base := ModelPathPrefix + WeightsDir + "/" + m.Hash[:weightIDLen]
	switch layout {
	case WeightsShared:
		key := base + ".bin"
		m.MIL = bytes.ReplaceAll(p.MIL, quoted, []byte(`"`+key+`"`))
		m.Weights = []Weight{{Key: key, Data: p.Blob}}
		return m, nil
	case WeightsPerConstant:
		return m, m.splitWeights(p, base, uses)
	}
	return nil, fmt.Errorf("%w: unknown weight layout %v", ErrProgram, layout)
}

// splitWeights fills m.MIL and m.Weights with one file per constant.
func (m *Model) splitWeights(p *lower.Program, base string, uses int) error {
	blob, err := mil.ReadBlob(p.Blob)
	if err != nil {
		return fmt.Errorf("%w: the weight blob cannot be split into one file per constant: %v", ErrProgram, err)
	}
	index := make(map[uint64]int, len(blob.Entries))
	for k, e := range blob.Entries {
		index[e.Offset] = k
	}
	files := map[int]int{} // blob entry -> position in m.Weights
	var bad error
	rewritten := 0
	m.MIL = blobRef.ReplaceAllFunc(p.MIL, func(ref []byte) []byte {
		g := blobRef.FindSubmatch(ref)
		if string(g[1]) != `"`+lower.WeightPath+`"` {
			return ref
		}
		rewritten++
		off, err := strconv.ParseUint(string(g[2]), 10, 64)
		k, ok := index[off]
		if err != nil || !ok {
			bad = errors.Join(bad, fmt.Errorf("BLOBFILE offset %s is no record of the weight blob", g[2]))
			return ref
		}
		w, ok := files[k]
		if !ok {
			e := blob.Entries[k]
			bw := mil.NewBlobWriter()
			bw.Add(e.DType, e.Data)
			w = len(m.Weights)
			files[k] = w
			m.Weights = append(m.Weights, Weight{Key: fmt.Sprintf("%s-%d.bin", base, k), Data: bw.Bytes()})
		}
		return fmt.Appendf(nil, "BLOBFILE(path = string(%q), offset = uint64(%d))", m.Weights[w].Key, firstRecord)
	})
	switch {
	case bad != nil:
		return fmt.Errorf("%w: %v", ErrProgram, bad)
	case rewritten != uses:
		return fmt.Errorf("%w: the MIL names %q %d times, %d of them outside a BLOBFILE reference this package can rewrite", ErrProgram, lower.WeightPath, uses, uses-rewritten)
	}
	return nil
}

// firstRecord is the offset of a weight file's first record, after the
// 64-byte file header (docs/ENGINE.md §2).
const firstRecord = 64

// WeightsDict is the weights argument of the descriptor as Go data: one
// entry {Key: {"offset": int64(0), "data": bytes}} per weight file. The
// offset is 0 although the MIL's BLOBFILE offsets are 64 and up: the
// dictionary locates the file, the MIL the record inside it. A program
// without weights gets an empty, non-nil map: nil crashes the framework.
func (m *Model) WeightsDict() map[string]any {
	d := map[string]any{}
	if m == nil {
		return d
	}
	for _, w := range m.Weights {
		d[w.Key] = map[string]any{"offset": int64(0), "data": w.Data}
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
// directory: model.mil with exactly the (rewritten) MIL bytes, and each
// weight file at its dictionary key with the @model_path/ prefix removed.
// A missing file fails like a malformed program.
func (m *Model) Files() ([]File, error) {
	files := []File{{Rel: MILFile, Data: m.MIL}}
	for _, w := range m.Weights {
		rel, err := WeightRel(w.Key)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Rel: rel, Data: w.Data})
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
