package admission_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// Observe is told how long each request waited and how it left the wait.
func TestMiddlewareObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueSize: 1, QueueTimeout: 5 * time.Second})
		type seen struct {
			path   string
			queued time.Time
			wait   time.Duration
			err    error
		}
		var got []seen
		release := make(chan struct{})
		m := &admission.Middleware{Controller: c, Observe: func(r *http.Request, queued time.Time, wait time.Duration, err error) {
			got = append(got, seen{r.URL.Path, queued, wait, err})
		}}
		h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/first" {
				<-release
			}
		}))
		start := time.Now()
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/first", nil))
		synctest.Wait()
		done := make(chan struct{})
		go func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/second", nil))
			close(done)
		}()
		synctest.Wait()
		time.Sleep(2 * time.Second)
		close(release)
		<-done
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/third", nil)) // admitted at once
		if len(got) != 3 {
			t.Fatalf("got %d observations, want 3", len(got))
		}
		if got[0].wait != 0 || got[0].err != nil || !got[0].queued.Equal(start) {
			t.Errorf("first: got wait %v, err %v; want 0, nil", got[0].wait, got[0].err)
		}
		if got[1].path != "/second" || got[1].wait != 2*time.Second || got[1].err != nil {
			t.Errorf("second: got %s wait %v, err %v; want /second 2s, nil", got[1].path, got[1].wait, got[1].err)
		}

		// A shed request is observed with its reason.
		got = nil
		release = make(chan struct{})
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/first", nil))
		synctest.Wait()
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/queued", nil))
		synctest.Wait()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/shed", nil)) // the queue is full
		close(release)
		synctest.Wait()
		if len(got) != 3 || got[1].path != "/shed" {
			t.Fatalf("got %+v, want /first, /shed, /queued", got)
		}
		if reason, ok := admission.ShedReason(got[1].err); !ok || reason != admission.ReasonQueueFull {
			t.Errorf("got err %v, want a queue-full shed", got[1].err)
		}
	})
}
