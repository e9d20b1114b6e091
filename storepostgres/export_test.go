package storepostgres

import "context"

// Sweep runs one sweep now, as every 64th write starts one, and returns
// how many rows it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) { return s.sweepOnce(ctx) }
