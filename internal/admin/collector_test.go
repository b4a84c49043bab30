package admin_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/promtest"
	"github.com/sluicehq/sluice/server"
)

var (
	scrape = promtest.Scrape
	diff   = promtest.Diff
)

func TestConnCollector(t *testing.T) {
	values, types := scrape(t, admin.NewConnCollector("sluice", func() server.ConnStats {
		return server.ConnStats{Open: 7, Idle: 3, Parked: 5, ProbeOnly: 1, Refused: 2, Reclaimed: 4}
	}))
	diff(t, "value of", values, map[string]string{"sluice_connections_open": "7", "sluice_connections_idle": "3", "sluice_connections_parked": "5",
		"sluice_connections_probe_only": "1", "sluice_connections_refused_total": "2", "sluice_connections_reclaimed_total": "4"})
	diff(t, "type of", types, map[string]string{"sluice_connections_open": "gauge", "sluice_connections_idle": "gauge", "sluice_connections_parked": "gauge",
		"sluice_connections_probe_only": "gauge", "sluice_connections_refused_total": "counter", "sluice_connections_reclaimed_total": "counter"})
}
