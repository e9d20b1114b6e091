//go:build !race

package ratewise_test

const raceEnabled = false
