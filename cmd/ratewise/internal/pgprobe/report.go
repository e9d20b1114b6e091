package pgprobe

import "github.com/ratewise/ratewise/internal/probe"

// Report is what Run found: its findings in the order it checked. A
// Finding's Check is one of "server", "schema" or "permissions".
type (
	Report  = probe.Report
	Finding = probe.Finding
	Status  = probe.Status
)

// How a check came out.
const (
	// StatusOK: the store works there as documented.
	StatusOK = probe.StatusOK
	// StatusWarning: the store works, with a cost or a risk to know of.
	StatusWarning = probe.StatusWarning
	// StatusFailure: decisions will fail there until the Finding's Change
	// is made.
	StatusFailure = probe.StatusFailure
)
