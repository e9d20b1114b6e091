package pgprobe

import "strconv"

// Status is how one check of Run came out.
type Status int

const (
	// StatusOK: the store works there as documented.
	StatusOK Status = iota
	// StatusWarning: the store works, with something to know of, such as a
	// schema it will migrate on first use.
	StatusWarning
	// StatusFailure: the store's decisions will fail there until the
	// Finding's Change is made.
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

// Finding is the outcome of one check of Run.
type Finding struct {
	// Check names what was checked: "server", "schema" or "permissions".
	Check  string
	Status Status
	// Found says what the probe saw, in one line, such as "PostgreSQL
	// 16.4, as role app in database app".
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

// Report is what Run found: its findings in the order it checked.
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
