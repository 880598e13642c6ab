package main

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds the series of the /metrics endpoint. The names are the interface contract
// (README.md); do not rename them.
type metrics struct {
	processed  prometheus.Counter
	rate       prometheus.Gauge
	inflight   prometheus.Gauge
	rebalances prometheus.Counter
	rebalanceS prometheus.Histogram
	assigned   prometheus.Gauge

	processedN atomic.Int64 // processed, read once a second for consume_rate
	inflightN  atomic.Int64
	ready      atomic.Bool // /healthz: a member with an assignment, not draining
	registry   *prometheus.Registry
}

func newMetrics() *metrics {
	m := &metrics{
		processed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "records_processed_total",
			Help: "Records whose simulated downstream write finished (and, with -output-topic, were written there).",
		}),
		rate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "consume_rate",
			Help: "Records processed per second over the last second.",
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inflight",
			Help: "Records polled and being processed, not yet committed.",
		}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rebalances_total",
			Help: "Rebalances this member went through after its first assignment (one per revoke/lost -> assigned episode).",
		}),
		rebalanceS: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rebalance_duration_seconds",
			Help:    "Rebalance duration: first revoke or lost callback -> assigned callback done.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 15), // 10 ms .. ~164 s
		}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assigned_partitions",
			Help: "Partitions currently assigned to this member.",
		}),
		registry: prometheus.NewRegistry(),
	}
	m.registry.MustRegister(m.processed, m.rate, m.inflight, m.rebalances, m.rebalanceS, m.assigned)
	return m
}

func (m *metrics) addProcessed(n int) {
	m.processed.Add(float64(n))
	m.processedN.Add(int64(n))
}

func (m *metrics) setInflight(n int) {
	m.inflight.Set(float64(n))
	m.inflightN.Store(int64(n))
}

// updateRate sets consume_rate once a second from the processed count until done is closed.
func (m *metrics) updateRate(done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last, lastAt := m.processedN.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			n := m.processedN.Load()
			m.rate.Set(float64(n-last) / now.Sub(lastAt).Seconds())
			last, lastAt = n, now
		}
	}
}

// serve listens on addr (":0" picks a free port) and returns the bound address.
func (m *metrics) serve(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if m.ready.Load() {
			w.Write([]byte("ok\n"))
			return
		}
		http.Error(w, "not a group member with an assignment (starting or draining)", http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return ln.Addr(), nil
}
