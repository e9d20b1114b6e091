package algorithms

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// RecordIDs generates the identities of sliding-log records for stores that
// need one per record, such as a Redis sorted set, where two records with the
// same member would collapse into one.
//
// IDs are ULIDs: a millisecond timestamp and 80 random bits. Within one
// millisecond, IDs from one RecordIDs increase monotonically (the random part
// is incremented), so they are unique even at any rate; IDs from different
// processes collide only if their 80 random bits do. A RecordIDs is safe for
// concurrent use; its zero value is not usable, call NewRecordIDs.
type RecordIDs struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// NewRecordIDs returns a generator seeded from crypto/rand.
func NewRecordIDs() *RecordIDs {
	return &RecordIDs{entropy: ulid.Monotonic(rand.Reader, 0)}
}

// Next returns a new ID stamped with t's millisecond.
func (g *RecordIDs) Next(t time.Time) (ulid.ULID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ulid.New(ulid.Timestamp(t), g.entropy)
}
