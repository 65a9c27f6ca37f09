//go:build race

package token_test

// raceEnabled reports whether the test binary was built with -race, under
// which escape analysis keeps fewer buffers on the stack.
const raceEnabled = true
