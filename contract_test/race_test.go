//go:build race

package contract_test

// raceEnabled: see TestContract's targets.
const raceEnabled = true
