//go:build !race

package contract_test

const raceEnabled = false
