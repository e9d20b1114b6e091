package contract_test

import (
	"testing"

	contract "github.com/ratewise/ratewise/contract_test"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// TestContract runs the conformance suite against every store in the repo.
// A new store is one more line here.
func TestContract(t *testing.T) {
	targets := []struct {
		name string
		new  contract.Factory
	}{
		{"storememory", func(*testing.T) store.Store { return storememory.New() }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) { contract.Run(t, target.new) })
	}
}
