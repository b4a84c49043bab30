package promadmission_test

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/admission/promadmission"
)

// A Go service exports its admission controller in its own registry.
func Example() {
	c, err := admission.New(admission.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(promadmission.New(c, promadmission.Options{Namespace: "myapp"}))

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello\n"))
	})))
	_ = mux // serve it with server.Server
}
