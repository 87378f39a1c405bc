package engine

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneDefinitionOfEachFact scans every non-test Go file of the module
// for numeric literals equal to an engine fact — the matmul cliff, the
// slice clamp, the row and channel limits, fp16's largest value — and
// fails on any outside this package (and fp16, which defines the format's
// own largest value): a copy of a fact is a bug, since copies drift apart.
// Comments and strings are not code and may state the figures.
func TestOneDefinitionOfEachFact(t *testing.T) {
	facts := map[float64]string{Cliff: "Cliff", SliceClamp: "SliceClamp", RowLimit: "RowLimit", ChannelLimit: "ChannelLimit", MaxValue: "MaxValue"}
	root := filepath.Join("..")
	var stray []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "engine" || name == "fp16") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		file := fset.AddFile(path, -1, len(src))
		var s scanner.Scanner
		s.Init(file, src, nil, 0)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.INT && tok != token.FLOAT {
				continue
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(lit, "_", ""), 64)
			if err != nil {
				if i, err := strconv.ParseInt(strings.ReplaceAll(lit, "_", ""), 0, 64); err == nil {
					v = float64(i)
				} else {
					continue
				}
			}
			if name, ok := facts[v]; ok {
				stray = append(stray, fset.Position(pos).String()+": "+lit+" (engine."+name+")")
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, stray, "numeric copies of engine facts; use the engine package's constants")
}
