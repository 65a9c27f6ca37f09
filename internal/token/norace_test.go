//go:build !race

package token_test

const raceEnabled = false
