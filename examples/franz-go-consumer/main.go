// Command franz-go-consumer is a consumer-group member on twmb/franz-go that simulates a
// downstream write per record, optionally writes each processed record to an output topic,
// commits after processing, exports the lab's /metrics names and drains on SIGTERM.
// See README.md for the flags, the metrics and the output-topic contract.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Output-topic headers: the input record's partition and offset as decimal text.
const (
	headerPartition = "lagscale-input-partition"
	headerOffset    = "lagscale-input-offset"
)

type config struct {
	brokers        string
	topic          string
	group          string
	balancer       string
	processMs      int
	maxInflight    int
	commit         string
	drainTimeout   time.Duration
	sessionTimeout time.Duration
	outputTopic    string
	metricsAddr    string
}

// envNames maps each flag to the environment variable read when the flag is not given.
var envNames = map[string]string{
	"brokers":         "KAFKA_BOOTSTRAP",
	"topic":           "KAFKA_TOPIC",
	"group":           "KAFKA_GROUP",
	"balancer":        "CONSUMER_BALANCER",
	"process-ms":      "CONSUMER_PROCESS_MS",
	"max-inflight":    "CONSUMER_MAX_INFLIGHT",
	"commit":          "CONSUMER_COMMIT",
	"drain-timeout":   "CONSUMER_DRAIN_TIMEOUT",
	"session-timeout": "CONSUMER_SESSION_TIMEOUT",
	"output-topic":    "CONSUMER_OUTPUT_TOPIC",
	"metrics-addr":    "CONSUMER_METRICS_ADDR",
}

var balancers = map[string]func() kgo.GroupBalancer{
	"cooperative-sticky": kgo.CooperativeStickyBalancer,
	"range":              kgo.RangeBalancer,
	"roundrobin":         kgo.RoundRobinBalancer,
}

// parseConfig reads flags, then the environment for flags not given; it reports every
// problem at once.
func parseConfig(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("franz-go-consumer", flag.ContinueOnError)
	fs.StringVar(&c.brokers, "brokers", "", "comma-separated bootstrap brokers (required)")
	fs.StringVar(&c.topic, "topic", "events", "input topic")
	fs.StringVar(&c.group, "group", "enrich", "consumer group")
	fs.StringVar(&c.balancer, "balancer", "cooperative-sticky", "cooperative-sticky, range or roundrobin")
	fs.IntVar(&c.processMs, "process-ms", 5, "simulated downstream latency per record, ms")
	fs.IntVar(&c.maxInflight, "max-inflight", 10, "records processed concurrently (one poll's worth)")
	fs.StringVar(&c.commit, "commit", "manual", "manual: synchronous commit after each processed poll; auto: processed records are marked for the auto-committer")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 25*time.Second, "SIGTERM -> exit budget; past it the process exits 1")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 45*time.Second, "group session timeout")
	fs.StringVar(&c.outputTopic, "output-topic", "", "write each processed record here, with its input partition and offset in headers (optional)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", ":9400", "address of /metrics and /healthz (port 0: a free port, logged)")
	fs.VisitAll(func(f *flag.Flag) { f.Usage += " (env " + envNames[f.Name] + ")" })
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	var problems []string
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		env := envNames[f.Name]
		if v := os.Getenv(env); v != "" && !given[f.Name] {
			if err := fs.Set(f.Name, v); err != nil {
				problems = append(problems, fmt.Sprintf("$%s=%q: %v", env, v, err))
			}
		}
	})
	if len(brokerList(c.brokers)) == 0 {
		problems = append(problems, "-brokers (or $KAFKA_BOOTSTRAP) is required")
	}
	if c.topic == "" || c.group == "" {
		problems = append(problems, "-topic and -group must not be empty")
	}
	if balancers[c.balancer] == nil {
		problems = append(problems, fmt.Sprintf("-balancer %q: want cooperative-sticky, range or roundrobin", c.balancer))
	}
	if c.processMs < 0 {
		problems = append(problems, fmt.Sprintf("-process-ms %d: want >= 0", c.processMs))
	}
	if c.maxInflight < 1 {
		problems = append(problems, fmt.Sprintf("-max-inflight %d: want >= 1", c.maxInflight))
	}
	if c.commit != "manual" && c.commit != "auto" {
		problems = append(problems, fmt.Sprintf("-commit %q: want manual or auto", c.commit))
	}
	if c.drainTimeout <= 0 || c.sessionTimeout <= 0 {
		problems = append(problems, "-drain-timeout and -session-timeout must be positive")
	}
	if len(problems) > 0 {
		return c, errors.New(strings.Join(problems, "\n"))
	}
	return c, nil
}

func brokerList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// consumer is the poll -> process -> write -> commit loop and the rebalance callbacks.
type consumer struct {
	cfg     config
	log     *slog.Logger
	m       *metrics
	cl      *kgo.Client
	started time.Time

	mu             sync.Mutex // guards the fields below (callbacks run on the client's goroutine)
	owned          map[int32]bool
	joined         bool
	rebalanceStart time.Time // first revoke/lost of the episode in progress; zero when none
}

func partitions(m map[string][]int32) []int32 {
	var ps []int32
	for _, p := range m {
		ps = append(ps, p...)
	}
	slices.Sort(ps)
	return ps
}

// Rebalance callbacks. BlockRebalanceOnPoll runs them only between polls, after
// AllowRebalance, so no record is in flight when a partition is revoked: the work of the
// last poll is processed, written and committed (manual) or marked (auto) by then.

func (c *consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	ps := partitions(assigned)
	for _, p := range ps {
		c.owned[p] = true
	}
	c.m.assigned.Set(float64(len(c.owned)))
	switch {
	case !c.joined:
		c.joined = true
		c.m.ready.Store(true)
		c.log.Info("joined", "join_s", now.Sub(c.started).Seconds(), "assigned", ps, "owned", len(c.owned))
	case !c.rebalanceStart.IsZero():
		d := now.Sub(c.rebalanceStart)
		c.m.rebalances.Inc()
		c.m.rebalanceS.Observe(d.Seconds())
		c.log.Info("assigned", "rebalance_s", d.Seconds(), "assigned", ps, "owned", len(c.owned))
	default:
		c.log.Info("assigned", "assigned", ps, "owned", len(c.owned))
	}
	c.rebalanceStart = time.Time{}
}

func (c *consumer) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startRebalance()
	t0 := time.Now()
	err := c.commitProcessed(ctx, cl)
	ps := partitions(revoked)
	for _, p := range ps {
		delete(c.owned, p)
	}
	c.m.assigned.Set(float64(len(c.owned)))
	c.log.Info("revoked", "revoked", ps, "owned", len(c.owned), "commit_s", time.Since(t0).Seconds(), "commit_err", err)
}

func (c *consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startRebalance()
	ps := partitions(lost)
	for _, p := range ps {
		delete(c.owned, p)
	}
	c.m.assigned.Set(float64(len(c.owned)))
	c.log.Warn("lost", "lost", ps, "owned", len(c.owned))
}

func (c *consumer) startRebalance() {
	if c.joined && c.rebalanceStart.IsZero() {
		c.rebalanceStart = time.Now()
	}
}

// commitProcessed synchronously commits what has been processed. In manual mode every polled
// record is processed before the next commit or callback, so the uncommitted offsets are the
// processed ones; in auto mode the processed records were marked.
func (c *consumer) commitProcessed(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if c.cfg.commit == "manual" {
		return cl.CommitUncommittedOffsets(ctx)
	}
	return cl.CommitMarkedOffsets(ctx)
}

// process runs one poll's records concurrently: each waits -process-ms (the simulated
// downstream latency) and is then written to the output topic, if any. It returns once every
// write is acknowledged, so a later commit implies the records are written.
func (c *consumer) process(recs []*kgo.Record) error {
	c.m.setInflight(len(recs))
	delay := time.Duration(c.cfg.processMs) * time.Millisecond
	var (
		wg       sync.WaitGroup
		firstErr atomic.Pointer[error]
	)
	for _, r := range recs {
		wg.Add(1)
		go func() {
			time.Sleep(delay)
			if c.cfg.outputTopic == "" {
				wg.Done()
				return
			}
			out := &kgo.Record{
				Topic: c.cfg.outputTopic,
				Key:   r.Key,
				Value: r.Value,
				Headers: []kgo.RecordHeader{
					{Key: headerPartition, Value: []byte(strconv.FormatInt(int64(r.Partition), 10))},
					{Key: headerOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
				},
			}
			// Not the shutdown context: a drain finishes the writes it started.
			c.cl.Produce(context.Background(), out, func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
				wg.Done()
			})
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return fmt.Errorf("writing to output topic %s: %w", c.cfg.outputTopic, *err)
	}
	if c.cfg.commit == "manual" {
		if err := c.commitProcessed(context.Background(), c.cl); err != nil {
			// At least once: the partition's next owner re-reads from the last commit.
			c.log.Warn("commit failed", "err", err)
		}
	} else {
		c.cl.MarkCommitRecords(recs...)
	}
	c.m.addProcessed(len(recs))
	c.m.setInflight(0)
	return nil
}

// run polls until ctx is cancelled (the signal), processing what each poll returned.
func (c *consumer) run(ctx context.Context) error {
	for {
		fetches := c.cl.PollRecords(ctx, c.cfg.maxInflight)
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				c.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
			}
		})
		var err error
		if recs := fetches.Records(); len(recs) > 0 {
			err = c.process(recs)
		}
		c.cl.AllowRebalance()
		if err != nil || ctx.Err() != nil || fetches.IsClientClosed() {
			return err
		}
	}
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseConfig(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	host, _ := os.Hostname()
	c := &consumer{cfg: cfg, log: log, m: newMetrics(), owned: map[int32]bool{}, started: time.Now()}

	addr, err := c.m.serve(cfg.metricsAddr)
	if err != nil {
		log.Error("metrics listen failed", "addr", cfg.metricsAddr, "err", err)
		os.Exit(1)
	}
	log.Info("metrics listening", "addr", addr.String())
	rateDone := make(chan struct{})
	go c.m.updateRate(rateDone)

	opts := []kgo.Opt{
		kgo.SeedBrokers(brokerList(cfg.brokers)...),
		kgo.ClientID(fmt.Sprintf("franz-go-consumer-%s-%d", host, os.Getpid())),
		kgo.ConsumeTopics(cfg.topic),
		kgo.ConsumerGroup(cfg.group),
		kgo.Balancers(balancers[cfg.balancer]()),
		kgo.SessionTimeout(cfg.sessionTimeout),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
		kgo.ProducerLinger(0), // each poll's writes are awaited before its commit
	}
	if cfg.commit == "manual" {
		opts = append(opts, kgo.DisableAutoCommit())
	} else {
		opts = append(opts, kgo.AutoCommitMarks())
	}
	c.cl, err = kgo.NewClient(opts...)
	if err != nil {
		log.Error("client failed", "err", err)
		os.Exit(1)
	}
	log.Info("started", "brokers", cfg.brokers, "topic", cfg.topic, "group", cfg.group,
		"balancer", cfg.balancer, "process_ms", cfg.processMs, "max_inflight", cfg.maxInflight,
		"commit", cfg.commit, "output_topic", cfg.outputTopic, "drain_timeout", cfg.drainTimeout)

	// On SIGTERM/SIGINT: stop fetching, let the loop finish the poll in progress, commit,
	// leave the group, close; past -drain-timeout the process exits 1.
	ctx, cancel := context.WithCancel(context.Background())
	var signalled atomic.Int64 // when the signal came, unix ns
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		signalled.Store(time.Now().UnixNano())
		c.m.ready.Store(false)
		log.Info("signal", "signal", sig.String(), "inflight", c.m.inflightN.Load())
		c.cl.PauseFetchTopics(cfg.topic)
		log.Info("stopped fetching")
		time.AfterFunc(cfg.drainTimeout, func() {
			log.Error("drain timeout exceeded", "drain_timeout", cfg.drainTimeout)
			os.Exit(1)
		})
		cancel()
	}()

	if err := c.run(ctx); err != nil {
		log.Error("fatal", "err", err) // nothing of the failed poll is committed
		os.Exit(1)
	}
	drainStart := time.Now()
	if ns := signalled.Load(); ns != 0 {
		drainStart = time.Unix(0, ns)
	}
	log.Info("in-flight work finished", "drain_s", time.Since(drainStart).Seconds())
	dctx, dcancel := context.WithDeadline(context.Background(), drainStart.Add(cfg.drainTimeout))
	defer dcancel()
	if err := c.commitProcessed(dctx, c.cl); err != nil {
		log.Warn("final commit failed", "err", err)
	} else {
		log.Info("committed")
	}
	// Leaving runs onRevoked for every owned partition (committing again, a no-op).
	if err := c.cl.LeaveGroupContext(dctx); err != nil {
		log.Warn("leave group failed", "err", err)
	} else {
		log.Info("left group")
	}
	c.cl.Close()
	close(rateDone)
	log.Info("exit", "drain_s", time.Since(drainStart).Seconds(), "processed", c.m.processedN.Load())
}
