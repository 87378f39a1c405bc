package nn_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/nn/nntest"
)

// layerFuncs lists nn's layers: the exported functions, in the package's
// own files, whose first parameter is the *dataflow.Graph they add to and
// whose result is the dataflow.Value they add (Compile takes a graph too,
// but runs it).
func layerFuncs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		file, err := parser.ParseFile(fset, f, src, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || len(fn.Type.Params.List) == 0 {
				continue
			}
			star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			sel, ok := star.X.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Graph" || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if res, ok := fn.Type.Results.List[0].Type.(*ast.SelectorExpr); ok && res.Sel.Name == "Value" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// Every layer is in the device conformance suite (shimtest.CheckLayers),
// and passes it on the simulator: a new layer without a conformance case
// fails here.
func TestEveryLayerInConformanceSuite(t *testing.T) {
	layers := layerFuncs(t)
	require.GreaterOrEqual(t, len(layers), 15, "the parser found too few layers: %v", layers)
	covered := map[string]bool{}
	for _, r := range nntest.CheckLayers(open(t, "sim")) {
		require.True(t, r.Pass, "%s/%s: %s", r.Op, r.Case, r.Error)
		covered[r.Op] = true
	}
	for _, name := range layers {
		require.True(t, covered["nn."+name], "layer nn.%s has no case in shimtest.CheckLayers", name)
	}
}
