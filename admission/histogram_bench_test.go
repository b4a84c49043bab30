package admission_test

import (
	"testing"

	"github.com/sluicehq/sluice/admission"
)

// The fast path given back with Done, which times the request and records
// it in the service-time histogram (Release records nothing): the cost of
// the histograms on the request path.
func BenchmarkAcquireDone(b *testing.B) { benchAcquire(b, admission.Permit.Done) }

func BenchmarkAcquireDoneParallel(b *testing.B) { benchAcquireParallel(b, admission.Permit.Done) }
