package algorithms

import (
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// init hands the operations stores and ratewise's tools need, but users do
// not, to internal/algo through internal/algobridge, as function values, so
// that this package exports only what users call. internal/algo documents
// each for its callers.
func init() {
	algobridge.Register(&algobridge.Ops[Algorithm, keyState, Result, *Kind, Params]{
		Decide: func(a Algorithm, st keyState, now time.Time, cost int64) (keyState, Result) {
			return a.decide(st, now, cost)
		},
		Refund: func(a Algorithm, st keyState, now, at time.Time, n int64) (keyState, bool) {
			return a.refund(st, now, at, n)
		},
		Reserves: func(a Algorithm) bool { _, ok := a.(reserver); return ok },
		Reserve:  reserve,
		Keeps:    func(a Algorithm, st keyState, now time.Time, cost int64) bool { return a.(keeper).keeps(st, now, cost) },
		Packs:    func(a Algorithm) bool { _, ok := a.(packer); return ok },
		Pack:     func(a Algorithm, st keyState) (algobridge.Words, int64, bool) { return a.(packer).pack(st) },
		Unpack: func(a Algorithm, w algobridge.Words, tag int64, into keyState) keyState {
			return a.(packer).unpack(w, tag, into)
		},
		Clone: func(a Algorithm, st keyState) keyState { return a.(packer).clone(st) },
		Inspect: func(a Algorithm, w algobridge.Words, tag int64, now time.Time, cost int64) (Result, bool) {
			return a.(packer).inspect(w, tag, now, cost)
		},
		Derive:         derive,
		DecidePacked:   decidePacked,
		Scope:          func(a Algorithm) algobridge.Scope { return a.scope() },
		Quota:          func(a Algorithm) algobridge.Quota { return a.quota() },
		MaxCost:        func(a Algorithm) int64 { return a.maxCost() },
		Params:         func(a Algorithm) Params { return a.params() },
		Charge:         markCharged,
		WithQuotaLimit: withQuotaLimit,
		BucketLatest:   bucketLatest,

		Family:          func(k *Kind) algobridge.Family { return k.family },
		TakesBurst:      func(k *Kind) bool { return k.burst },
		TakesSubWindows: func(k *Kind) bool { return k.subWindows },
		MaxLimit:        (*Kind).maxLimitOrCount,
		Nominal:         (*Kind).nominal,

		CheckKind:     checkKind,
		CheckDecision: checkDecision,
		CheckRefund:   checkRefund,
		CheckCost:     checkCost,
		CheckTime:     checkTime,
		CheckMaxWait:  checkMaxWait,
	})
}

// reserve books as reserver's reserve; an algorithm that cannot book
// decides as decide does when maxWait is 0, and panics otherwise: the
// caller must ask whether it can first.
func reserve(a Algorithm, st keyState, now time.Time, cost int64, maxWait time.Duration) (keyState, Result, time.Duration) {
	r, ok := a.(reserver)
	if !ok {
		if maxWait != 0 {
			panic("algorithms: " + a.String() + " cannot book ahead")
		}
		st, res := a.decide(st, now, cost)
		return st, res, 0
	}
	return r.reserve(st, now, cost, maxWait)
}

// bucketLatest returns the latest time, in microseconds, that a token
// bucket's or GCRA's state has decided at, and false for any other state.
func bucketLatest(state keyState) (int64, bool) {
	switch st := state.(type) {
	case *tokenBucketState:
		if st != nil {
			return st.Latest, true
		}
	case *gcraState:
		if st != nil {
			return st.Latest, true
		}
	}
	return 0, false
}
