package benchclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationFormat(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{1450 * time.Microsecond, "1.45 ms"},
		{23449 * time.Microsecond, "23.4 ms"},
		{125_600 * time.Microsecond, "126 ms"},
		{255 * time.Microsecond, "0.255 ms"},
		{18 * time.Microsecond, "0.0180 ms"},
		{2389 * time.Millisecond, "2389 ms"},
		{69_400 * time.Millisecond, "69.4 s"},
	} {
		got := Duration(c.d)
		require.Equal(t, c.want, got, "%v", c.d)
		back, err := ParseDuration(got)
		require.NoError(t, err)
		// Three digits: the round trip is within half a unit of the third.
		require.InEpsilon(t, c.d.Seconds(), back.Seconds(), 5e-3, got)
	}
	for _, bad := range []string{"", "3", "3 µs", "-1 ms", "x ms", "0 ms"} {
		_, err := ParseDuration(bad)
		require.Error(t, err, bad)
	}
}

func TestRatioFormat(t *testing.T) {
	for r, want := range map[float64]string{0.394: "0.39×", 0.0203: "0.020×", 4.27: "4.3×", 12.4: "12×", 123: "123×", 1: "1.0×"} {
		require.Equal(t, want, Ratio(r), "%g", r)
	}
}

func TestCheck(t *testing.T) {
	w := Row{Problem: "p", Dispatches: 5, Engine: 10 * time.Millisecond, Ratio: 0.4}
	require.NoError(t, w.Check(5, 10*time.Millisecond, 0.4))
	require.NoError(t, w.Check(5, 10190*time.Microsecond, 0.79))
	require.NoError(t, w.Check(5, 9810*time.Microsecond, 0.21))
	for _, c := range []struct {
		d     int
		e     time.Duration
		ratio float64
		msg   string
	}{
		{6, 10 * time.Millisecond, 0.4, "6 dispatches"},
		{5, 10210 * time.Microsecond, 0.4, "modeled engine 10.2 ms"},
		{5, 10 * time.Millisecond, 0.81, "0.81×"},
		{5, 10 * time.Millisecond, 0.19, "0.19×"},
		{5, 10 * time.Millisecond, nan(), "NaN"},
	} {
		err := w.Check(c.d, c.e, c.ratio)
		require.Error(t, err)
		require.Contains(t, err.Error(), c.msg)
	}
}

func nan() float64 { var z float64; return z / z }

func TestParseRow(t *testing.T) {
	line := "| CG, Poisson 128² | 5 | 1.45 ms | 1.07 ms | **2.51 ms** | 39.7 ms | gonum-DST fast solver 5.34 ms | **0.47×** |"
	cells := strings.Split(line, "|")
	r, err := parseRow("CG, Poisson 128²", cells[2:len(cells)-1])
	require.NoError(t, err)
	require.Equal(t, Row{Problem: "CG, Poisson 128²", Dispatches: 5, Engine: 1450 * time.Microsecond, Ratio: 0.47}, r)
	for _, bad := range []string{
		"| p | x | 1.45 ms | 1 ms | 2 ms | 3 ms | cpu 4 ms | 0.5× |",
		"| p | 5 | fast | 1 ms | 2 ms | 3 ms | cpu 4 ms | 0.5× |",
		"| p | 5 | 1.45 ms | 1 ms | 2 ms | 3 ms | cpu 4 ms | 0.5 |",
		"| p | 5 | 1.45 ms | 1 ms | 2 ms | 3 ms | 0.5× |",
	} {
		cells := strings.Split(bad, "|")
		_, err := parseRow("p", cells[2:len(cells)-1])
		require.Error(t, err, bad)
	}
}

// TestDocRowsParse reads every row of the end-to-end table: each must be
// one a benchmark can check.
func TestDocRowsParse(t *testing.T) {
	path, err := docPath()
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n## Speed, end to end\n")
	require.True(t, ok, "%s has no end-to-end section", filepath.Base(path))
	table, _, _ = strings.Cut(table, "\n## ")
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") || strings.TrimSpace(cells[1]) == "problem" {
			continue
		}
		problem := strings.TrimSpace(cells[1])
		r, err := Find(problem)
		require.NoError(t, err, line)
		require.Equal(t, problem, r.Problem)
		rows++
	}
	require.Positive(t, rows)
}

// TestReadmeRatiosInTable: every ratio the README's speed row quotes is
// the ratio of a row of the end-to-end table, so the headline cannot
// drift from the checked figures.
func TestReadmeRatiosInTable(t *testing.T) {
	path, err := docPath()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), "README.md"))
	require.NoError(t, err)
	results, err := os.ReadFile(path)
	require.NoError(t, err)
	var row string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| Speed, end to end") {
			row = line
		}
	}
	require.NotEmpty(t, row, "README.md has no speed row")
	ratios := map[string]bool{}
	for _, line := range strings.Split(string(results), "\n") {
		if cells := strings.Split(line, "|"); strings.HasPrefix(line, "| ") && len(cells) == 10 {
			ratios[strings.Trim(strings.TrimSpace(cells[8]), "*")] = true
		}
	}
	quoted := 0
	for _, f := range strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ", ";", " ", ":", " ").Replace(row)) {
		if r, ok := strings.CutSuffix(f, "×"); ok && r != "" && strings.Trim(r, "0123456789.") == "" {
			require.True(t, ratios[f], "README's speed row quotes %s, which no row of %s's end-to-end table has", f, Doc)
			quoted++
		}
	}
	require.Positive(t, quoted)
}
