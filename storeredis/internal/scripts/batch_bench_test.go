package scripts

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
)

// BenchmarkBatchScript runs each kind's batch script (decide_batch.lua) on
// its own redis-server, one call of 12 decisions of cost 1 per iteration,
// 1,000 per minute per key, at Redis's TIME, from one client, as a store
// on go-redis's default client sends it (writer=records: each call names
// its writer, and each key it writes keeps the call's record; see rec.lua)
// and as one on a client that never resends (writer=none): on a new key
// for each decision (keys=new: every decision an admission that creates
// its key), on 5,000 keys in turn (keys=5000: admissions that rewrite a
// state), or on one key (keys=1: nearly every decision a denial). It
// reports redis-µs/decision, the EVALSHA usec in INFO commandstats over
// the decisions, which is Redis's own time for the script and the commands
// it calls, without the load a test driving many callers puts on the same
// machine, and redis-cpu-µs/decision (see reportRedisMicros). On a shared
// machine, compare figures of one run only.
//
//	go test ./storeredis/internal/scripts -run XXX -bench BatchScript
func BenchmarkBatchScript(b *testing.B) {
	c := benchServer(b)
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, 1000, time.Minute, 6)
		if err != nil {
			b.Fatal(err)
		}
		p := algo.ParamsOf(alg)
		params := []any{p.Limit, p.Window.Microseconds()}
		if algo.TakesBurst(k) {
			params = append(params, p.Burst)
		}
		if algo.TakesSubWindows(k) {
			params = append(params, p.SubWindows)
		}
		sc, err := Batch(k)
		if err != nil {
			b.Fatal(err)
		}
		for _, keys := range []struct {
			name string
			of   func(n int) string
		}{
			{"new", func(n int) string { return fmt.Sprint(n) }},
			{"5000", func(n int) string { return fmt.Sprint(n % 5000) }},
			{"1", func(int) string { return "hot" }},
		} {
			for _, records := range []bool{true, false} {
				name := "alg=" + k.String() + "/keys=" + keys.name + "/writer=none"
				if records {
					if !OneString(k) {
						continue // a store sends a writer only for these
					}
					name = "alg=" + k.String() + "/keys=" + keys.name + "/writer=records"
				}
				b.Run(name, func(b *testing.B) { benchBatch(b, c, sc, k, params, keys.of, records, 12) })
			}
		}
	}
}

// benchHorizon is how long records and once keys live, in µs: a store's on
// go-redis's default client (storeredis's resendHorizon).
const benchHorizon = 142_500_000

// benchWriter returns the writer of a store's call number seq, with no
// deadline (rec.lua).
func benchWriter(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return "benchid!" + string(b[1:]) + string(make([]byte, 7))
}

// benchBatch is one BenchmarkBatchScript case: k's batch script sc, with
// params, on the keys of(n) names, batch decisions per call.
func benchBatch(
	b *testing.B,
	c *redis.Client,
	sc *redis.Script,
	k *algorithms.Kind,
	params []any,
	of func(n int) string,
	records bool,
	batch int,
) {
	ctx := context.Background()
	if err := c.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu := redisCPU(b, c)
	n := 0
	rkeys := make([]string, batch)
	args := append([]any{"", benchHorizon, "", 1, len(params)}, params...)
	for range batch {
		args = append(args, 1, 1, 0) // the first set, cost 1, no once key
	}
	seq := uint64(0)
	for b.Loop() {
		for i := range rkeys {
			rkeys[i] = "ratewise:" + k.String() + ":bench:{user:" + of(n) + "}"
			n++
		}
		if records {
			seq++
			args[2] = benchWriter(seq)
		}
		if err := sc.Run(ctx, c, rkeys, args...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	reportRedisMicros(b, c, batch, cpu)
}

// BenchmarkBatchSize runs GCRA's batch script as BenchmarkBatchScript does,
// on 5,000 keys in turn (admissions that rewrite a state), with 1, 4, 12
// and 48 decisions per call, with and without writers' records, so that a
// call's own cost (what the script does before and after its decisions,
// and EVALSHA itself) and a decision's separate: a call of n decisions
// takes about call + n × decision. Beside them, the floor of any script:
// EVALSHA of "return 1", then with Redis's TIME, then with a GET and a SET
// of a 28-byte state, as one decision on a key of its own would make.
//
//	go test ./storeredis/internal/scripts -run XXX -bench BatchSize
func BenchmarkBatchSize(b *testing.B) {
	c := benchServer(b)
	k := algorithms.GCRA{}.Kind()
	alg, err := algo.Nominal(k, 1000, time.Minute, 6)
	if err != nil {
		b.Fatal(err)
	}
	p := algo.ParamsOf(alg)
	params := []any{p.Limit, p.Window.Microseconds(), p.Burst}
	sc, err := Batch(k)
	if err != nil {
		b.Fatal(err)
	}
	of := func(n int) string { return fmt.Sprint(n % 5000) }
	for _, batch := range []int{1, 4, 12, 48} {
		for _, records := range []bool{true, false} {
			name := fmt.Sprintf("floor=batch/decisions=%d/writer=none", batch)
			if records {
				name = fmt.Sprintf("floor=batch/decisions=%d/writer=records", batch)
			}
			b.Run(name, func(b *testing.B) { benchBatch(b, c, sc, k, params, of, records, batch) })
		}
	}
	ctx := context.Background()
	for _, f := range []struct{ name, src string }{
		{"return", "return 1"},
		{"time", "local t = redis.call('TIME') return 1"},
		{"get-set", "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) " +
			"redis.call('SET', KEYS[1], '0123456789012345678901234567', 'PX', 60000) return 1"},
	} {
		sc := redis.NewScript(f.src)
		b.Run("floor="+f.name, func(b *testing.B) {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			cpu := redisCPU(b, c)
			for b.Loop() {
				if err := sc.Run(ctx, c, []string{"floor"}).Err(); err != nil {
					b.Fatal(err)
				}
			}
			reportRedisMicros(b, c, 1, cpu)
		})
	}
}

// benchServer starts a redis-server of the benchmark's own, stopped when it
// ends, and returns a client of it.
func benchServer(b *testing.B) *redis.Client {
	redistest.Require(b)
	srv, err := redistest.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { c.Close() })
	return c
}

// reportRedisMicros reports redis-µs/decision, the usec of EVALSHA and
// EVAL in INFO commandstats since the last CONFIG RESETSTAT over the calls
// times perCall decisions, and redis-cpu-µs/decision, the CPU time Redis's
// process used since cpu (a redisCPU reading) over the same decisions. The
// first is wall time inside the scripts, which on a machine whose cores
// are busy with other work includes Redis's waits for one; the second
// counts no wait, and counts the calls' network reads and replies too.
func reportRedisMicros(b *testing.B, c *redis.Client, perCall int, cpu float64) {
	used := redisCPU(b, c) - cpu
	usec, calls := evalStats(b, c)
	b.ReportMetric(float64(usec)/float64(calls*int64(perCall)), "redis-µs/decision")
	b.ReportMetric(used*1e6/float64(calls*int64(perCall)), "redis-cpu-µs/decision")
}

// evalStats returns the usec and calls of EVALSHA and EVAL in INFO
// commandstats.
func evalStats(b *testing.B, c *redis.Client) (usec, calls int64) {
	// Not internal/testkit/redisinfo: it imports storeredis, which imports this
	// package.
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		var u, n int64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "cmdstat_evalsha:calls=%d,usec=%d", &n, &u); err == nil {
			usec, calls = usec+u, calls+n
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "cmdstat_eval:calls=%d,usec=%d", &n, &u); err == nil {
			usec, calls = usec+u, calls+n
		}
	}
	return usec, calls
}

// redisCPU returns the seconds of CPU, user and system, Redis's process has
// used (INFO cpu).
func redisCPU(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		var v float64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "used_cpu_user:%f", &v); err == nil {
			sum += v
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "used_cpu_sys:%f", &v); err == nil {
			sum += v
		}
	}
	return sum
}

// BenchmarkSetBatchScript runs the set batch script (decide_set_batch.lua)
// as BenchmarkBatchScript runs the batch scripts, 12 decisions of cost 1 a
// call at Redis's TIME from one client, for a set of one limit (GCRA 1,000
// per minute) and of two (and GCRA 20,000 per hour), a Stack's usual pair,
// beside that one limit decided by decide_batch.lua: on new subjects, on
// 5,000 in turn, and on one. Each iteration makes one call of each, in
// turn, each on keys of its own, and reads the EVALSHA usec of INFO
// commandstats after each call, so that a machine whose speed drifts (a
// shared one) moves the three alike. It reports each one's
// redis-µs/decision, and pair/one, the pair's over one limit's by
// decide_batch.lua:
//
//	go test ./storeredis/internal/scripts -run XXX -bench SetBatchScript -count 3
func BenchmarkSetBatchScript(b *testing.B) {
	c := benchServer(b)
	ctx := context.Background()
	const batch = 12
	pair := []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerMinute(1000), Burst: 1000},
		algorithms.GCRA{Rate: algorithms.PerHour(20_000), Burst: 20_000},
	}
	type variant struct {
		name string
		set  []algorithms.Algorithm
		sc   *redis.Script
		args []any
	}
	var variants []variant
	single, err := Batch(pair[0].Kind())
	if err != nil {
		b.Fatal(err)
	}
	p := algo.ParamsOf(pair[0])
	args := []any{"", 0, "", 1, 3, p.Limit, p.Window.Microseconds(), p.Burst} // no writer, one set of three
	for range batch {
		args = append(args, 1, 1, 0) // the first set, cost 1, no once key
	}
	variants = append(variants, variant{"one", pair[:1], single, args})
	for _, limits := range []int{1, 2} {
		set := pair[:limits]
		sc, err := SetBatch([]*algorithms.Kind{set[0].Kind()})
		if err != nil {
			b.Fatal(err)
		}
		args := []any{"", 0, 1, len(set)} // one set of limits
		for _, alg := range set {
			p := algo.ParamsOf(alg)
			args = append(args, 1, 3, p.Limit, p.Window.Microseconds(), p.Burst) // the first kind, three parameters
		}
		for range batch {
			args = append(args, 1, 1, 0) // the first set, cost 1, no once key
		}
		variants = append(variants, variant{fmt.Sprintf("set%d", limits), set, sc, args})
	}
	for _, keys := range []struct {
		name string
		of   func(n int) string
	}{
		{"new", func(n int) string { return fmt.Sprint(n) }},
		{"5000", func(n int) string { return fmt.Sprint(n % 5000) }},
		{"1", func(int) string { return "hot" }},
	} {
		b.Run("keys="+keys.name, func(b *testing.B) {
			if err := c.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			usec := make([]int64, len(variants)) // each variant's share of EVALSHA's usec
			last, _ := evalStats(b, c)
			n := 0
			rkeys := make([][]string, len(variants))
			for i, v := range variants {
				rkeys[i] = make([]string, batch*len(v.set))
			}
			for b.Loop() {
				for vi, v := range variants {
					limits := len(v.set)
					for i := range batch {
						subject := v.name + ":" + keys.of(n+i)
						for j, alg := range v.set {
							rkeys[vi][i*limits+j] = string(algo.ScopeOf(alg).Append([]byte("ratewise:gcra:v3:"))) + ":{" + subject + "}"
						}
					}
					if err := v.sc.Run(ctx, c, rkeys[vi], v.args...).Err(); err != nil {
						b.Fatal(err)
					}
					now, _ := evalStats(b, c)
					usec[vi] += now - last
					last = now
				}
				n += batch
			}
			for i, v := range variants {
				b.ReportMetric(float64(usec[i])/float64(n), v.name+"-redis-µs/decision")
			}
			b.ReportMetric(float64(usec[2])/float64(usec[0]), "pair/one")
		})
	}
}
