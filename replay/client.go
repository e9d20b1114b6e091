package replay

import "github.com/redis/go-redis/v9"

// Client returns the client the target runs on, for measurements that
// need to ask Redis itself, such as INFO commandstats.
func (r *Redis) Client() redis.UniversalClient { return r.client }
