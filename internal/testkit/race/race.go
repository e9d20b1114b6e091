//go:build race

// Package race tells tests whether the race detector is on: under it code
// runs several times slower and allocates on its own, so tests that time,
// count allocations or run long simulations scale down or skip what it
// distorts, and say so.
package race

// Enabled reports whether the binary was built with -race.
const Enabled = true
