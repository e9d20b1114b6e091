// Package redisprobe checks a deployment of storeredis, the Redis store:
// whether a Redis, often a managed one (ElastiCache, Memorystore, Upstash,
// Redis Cloud), and the client an app built for it let the store run as
// documented. Run sends only what managed offerings generally allow and
// reports each check as a Finding that says what it saw and what to change;
// it never changes the client and leaves no key behind.
//
// It is the checks `ratewise doctor` prints, a package of the tool's so
// that storeredis stays the store: it uses only storeredis's exported API.
// docs/redis.md, Managed Redis, lists them with what each wants changed.
package redisprobe
