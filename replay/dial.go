package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/roundtrips"
	"github.com/ratewise/ratewise/store"
)

// DialRedisClient returns a target on client, a *redis.Client or a
// *redis.ClusterClient built by the caller with whatever address,
// credentials, database and TLS it needs, once it has answered a PING.
// name is the target's name in reports ("redis" or "cluster"); where says
// in errors what client connects to, and must hold no password. If
// DialRedisClient fails it closes client; otherwise the target's Close
// does.
func DialRedisClient(ctx context.Context, name string, client redis.UniversalClient, where string) (*Redis, error) {
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		client.Close()
		return nil, fmt.Errorf("replay: %s: want a *redis.Client or a *redis.ClusterClient, got %T", where, client)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("%w: %s: %v", store.ErrUnavailable, where, err)
	}
	r := &Redis{name: name, client: client}
	var id [4]byte
	rand.Read(id[:])
	r.prefix = "ratewise-compare:" + hex.EncodeToString(id[:]) + ":"
	r.rt = roundtrips.Count(client)
	return r, nil
}
