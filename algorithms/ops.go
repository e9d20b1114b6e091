package algorithms

import (
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// ops hands the operations stores and ratewise's tools need, but users do
// not, to internal/algo through internal/algobridge, so that this package
// exports only what users call. Each method is documented where it is
// implemented; internal/algo documents them for its callers.
type ops struct{}

func init() {
	var o algobridge.Ops[Algorithm, keyState, Result, *Kind, Params] = ops{}
	algobridge.Register(o)
}

func (ops) Decide(a Algorithm, state keyState, now time.Time, cost int64) (keyState, Result) {
	return a.decide(state, now, cost)
}

func (ops) Refund(a Algorithm, state keyState, now, at time.Time, n int64) (keyState, bool) {
	return a.refund(state, now, at, n)
}

func (ops) Reserves(a Algorithm) bool {
	_, ok := a.(reserver)
	return ok
}

// Reserve books as reserver's reserve; an algorithm that cannot book
// decides as decide does when maxWait is 0, and panics otherwise: the
// caller must ask Reserves first.
func (ops) Reserve(a Algorithm, state keyState, now time.Time, cost int64, maxWait time.Duration) (keyState, Result, time.Duration) {
	r, ok := a.(reserver)
	if !ok {
		if maxWait != 0 {
			panic("algorithms: " + a.String() + " cannot book ahead")
		}
		st, res := a.decide(state, now, cost)
		return st, res, 0
	}
	return r.reserve(state, now, cost, maxWait)
}

func (ops) Keeps(a Algorithm, state keyState, now time.Time, cost int64) bool {
	return a.(keeper).keeps(state, now, cost)
}

func (ops) Packs(a Algorithm) bool {
	_, ok := a.(packer)
	return ok
}

func (ops) Pack(a Algorithm, state keyState) (algobridge.Words, int64, bool) {
	return a.(packer).pack(state)
}

func (ops) Unpack(a Algorithm, w algobridge.Words, tag int64, into keyState) keyState {
	return a.(packer).unpack(w, tag, into)
}

func (ops) Inspect(a Algorithm, w algobridge.Words, tag int64, now time.Time, cost int64) (Result, bool) {
	return a.(packer).inspect(w, tag, now, cost)
}

func (ops) Scope(a Algorithm) algobridge.Scope { return a.scope() }
func (ops) Quota(a Algorithm) algobridge.Quota { return a.quota() }
func (ops) MaxCost(a Algorithm) int64          { return a.maxCost() }
func (ops) Params(a Algorithm) Params          { return a.params() }

func (ops) Charge(res Result, a Algorithm, cost int64) Result { return markCharged(res, a, cost) }

func (ops) WithQuotaLimit(a Algorithm, n int64) Algorithm { return withQuotaLimit(a, n) }

func (ops) BucketLatest(state keyState) (int64, bool) {
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

func (ops) Family(k *Kind) algobridge.Family { return k.family }
func (ops) TakesBurst(k *Kind) bool          { return k.burst }
func (ops) TakesSubWindows(k *Kind) bool     { return k.subWindows }
func (ops) MaxLimit(k *Kind) int64           { return k.maxLimitOrCount() }

func (ops) Nominal(k *Kind, limit int64, window time.Duration, subWindows int64) (Algorithm, error) {
	return k.nominal(limit, window, subWindows)
}

func (ops) CheckKind(a Algorithm) error { return checkKind(a) }

func (ops) CheckDecision(a Algorithm, now time.Time, cost int64) error {
	return checkDecision(a, now, cost)
}

func (ops) CheckRefund(a Algorithm, now, at time.Time, n int64) error {
	return checkRefund(a, now, at, n)
}

func (ops) CheckCost(a Algorithm, cost int64) error  { return checkCost(a, cost) }
func (ops) CheckTime(t time.Time) error              { return checkTime(t) }
func (ops) CheckMaxWait(maxWait time.Duration) error { return checkMaxWait(maxWait) }
