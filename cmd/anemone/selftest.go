package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/anemone-go/anemone/selftest"
	"github.com/anemone-go/anemone/shim"
)

// cmdSelftest runs the selftest package's probes on the chosen device and
// prints the report, writing it as JSON too with -json. On the simulator a
// probe that departs from the model fails the command; on hardware a
// departure is a finding, not a failure.
func cmdSelftest(args []string, w io.Writer) error {
	fs := newFlags("selftest")
	name := fs.String("device", "", deviceHelp)
	short := fs.Bool("short", false, "a quick run: fewer sweep points, no compile-budget count on the engine")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	dev, note, err := openSelftestDevice(*name)
	if err != nil {
		return err
	}
	defer dev.Close()
	rep := selftest.Run(dev, selftest.Options{Short: *short, Note: note})
	if err := rep.WriteText(w); err != nil {
		return err
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("selftest: encoding the report: %v", err)
		}
		if err := os.WriteFile(*jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("selftest: writing the report: %v", err)
		}
		fmt.Fprintf(w, "report written to %s\n", *jsonPath)
	}
	if !rep.Simulated {
		return nil // on hardware a difference is a finding, not a failure
	}
	if bad := rep.Departures(); len(bad) > 0 {
		return fmt.Errorf("selftest: the simulator departs from its own model in %s", strings.Join(bad, ", "))
	}
	return nil
}

// openSelftestDevice opens the named device as shim.Open does: with no
// name, $ANEMONE_DEVICE, and with neither the ANE when one is present and
// the simulator otherwise, which it then says.
func openSelftestDevice(name string) (shim.Device, string, error) {
	chosen := name != "" || os.Getenv(shim.EnvDevice) != ""
	dev, err := shim.Open(name)
	switch {
	case err != nil && chosen:
		return nil, "", fmt.Errorf("selftest: %w (run without -device to use the simulator where there is no ANE)", err)
	case err != nil:
		return nil, "", err
	case !chosen && !dev.Info().Hardware:
		return dev, fmt.Sprintf("No Neural Engine on this machine (%s/%s): every probe ran on the simulator.", runtime.GOOS, runtime.GOARCH), nil
	}
	return dev, "", nil
}
