// Package scripts holds the Redis store's Lua scripts and assembles them.
//
// A decision script is the prelude, the libraries the algorithm's step
// requires, its step file (<name>.lua, named after its algorithms.Kind) and
// a driver: decide.lua for one decision, decide_batch.lua for a batch of
// them, reserve.lua for a booking, lease.lua for a lease's booking, refund.lua for a refund, decide_set.lua
// for a set of kinds and decide_set_batch.lua for a batch of such sets. reset.lua and time.lua stand alone.
// Each
// file's header documents its KEYS, ARGV and reply. Every script is
// assembled once, on first use, and kept: a *redis.Script computes its SHA
// once, and its Run sends EVALSHA and falls back on EVAL.
package scripts

import (
	"embed"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/assemble"
	"github.com/ratewise/ratewise/store"
)

//go:embed *.lua
var files embed.FS

// Reset and Time are the scripts that stand alone: reset.lua and
// time.lua.
var (
	Reset = mustLoad("reset.lua")
	Time  = mustLoad("time.lua")
)

func mustLoad(file string) *redis.Script {
	b, err := files.ReadFile(file)
	if err != nil {
		panic(err) // embedded: only a build without the file gets here
	}
	return redis.NewScript(string(b))
}

// script is a decision script, or why it could not be assembled, and the
// version of its state's layout.
type script struct {
	run    *redis.Script
	err    error
	layout string
	// oneString: the kind keeps its state in one string, which may carry
	// writers' records (rec.lua); its step file says "-- state: one string".
	oneString bool
}

// decide are the decision scripts, by algorithm kind, assembled when the
// package is initialised: a kind whose files are missing is unsupported,
// with the reason.
var decide = func() map[*algorithms.Kind]script {
	m := map[*algorithms.Kind]script{}
	for _, k := range algorithms.Kinds() {
		src, err := scriptSource(k.String(), "decide.lua")
		if err != nil {
			m[k] = script{err: fmt.Errorf("%w: storeredis has no script for %s: %w", store.ErrUnsupported, k, err)}
			continue
		}
		m[k] = script{
			run:       redis.NewScript(src),
			layout:    layoutOf(src),
			oneString: strings.Contains(src, "\n-- state: one string\n"),
		}
	}
	return m
}()

// Layout returns the version of the layout of k's state, "" for the first:
// what the line "-- layout: <version>" of its step file, or a library it
// requires, says. A state's key names the version (storeredis's Key), so
// that ratewise versions that lay a kind's state out differently keep it
// under different keys and never read each other's.
func Layout(k *algorithms.Kind) string { return decide[k].layout }

// OneString reports whether k keeps its state in one string, whose
// decisions a batch can record in the state's own value (decide_batch.lua's
// writer, see rec.lua).
func OneString(k *algorithms.Kind) bool { return decide[k].oneString }

// layoutOf returns the version a script's "-- layout: " line names, or "".
func layoutOf(src string) string {
	for _, line := range strings.Split(src, "\n") {
		if v, ok := strings.CutPrefix(line, "-- layout: "); ok {
			v, _, _ = strings.Cut(strings.TrimSpace(v), " ") // what follows is a comment
			return v
		}
	}
	return ""
}

// Decision returns the decision script of k, a registered kind, or an error
// wrapping store.ErrUnsupported if its files are missing.
func Decision(k *algorithms.Kind) (*redis.Script, error) {
	sc := decide[k]
	return sc.run, sc.err
}

// batch, reserve, leases and refund are the scripts of the other one-kind drivers,
// by kind, assembled on first use.
var batch, reserve, leases, refund sync.Map // *algorithms.Kind → *redis.Script

// Batch returns k's script for a batch of decisions (decide_batch.lua).
func Batch(k *algorithms.Kind) (*redis.Script, error) { return driven(&batch, k, "decide_batch.lua") }

// Reserve returns k's booking script (reserve.lua).
func Reserve(k *algorithms.Kind) (*redis.Script, error) { return driven(&reserve, k, "reserve.lua") }

// Lease returns k's script for a lease's booking (lease.lua).
func Lease(k *algorithms.Kind) (*redis.Script, error) { return driven(&leases, k, "lease.lua") }

// Refund returns k's refund script (refund.lua).
func Refund(k *algorithms.Kind) (*redis.Script, error) { return driven(&refund, k, "refund.lua") }

// driven returns the script of kind with the driver given, from cache,
// assembling it on first use.
func driven(cache *sync.Map, kind *algorithms.Kind, driver string) (*redis.Script, error) {
	if sc, ok := cache.Load(kind); ok {
		return sc.(*redis.Script), nil
	}
	src, err := scriptSource(kind.String(), driver)
	if err != nil {
		return nil, fmt.Errorf("%w: storeredis cannot assemble %s for %s: %w", store.ErrUnsupported, driver, kind, err)
	}
	sc, _ := cache.LoadOrStore(kind, redis.NewScript(src))
	return sc.(*redis.Script), nil
}

// sets and setBatches are the set scripts, alone and batched, by the
// names of their kinds in order, joined by ",", assembled on first use.
var sets, setBatches sync.Map // string → *redis.Script

// Set returns the script that decides a set of limits of the kinds given
// (decide_set.lua), each kind once: its ARGV name a kind by its index in
// kinds, from 1.
func Set(kinds []*algorithms.Kind) (*redis.Script, error) {
	return setDriven(&sets, kinds, "decide_set.lua")
}

// SetBatch returns the script that decides a batch of decisions over sets
// of limits whose kinds are those given (decide_set_batch.lua), each kind
// once, named by its index in kinds as in Set.
func SetBatch(kinds []*algorithms.Kind) (*redis.Script, error) {
	return setDriven(&setBatches, kinds, "decide_set_batch.lua")
}

// setDriven returns the set script of kinds with the driver given, from
// cache, assembling it on first use.
func setDriven(cache *sync.Map, kinds []*algorithms.Kind, driver string) (*redis.Script, error) {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	signature := strings.Join(names, ",")
	if sc, ok := cache.Load(signature); ok {
		return sc.(*redis.Script), nil
	}
	src, err := setSource(names, driver)
	if err != nil {
		return nil, fmt.Errorf("%w: storeredis cannot assemble %s for %s: %w", store.ErrUnsupported, driver, signature, err)
	}
	sc, _ := cache.LoadOrStore(signature, redis.NewScript(src))
	return sc.(*redis.Script), nil
}

// scriptSource returns the source of a script for one algorithm: the prelude,
// the step file of the kind named and its libraries, the step's functions
// bound to the names the driver calls, and the driver.
func scriptSource(name, driver string) (string, error) {
	a := assemble.New(files)
	for _, file := range []string{"prelude.lua", name + ".lua"} {
		if err := a.Include(file); err != nil {
			return "", err
		}
	}
	a.WriteString(
		fmt.Sprintf("local read, step, write, refund = %[1]s_read, %[1]s_step, %[1]s_write, %[1]s_refund\n", name),
	)
	if err := a.Include(driver); err != nil {
		return "", err
	}
	return a.String(), nil
}

// setSource returns the source of a set script for the kinds named: the
// prelude, each kind's step file and libraries, the table kinds of their
// functions, in the order of names, and the set driver given.
func setSource(names []string, driver string) (string, error) {
	a := assemble.New(files)
	if err := a.Include("prelude.lua"); err != nil {
		return "", err
	}
	for _, name := range names {
		if err := a.Include(name + ".lua"); err != nil {
			return "", err
		}
	}
	a.WriteString("local kinds = {")
	for _, name := range names {
		a.WriteString(fmt.Sprintf("{%[1]s_read, %[1]s_step, %[1]s_write}, ", name))
	}
	a.WriteString("}\n")
	if err := a.Include(driver); err != nil {
		return "", err
	}
	return a.String(), nil
}
