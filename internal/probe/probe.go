// Package probe holds what the stores' probes report, the same for each:
// the doctor's redisprobe and pgprobe name these types as
// their own.
package probe

import "strconv"

// Status is how one check of a probe came out.
type Status int

const (
	// StatusOK: the store works there as documented.
	StatusOK Status = iota
	// StatusWarning: the store works, with a cost or a risk to know of,
	// such as limits that a restart resets, or a schema it will migrate.
	StatusWarning
	// StatusFailure: decisions will fail there, or limits will not hold,
	// until the Finding's Change is made.
	StatusFailure
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusWarning:
		return "warning"
	case StatusFailure:
		return "failure"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Finding is the outcome of one check.
type Finding struct {
	// Check names what was checked, such as "server" (each probe's Run
	// lists its checks). Several findings may share one.
	Check  string
	Status Status
	// Found says what the probe saw, in one line, such as "Redis 7.0.15".
	Found string
	// Change says what to change, in one line; it is empty when nothing
	// needs to.
	Change string
}

func (f Finding) String() string {
	s := f.Status.String() + " " + f.Check + ": " + f.Found
	if f.Change != "" {
		s += "; change: " + f.Change
	}
	return s
}

// Report is what a probe found: its findings in the order it checked.
type Report struct {
	Findings []Finding
}

// Worst returns the most severe Status of the findings.
func (r Report) Worst() Status {
	worst := StatusOK
	for _, f := range r.Findings {
		worst = max(worst, f.Status)
	}
	return worst
}
