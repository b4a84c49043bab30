package app

import (
	"log/slog"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/quota"
	"github.com/sluicehq/sluice/quota/redisquota"
)

// quotaOptions builds the tenants' quota (tenants.quota and the routes'
// own, each named by config.QuotaName) over the store the file names;
// close closes that store. ok is false when the file sets no quota.
func quotaOptions(cfg *config.Config, log *slog.Logger) (o quota.Options, close func() error, ok bool, err error) {
	q := cfg.Tenants.Quota
	if q == nil {
		return quota.Options{}, nil, false, nil
	}
	o = quota.Options{
		Limit:      quota.Limit{Rate: q.Rate, Burst: q.Burst},
		Instances:  q.Instances,
		Interval:   q.Interval,
		Timeout:    q.Timeout,
		MaxTracked: cfg.Tenants.MaxTracked,
		Logger:     log,
	}
	for _, r := range cfg.Routes {
		if r.Quota != nil {
			if o.Limits == nil {
				o.Limits = make(map[string]quota.Limit)
			}
			o.Limits[config.QuotaName(&r)] = quota.Limit{Rate: r.Quota.Rate, Burst: r.Quota.Burst}
		}
	}
	for _, name := range q.Exempt {
		p, err := admission.ParsePriority(name)
		if err != nil {
			return o, nil, false, err
		}
		o.Exempt = append(o.Exempt, p)
	}
	if q.Store == config.QuotaStoreLocal {
		o.Store = quota.NewMemoryStore()
		return o, func() error { return nil }, true, nil
	}
	s, err := redisquota.New(redisquota.Options{URL: q.Store})
	if err != nil {
		return o, nil, false, err
	}
	// The Limiter logs the store's failure once; go-redis would log
	// every failed dial while Redis is gone.
	redisquota.SilenceClientLog()
	o.Store = s
	return o, s.Close, true, nil
}
