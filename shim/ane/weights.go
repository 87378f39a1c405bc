package ane

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/anemone-go/anemone/lower"
)

// ModelPathPrefix starts every weight path in MIL text; the framework
// replaces it with the model's temporary directory.
const ModelPathPrefix = "@model_path/"

// File names inside the model's temporary directory (ANE_CALLS §3 step 4).
const (
	MILFile    = "model.mil"
	WeightsDir = "weights"
)

// WeightsDict is the weights argument of
// +[_ANEInMemoryModelDescriptor modelWithMILText:weights:optionsPlist:] as Go
// data: {lower.WeightPath: {"offset": int64(0), "data": blob}}. The offset
// is 0 although the MIL's BLOBFILE offset is 64: the dictionary locates the
// file, the MIL the blob's record inside it (ANE_CALLS §7). A program
// without weights gets an empty, non-nil map: nil crashes the framework.
func WeightsDict(p *lower.Program) map[string]any {
	d := map[string]any{}
	if p != nil && len(p.Blob) > 0 {
		d[lower.WeightPath] = map[string]any{"offset": int64(0), "data": p.Blob}
	}
	return d
}

// File is one file to write into the model's temporary directory before
// compiling: Rel is slash-separated and relative to that directory.
type File struct {
	Rel  string
	Data []byte
}

// PlanFiles lists the files the compiler expects to find in the model's
// temporary directory: model.mil with exactly the MIL bytes, and each weight
// blob at its dictionary key with the @model_path/ prefix removed
// (weights/weight.bin). A missing file fails like a malformed program.
func PlanFiles(p *lower.Program) ([]File, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil program", ErrProgram)
	}
	files := []File{{Rel: MILFile, Data: p.MIL}}
	if len(p.Blob) > 0 {
		rel, err := WeightRel(lower.WeightPath)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Rel: rel, Data: p.Blob})
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
