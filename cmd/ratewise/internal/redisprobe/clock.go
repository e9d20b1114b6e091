package redisprobe

import (
	"fmt"
	"strconv"
	"time"
)

// clockWarning is the offset between this process's clock and Redis's
// above which Run warns when decisions must follow the app's clocks.
const clockWarning = time.Second

// clock reports Redis's clock against this process's: measured inside a
// script when scripts read TIME, else from INFO's server_time_usec.
func (p *prober) clock(offset, unc time.Duration, timeErr error) {
	if timeErr == nil {
		// Decisions follow Redis's clock: however large, the offset moves
		// none of them.
		p.add(
			"clock",
			StatusOK,
			fmt.Sprintf(
				"Redis's clock is %v %s this host's (±%v); decisions follow Redis's clock, so it moves none (it would "+
					"with WithClientTime)",
				round(offset.Abs()),
				aheadOrBehind(offset),
				round(unc),
			),
			"",
		)
		return
	}
	for _, n := range p.nodes {
		usec, err := strconv.ParseInt(n.info["server_time_usec"], 10, 64)
		if err != nil {
			continue
		}
		offset, unc = time.UnixMicro(usec).Sub(n.sent.Add(n.rtt/2)), n.rtt/2
		found := fmt.Sprintf(
			"INFO's server_time_usec is %v %s this host's clock (±%v)",
			round(offset.Abs()),
			aheadOrBehind(offset),
			round(unc),
		)
		if offset.Abs() > clockWarning+unc {
			p.add(
				"clock",
				StatusWarning,
				found+": with WithClientTime the app servers' clocks decide, and this one is far from Redis's",
				"sync this host's clock (NTP), and every app server's",
			)
			return
		}
		p.add("clock", StatusOK, found, "")
		return
	}
	p.add("clock", StatusWarning, "Redis's clock is unknown: scripts cannot read TIME and INFO gives no server_time_usec",
		"with WithClientTime the app servers' clocks decide: keep them in sync (NTP)")
}

func aheadOrBehind(d time.Duration) string {
	if d < 0 {
		return "behind"
	}
	return "ahead of"
}

// round rounds d for reading: to the microsecond below a millisecond, else
// to a tenth of a millisecond.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
