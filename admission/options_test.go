package admission_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

func TestOptionsValidate(t *testing.T) {
	if err := (admission.Options{}).Validate(); err != nil {
		t.Fatalf("zero Options: %v, want valid (the defaults)", err)
	}
	bad := admission.Options{
		MaxSaturation:      1.5,
		SmoothingFactor:    math.NaN(),
		MinShare:           1,
		MaxQueuedPerTenant: -1,
		MaxTrackedTenants:  -1,
		CoDelTarget:        -1,
		CoDelInterval:      -1,
		SampleWindow:       -1, // valid: no background loop
	}
	fields := []string{"MaxSaturation", "SmoothingFactor", "MinShare", "MaxQueuedPerTenant",
		"MaxTrackedTenants", "CoDelTarget", "CoDelInterval"}
	err := bad.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(fields) {
		t.Fatalf("got %v, want one error for each of the %d wrong fields", err, len(fields))
	}
	for i, e := range joined.Unwrap() {
		if want := "admission: " + fields[i] + " "; !strings.HasPrefix(e.Error(), want) {
			t.Errorf("error %d: got %q, want it to begin %q", i, e, want)
		}
	}
	// New refuses what Validate refuses, with the same errors.
	if _, nerr := admission.New(bad); nerr == nil || nerr.Error() != err.Error() {
		t.Errorf("New: got %v, want %v", nerr, err)
	}
}
