package hashslot

import "testing"

// The slots are CLUSTER KEYSLOT's answers from redis-server 7 in cluster
// mode, tag rules included.
func TestOfMatchesRedis(t *testing.T) {
	cases := []struct {
		name, key string
		slot      int
	}{
		{"CRC16 check value (0x31C3)", "123456789", 12739},
		{"plain key", "foo", 12182},
		{"another plain key", "bar", 5061},
		{"empty key", "", 0},
		{"tag alone", "user1000", 3443},
		{"tag shared with its bare key", "{user1000}.following", 3443},
		{"empty first tag: the whole key", "foo{}{bar}", 8363},
		{"tag up to the first closing brace", "foo{{bar}}zap", 4015},
		{"same slot as that tag's text", "{bar", 4015},
		{"only the first tag counts", "foo{bar}{zap}", 5061},
		{"empty braces alone", "{}", 15257},
		{"unclosed brace: the whole key", "a{b", 13340},
		{"a probe key", "ratewise:probe:a:{x}", 16287},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, want := Of(c.key), c.slot; got != want {
				t.Fatalf("Of(%q): got %d, want %d", c.key, got, want)
			}
		})
	}
}
