package scripts

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// minRedisVersion is the oldest Redis the scripts run on, as documented in
// storeredis's package doc and docs/redis.md.
const minRedisVersion = "5.0"

// commandSince is the Redis version that introduced each command, or the
// form of it a script uses, from the Redis command reference.
var commandSince = map[string]string{
	"DEL":             "1.0",
	"EXISTS":          "1.0",
	"GET":             "1.0",
	"GETRANGE":        "2.4", // the name; SUBSTR before
	"SETRANGE":        "2.2",
	"STRLEN":          "2.2",
	"SET":             "2.6.12", // with PX
	"TIME":            "2.6",
	"PTTL":            "2.6",
	"PEXPIRE":         "2.6",
	"UNLINK":          "4.0",
	"ZADD":            "2.4", // several score-member pairs
	"ZCARD":           "1.2",
	"ZCOUNT":          "2.0",
	"ZRANGE":          "1.2", // by rank, WITHSCORES
	"ZREM":            "1.2",
	"ZREMRANGEBYRANK": "2.0",
}

// TestScriptsRunOnTheMinimumRedis checks every command the scripts call
// against the version that introduced it: a script that starts using a newer
// command (ZMSCORE, say, from 6.2) fails here until the documented minimum
// moves. The minimum itself is 5.0 because scripts write after reading TIME,
// which needs script effects replication, the default from 5.0 on.
func TestScriptsRunOnTheMinimumRedis(t *testing.T) {
	call := regexp.MustCompile(`redis\.call\('([A-Za-z]+)'`)
	texts := map[string]string{}
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		texts[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for name, text := range texts {
		for _, m := range call.FindAllStringSubmatch(text, -1) {
			seen++
			cmd := strings.ToUpper(m[1])
			since, ok := commandSince[cmd]
			if !ok {
				t.Errorf("%s calls %s, which is not in the table of commands and their versions", name, cmd)
				continue
			}
			if newer(since, minRedisVersion) {
				t.Errorf(
					"%s calls %s, which needs Redis %s, newer than the documented minimum %s",
					name,
					cmd,
					since,
					minRedisVersion,
				)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d redis.call sites; the pattern no longer matches the scripts", seen)
	}
}

// newer reports whether version a is newer than b ("2.6.12" > "2.6").
func newer(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if len(x) != len(y) {
			return len(x) > len(y)
		}
		if x != y {
			return x > y
		}
	}
	return false
}
