package demo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// ?downstream=1 requests hold one of DownstreamCap slots: one more waits
// until a slot frees, and other requests never wait for them.
func TestLibHandlerDownstreamCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := LibHandler(&App{Work: NewWork(1)}, nil)
		finished := make(chan int, DownstreamCap+1)
		for range DownstreamCap + 1 {
			go func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/?cpu=0&sleep=1000&downstream=1", nil))
				finished <- rec.Code
			}()
		}
		synctest.Wait()
		free := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(free, httptest.NewRequest("GET", "/?cpu=0&sleep=1000", nil))
		if free.Code != http.StatusOK || time.Since(start) != time.Second {
			t.Errorf("a request without downstream: got %d after %v, want 200 after 1s", free.Code, time.Since(start))
		}
		synctest.Wait()
		if got := len(finished); got != DownstreamCap {
			t.Errorf("after 1s: got %d downstream requests done, want %d", got, DownstreamCap)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := len(finished); got != DownstreamCap+1 {
			t.Errorf("after 2s: got %d downstream requests done, want %d", got, DownstreamCap+1)
		}
	})
}

func TestLibHandler(t *testing.T) {
	app := &App{Work: NewWork(1), Name: "test"}
	h := LibHandler(app, nil)
	for _, path := range []string{"/?cpu=0", ReadyPath} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: got %d, want 200", path, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", StatsPath, nil))
	var s Stats
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.Rendered != 1 {
		t.Errorf("stats: got %+v, %v, want one render", s, err)
	}
}

func TestLibHandlerWithAdmissionShedsOverTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl, err := admission.New(admission.Options{Limit: limit.NewFixed(1), QueueSize: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer ctrl.Close()
		h := LibHandler(&App{Work: NewWork(1)}, ctrl.Wrap)

		held := httptest.NewRecorder()
		go h.ServeHTTP(held, httptest.NewRequest("GET", "/?cpu=0&sleep=1000", nil))
		synctest.Wait() // the first request holds the only slot, asleep

		shed := httptest.NewRecorder()
		h.ServeHTTP(shed, httptest.NewRequest("GET", "/?cpu=0", nil))
		if shed.Code != http.StatusServiceUnavailable || shed.Header().Get(admission.HeaderShed) == "" {
			t.Errorf("over the limit: got %d with Sluice-Shed %q, want 503 with a reason", shed.Code, shed.Header().Get(admission.HeaderShed))
		}
		// Stats and readiness are never queued.
		for _, path := range []string{StatsPath, ReadyPath} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("%s while saturated: got %d, want 200", path, rec.Code)
			}
		}
		time.Sleep(time.Second) // fake time: the held request's sleep ends
		synctest.Wait()
		if held.Code != http.StatusOK {
			t.Errorf("held request: got %d, want 200", held.Code)
		}
	})
}
