package wire

import "testing"

// tenants.maxTracked reaches the Controller: the queue's memory of tenants
// is bounded by it.
func TestControllerOptionsMaxTracked(t *testing.T) {
	cfg := parse(t, "tenants:\n  maxTracked: 123\n")
	o, err := ControllerOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxTrackedTenants != 123 {
		t.Errorf("got MaxTrackedTenants %d, want 123", o.MaxTrackedTenants)
	}
}
