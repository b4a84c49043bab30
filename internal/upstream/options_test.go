package upstream_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/upstream"
)

func TestOptionsValidate(t *testing.T) {
	if err := (upstream.Options{Network: "tcp", Addr: "127.0.0.1:1"}).Validate(); err != nil {
		t.Errorf("Options with only the address: got %v, want valid (the defaults)", err)
	}
	// Every wrong field is reported at once, each by name.
	bad := upstream.Options{DialTimeout: -time.Second, MaxIdle: -1, IdleTimeout: -time.Second}
	fields := []string{"DialTimeout", "MaxIdle", "IdleTimeout"}
	err := bad.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(fields) {
		t.Fatalf("got %v, want %d joined errors", err, len(fields))
	}
	for i, e := range joined.Unwrap() {
		if want := "upstream: Options." + fields[i] + " "; !strings.HasPrefix(e.Error(), want) {
			t.Errorf("error %d: got %q, want it to begin %q", i, e, want)
		}
	}
	// New refuses what Validate refuses, with the same errors.
	if _, nerr := upstream.New(bad); nerr == nil || nerr.Error() != err.Error() {
		t.Errorf("New: got %v, want %v", nerr, err)
	}
}
