package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/ports"
)

// The labels on a sharded controller's Leases, which its replicas list
// and watch them by and read the number of shards from.
const (
	// ControllerLabel names the controller, Settings.Name.
	ControllerLabel = "loam.dev/controller"
	// ShardsLabel is the number of shards the Lease's holder runs with.
	ShardsLabel = "loam.dev/shards"
	// ShardLabel is the shard a shard's Lease is for; a replica's
	// membership Lease has none.
	ShardLabel = "loam.dev/shard"
)

// ShardsConfig is a sharded controller's Leases and how its replica
// campaigns for them.
type ShardsConfig struct {
	// Client reaches the API server's Leases.
	Client coordinationv1client.LeasesGetter
	// Name is the controller's, Settings.Name; Namespace is its Leases'.
	Name, Namespace string
	// Identity is the replica's, Settings.LeaderElection.Identity;
	// Incarnation tells this process from another with the same Identity,
	// such as the pod's previous run.
	Identity, Incarnation string
	// Count is the number of shards.
	Count int
	// LeaseDuration, RenewDeadline and RetryPeriod time every Lease, as
	// Config's do.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MeterProvider, when not nil, records leader_election_master_status
	// {name} of each shard's Lease, as Config's does of its Lease: 1 while
	// this replica holds the shard, 0 otherwise, every shard's 0 from
	// Start. The membership Lease, which a running replica always holds,
	// records none.
	MeterProvider metric.MeterProvider
}

// Shards are a sharded controller's Leases: ports.ShardLeases. The
// replica's membership Lease is named <Name>-member-<Identity>, shard i's
// <Name>-shard-<i>; each carries the three labels.
type Shards struct {
	c      ShardsConfig
	member *Elector
	// shard is the Config of shard i's Elector but for its Name, Labels
	// and Expired.
	shard Config

	labels func(shard int) map[string]string
	// status is leader_election_master_status, nil without a
	// MeterProvider.
	status   metric.Int64Gauge
	selector string
	informer cache.SharedIndexInformer
	mu       sync.Mutex
	stop     context.CancelFunc
	done     chan struct{}
}

var _ ports.ShardLeases = (*Shards)(nil)

// MemberLease returns the name of the membership Lease of the replica
// identity of controller name.
func MemberLease(name, identity string) string { return name + "-member-" + identity }

// ShardLease returns the name of shard i's Lease of controller name.
func ShardLease(name string, i int) string { return name + "-shard-" + strconv.Itoa(i) }

// NewShards returns the Leases of c. It fails, naming every mistake, as
// New does for each Lease, and when c has no Incarnation or a Count below
// 1.
func NewShards(c ShardsConfig) (*Shards, error) {
	var errs []error
	if c.Incarnation == "" {
		errs = append(errs, errors.New("lease: ShardsConfig.Incarnation is empty"))
	}
	if c.Count < 1 {
		errs = append(errs, fmt.Errorf("lease: ShardsConfig.Count is %d: want at least 1", c.Count))
	}
	s := &Shards{c: c}
	holder := s.Holder()
	base := Config{
		Client: c.Client, Namespace: c.Namespace, Identity: holder,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
	}
	labelsOf := func(shard int) map[string]string {
		l := map[string]string{ControllerLabel: c.Name, ShardsLabel: strconv.Itoa(c.Count)}
		if shard >= 0 {
			l[ShardLabel] = strconv.Itoa(shard)
		}
		return l
	}
	mc := base
	mc.Name, mc.Labels = MemberLease(c.Name, c.Identity), labelsOf(-1)
	var err error
	if s.member, err = New(mc); err != nil {
		errs = append(errs, err)
	}
	s.shard = base
	s.labels = labelsOf
	if c.MeterProvider != nil {
		if s.status, err = newLeaderStatus(c.MeterProvider); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	leases := c.Client.Leases(c.Namespace)
	selector := labels.Set{ControllerLabel: c.Name}.AsSelector().String()
	s.selector = selector
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return leases.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return leases.Watch(ctx, opts)
		},
	}
	// A controller has a few Leases: a plain list of them is cheaper than
	// client-go's watch-list stream.
	s.informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, listsPlainly{}), &coordinationv1.Lease{},
		cache.SharedIndexInformerOptions{ObjectDescription: "leases of controller " + c.Name})
	return s, nil
}

// Holder returns the identity the replica holds its Leases under: its
// Identity and Incarnation, joined by an underscore.
func (s *Shards) Holder() string { return s.c.Identity + "_" + s.c.Incarnation }

// Member returns the Elector of the replica's membership Lease.
func (s *Shards) Member() ports.Elector { return s.member }

// Shard returns the Elector of shard i's Lease, which takes at once a
// Lease that expired says was seen to expire.
func (s *Shards) Shard(i int, expired func(ports.LeaseRecord) bool) ports.Elector {
	c := s.shard
	c.Name, c.Labels, c.Expired = ShardLease(s.c.Name, i), s.labels(i), expired
	// NewShards checked every field but these, which can't fail.
	return &Elector{c: c, status: s.status, name: s.statusName(i)}
}

// statusName is leader_election_master_status's name label of shard i's
// Lease.
func (s *Shards) statusName(i int) metric.RecordOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("name", ShardLease(s.c.Name, i))))
}

// Check lists the controller's Leases once, with a limit of 1, and fails
// naming them, and their namespace, when they can't be listed.
func (s *Shards) Check(ctx context.Context) error {
	_, err := s.c.Client.Leases(s.c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.selector, Limit: 1})
	if err != nil {
		return fmt.Errorf("listing the Leases of controller %s in namespace %s: %w", s.c.Name, s.c.Namespace, err)
	}
	return nil
}

// Start runs the watch of the controller's Leases, in a goroutine of its
// own, until ctx is done or Stop is called, calling changed after each
// change.
func (s *Shards) Start(ctx context.Context, changed func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	if s.status != nil {
		// Before any campaign: a shard this replica never campaigns for
		// reads 0, not nothing.
		for i := range s.c.Count {
			s.status.Record(context.WithoutCancel(ctx), 0, s.statusName(i))
		}
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.done = make(chan struct{})
	poke := func(any) { changed() }
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
		DeleteFunc: poke,
	})
	go func() {
		defer close(s.done)
		s.informer.RunWithContext(ctx)
	}()
}

// WaitForSync blocks until the watch holds what its first list returned,
// and reports whether it did before ctx was done.
func (s *Shards) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced)
}

// Records returns every Lease of the controller the watch holds.
func (s *Shards) Records() []ports.LeaseRecord {
	items := s.informer.GetStore().List()
	out := make([]ports.LeaseRecord, 0, len(items))
	for _, item := range items {
		l, ok := item.(*coordinationv1.Lease)
		if !ok {
			continue
		}
		out = append(out, recordOf(l))
	}
	return out
}

// recordOf returns what l says of its holder, renewal and shards.
func recordOf(l *coordinationv1.Lease) ports.LeaseRecord {
	r := ports.LeaseRecord{Name: l.Name, Shard: -1}
	if v, ok := l.Labels[ShardLabel]; ok {
		if i, err := strconv.Atoi(v); err == nil && i >= 0 {
			r.Shard = i
		}
	}
	if n, err := strconv.Atoi(l.Labels[ShardsLabel]); err == nil {
		r.Count = n
	}
	if h := l.Spec.HolderIdentity; h != nil {
		r.Holder = *h
	}
	if t := l.Spec.RenewTime; t != nil {
		r.Renewed = t.Time
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil {
		r.Duration = time.Duration(*d) * time.Second
	}
	return r
}

// Stop stops the watch and waits for its goroutine to return.
func (s *Shards) Stop() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

// listsPlainly tells client-go's reflector to list, not to stream a
// watch-list.
type listsPlainly struct{}

// IsWatchListSemanticsUnSupported reports true: list plainly.
func (listsPlainly) IsWatchListSemanticsUnSupported() bool { return true }
