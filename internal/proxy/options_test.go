package proxy_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

func TestOptionsValidate(t *testing.T) {
	c, err := admission.New(admission.Options{SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := (proxy.Options{Controller: c}).Validate(); err != nil {
		t.Errorf("Options with only a Controller: got %v, want valid (the defaults)", err)
	}
	// Every wrong field is reported at once, each by name.
	bad := proxy.Options{
		Fallbacks:             []proxy.Fallback{{PathPrefix: "x", Status: 99, Props: "cookie:p"}},
		MaxBufferedBytes:      -1,
		MaxUpgrades:           -1,
		Lookahead:             proxy.MaxLookahead + 1,
		MaxStreams:            -1,
		MaxIdleConnsPerWorker: -1,
		WorkerLimit:           proxy.WorkerLimit{MaxSaturation: math.NaN(), Window: -1},
		DialTimeout:           -time.Second,
		IdleConnTimeout:       -time.Second,
		SlowStart:             -time.Second,
	}
	fields := []string{"Controller", "Fallbacks[0].PathPrefix", "Fallbacks[0].Status", "Fallbacks[0].Props",
		"MaxBufferedBytes", "MaxUpgrades", "Lookahead", "MaxStreams", "MaxIdleConnsPerWorker", "WorkerLimit: limit: Worker MaxSaturation", "WorkerLimit: limit: Worker Window",
		"DialTimeout", "IdleConnTimeout", "SlowStart"}
	err = bad.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(fields) {
		t.Fatalf("got %v, want %d joined errors", err, len(fields))
	}
	for _, f := range fields {
		if !strings.Contains(err.Error(), "proxy: "+f) && !strings.Contains(err.Error(), "proxy: Options."+f) {
			t.Errorf("got %v, want an error naming %s", err, f)
		}
	}
	// New refuses what Validate refuses, with the same errors.
	if _, nerr := proxy.New(bad); nerr == nil || nerr.Error() != err.Error() {
		t.Errorf("New: got %v, want %v", nerr, err)
	}
}
