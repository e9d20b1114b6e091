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
		// Not a product: keeps state forever, so the algorithms are checked
		// without expiry covering for them.
		{"reference", func(*testing.T) store.Store { return newReferenceStore() }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) { contract.Run(t, target.new) })
	}
}
