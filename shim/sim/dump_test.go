package sim

import "testing"

func TestDump(t *testing.T) {
	p := program(dotProgram(2), dotBody(2), []port{in("z", 1, 1)})
	t.Log("\n" + string(p.MIL))
}
