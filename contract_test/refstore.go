package contract

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// referenceStore returns the simplest store that can be: one lock, one map,
// each decision the algorithm's own step (algo.Decide,
// Reserve, Refund) on a copy of the state it keeps, state, leases' marks
// and request IDs kept forever.
// The model checker runs every sequence on one beside the store under test
// and requires the same Results; a store that drops state once it stops
// counting must decide exactly as this one, which never drops it. It has
// every optional capability of package store.
func referenceStore() store.Store {
	return &refStore{states: map[refKey]algo.State{}, once: map[refOnce]refRecord{}, marks: map[refKey]algo.State{}}
}

type refStore struct {
	mu     sync.Mutex
	states map[refKey]algo.State
	once   map[refOnce]refRecord
	marks  map[refKey]algo.State // what the latest lease on each state left (store.Store.Lease)
}

type refKey struct {
	kind  *algorithms.Kind
	scope algo.Scope
	key   string
}

// refOnce names what one request ID was applied to on one state.
type refOnce struct {
	state refKey
	op    string // "decide" (a decision or a booking), "set", "refund", "reset"
	id    string
}

type refRecord struct {
	results []algorithms.Result
	delay   time.Duration
}

func keyOf(key string, alg algorithms.Algorithm) refKey {
	return refKey{alg.Kind(), algo.ScopeOf(alg), key}
}

// requestID returns ctx's request ID, whether the request applies it (it
// has one and writes), and the error for an invalid one.
func refRequestID(ctx context.Context, writes bool) (string, bool, error) {
	id, ok := requestid.From(ctx)
	if !ok {
		return "", false, nil
	}
	if err := storecheck.RequestID(ctx); err != nil {
		return "", false, err
	}
	return id, writes, nil
}

// Capabilities reports that the reference store decides at the now it is
// given and applies request IDs once.
func (s *refStore) Capabilities() store.Capabilities {
	return store.Capabilities{RequestIDs: true}
}

func (s *refStore) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	now = storecheck.Now(now)
	key := sk.String()
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckDecision(alg, now, cost); err != nil {
		return algorithms.Result{}, err
	}
	id, once, err := refRequestID(ctx, cost > 0)
	if err != nil {
		return algorithms.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(key, alg)
	rec := refOnce{k, "decide", id}
	if once {
		if r, ok := s.once[rec]; ok {
			return r.results[0], nil
		}
	}
	state, res := algo.Decide(alg, s.state(k), now, cost)
	s.states[k] = state
	if once && res.Allowed {
		s.once[rec] = refRecord{results: []algorithms.Result{res}}
	}
	return res, nil
}

// state returns a copy of the state at k, which a step may change in
// place: the states the store keeps are never changed, but replaced, so
// that a snapshot shares them (see snapshot).
func (s *refStore) state(k refKey) algo.State {
	st := s.states[k]
	if st == nil {
		return nil
	}
	return deepCopy(reflect.ValueOf(st)).Interface()
}

// deepCopy returns a copy of v that shares no memory with it: v is a
// state of package algorithms, of pointers, structs of exported fields,
// slices and integers.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			c.Field(i).Set(deepCopy(v.Field(i)))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Int64, reflect.Int, reflect.Bool, reflect.Uint64:
		return v
	}
	panic(fmt.Sprintf("contract: the reference store cannot copy a state holding a %v", v.Type()))
}

// snapshot returns a store that holds what s holds, and changes
// independently of it.
func (s *refStore) snapshot() *refStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &refStore{states: maps.Clone(s.states), once: maps.Clone(s.once), marks: maps.Clone(s.marks)}
}

func (s *refStore) Reserve(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now)
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Reserve(alg, now, cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	return s.book(ctx, sk, refBooking{alg: alg, now: now, cost: cost, maxWait: maxWait})
}

// refBooking is what Reserve and Lease book: cost units under alg at now,
// waiting at most maxWait; a lease's admission also marks the key.
type refBooking struct {
	alg     algorithms.Algorithm
	now     time.Time
	cost    int64
	maxWait time.Duration
	lease   bool
}

// book books checked input: with algo.Reserve for the algorithms that book
// and algo.Decide otherwise, and for a lease, an admission's state copied
// as the key's mark.
func (s *refStore) book(ctx context.Context, sk store.Key, b refBooking) (algorithms.Result, time.Duration, error) {
	alg, now, cost, maxWait := b.alg, b.now, b.cost, b.maxWait
	id, once, err := refRequestID(ctx, true)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(sk.String(), alg)
	rec := refOnce{k, "decide", id}
	if once {
		if r, ok := s.once[rec]; ok {
			return r.results[0], r.delay, nil
		}
	}
	var (
		state algo.State
		res   algorithms.Result
		delay time.Duration
	)
	if algo.Reserves(alg) {
		state, res, delay = algo.Reserve(alg, s.state(k), now, cost, maxWait)
	} else {
		state, res = algo.Decide(alg, s.state(k), now, cost)
	}
	s.states[k] = state
	if b.lease && res.Allowed {
		s.marks[k] = algo.Clone(alg, state)
	}
	if once && res.Allowed {
		s.once[rec] = refRecord{results: []algorithms.Result{res}, delay: delay}
	}
	return res, delay, nil
}

func (s *refStore) DecideSet(
	ctx context.Context,
	sk store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	now = storecheck.Now(now)
	key := sk.String()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storecheck.Set(algs, now, cost); err != nil {
		return nil, err
	}
	id, once, err := refRequestID(ctx, cost > 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := refOnce{keyOf(key, algs[0]), "set", id}
	if once {
		if r, ok := s.once[rec]; ok {
			return append([]algorithms.Result(nil), r.results...), nil
		}
	}
	// Every limit inspected as the request; all charged if all admit,
	// else only the denials decided (store.Store.DecideSet).
	results := make([]algorithms.Result, len(algs))
	all := true
	for i, alg := range algs {
		k := keyOf(key, alg)
		var st algo.State
		st, results[i] = algo.Decide(alg, s.state(k), now, min(cost, -cost))
		s.states[k] = st // an inspection changes nothing but a converted rate
		all = all && results[i].Allowed
	}
	if cost <= 0 {
		return results, nil
	}
	for i, alg := range algs {
		if !all && results[i].Allowed {
			continue
		}
		k := keyOf(key, alg)
		s.states[k], results[i] = algo.Decide(alg, s.state(k), now, cost)
	}
	if once && all {
		for _, alg := range algs {
			s.once[refOnce{keyOf(key, alg), "set", id}] = refRecord{results: append([]algorithms.Result(nil), results...)}
		}
	}
	return results, nil
}

func (s *refStore) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	now = storecheck.Now(now)
	key := sk.String()
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckRefund(alg, now, at, n); err != nil {
		return algorithms.Result{}, err
	}
	id, once, err := refRequestID(ctx, true)
	if err != nil {
		return algorithms.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(key, alg)
	rec, decided, inSet := refOnce{k, "refund", id}, refOnce{k, "decide", id}, refOnce{k, "set", id}
	if once {
		_, d := s.once[decided]
		_, i := s.once[inSet]
		if r, ok := s.once[rec]; ok && !d && !i {
			return r.results[0], nil
		}
	}
	state, changed := s.state(k), false
	if state != nil {
		state, changed = algo.Refund(alg, state, now, at, n)
	}
	// Reported as an inspection, which writes nothing, not even a rate it
	// would convert (store.Store.Refund).
	_, res := algo.Decide(alg, state, now, 0)
	if changed {
		s.states[k] = state
		if once {
			s.once[rec] = refRecord{results: []algorithms.Result{res}}
			delete(s.once, decided)
			delete(s.once, inSet)
		}
	}
	return res, nil
}

func (s *refStore) Reset(ctx context.Context, sk store.Key, alg algorithms.Algorithm) error {
	key := sk.String()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := algo.CheckKind(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	id, once, err := refRequestID(ctx, true)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(key, alg)
	rec := refOnce{k, "reset", id}
	if once {
		if _, ok := s.once[rec]; ok {
			return nil
		}
		s.once[rec] = refRecord{}
	}
	if m, ok := s.marks[k]; ok {
		s.states[k] = algo.Clone(alg, m)
	} else {
		delete(s.states, k)
	}
	return nil
}

// Lease books as Reserve does, or decides as Decide does for the fixed
// window, and keeps a copy of what an admission leaves as the key's mark,
// forever (store.Store.Lease).
func (s *refStore) Lease(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now)
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Lease(alg, now, cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	return s.book(ctx, sk, refBooking{alg: alg, now: now, cost: cost, maxWait: maxWait, lease: true})
}
