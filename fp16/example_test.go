package fp16_test

import (
	"fmt"

	"github.com/anemone-go/anemone/fp16"
)

func Example() {
	h := fp16.FromFloat64(0.1)
	fmt.Printf("%#04x %v\n", uint16(h), h.Float64())
	fmt.Println(fp16.Round64(65504), fp16.FromFloat64(65520).IsInf())
	fmt.Println(fp16.Round32(1+fp16.UnitRoundoff) == 1) // a tie rounds to even
	// Output:
	// 0x2e66 0.0999755859375
	// 65504 true
	// true
}
