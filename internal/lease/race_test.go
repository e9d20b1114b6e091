//go:build race

package lease

// raceEnabled: under the race detector the fleet simulations run ten times
// slower, so seeds runs fewer of their seeds (see seeds).
const raceEnabled = true
