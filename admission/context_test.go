package admission_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

func TestNewContext(t *testing.T) {
	if _, ok := admission.FromContext(context.Background()); ok {
		t.Fatal("FromContext found a Request in an empty context")
	}
	want := admission.Request{Priority: admission.Sheddable, Tenant: "acme", Cost: 2}
	got, ok := admission.FromContext(admission.NewContext(context.Background(), want))
	if !ok || got != want {
		t.Errorf("FromContext(NewContext(req)) = %+v, %v; want %+v, true", got, ok, want)
	}
}
