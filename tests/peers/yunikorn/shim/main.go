// Command shim plays a scenario through the real yunikorn-core scheduler, without Kubernetes: it registers itself as
// the resource manager, adds the nodes, applies each queues.yaml document at its change point, submits the
// applications and their asks at their times, releases each allocation when its task ends, and confirms every
// preemption the core asks for. It writes one JSON line per allocation, release, preemption, application state
// transition and configuration change, with the scenario time it happened at.
//
// The core reads the wall clock (preemption delay, the stateaware starting timeout): the scenario runs in real time
// scaled by `scale` (real seconds per scenario second), and its documents carry the delays already scaled.
// Scheduling is manual (the core's own test mode): one cycle at a time, after the events due have been applied and
// seen by the core, so that events of one instant are all in before the core decides.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/apache/yunikorn-core/pkg/common"
	"github.com/apache/yunikorn-core/pkg/entrypoint"
	"github.com/apache/yunikorn-core/pkg/log"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const rmID = "rayon-shim"

type scenario struct {
	Scale           float64           `json:"scale"`             // real seconds per scenario second
	StartingTimeout float64           `json:"starting_timeout"`  // scenario seconds, 0: the core's own
	PreemptRetry    float64           `json:"preempt_retry"`     // scenario seconds, 0: the core's own
	ReserveDelay    float64           `json:"reservation_delay"` // scenario seconds, 0: the core's own (2 s)
	End             float64           `json:"end"`               // scenario seconds
	ExtraConfig     map[string]string `json:"extra_config"`      // the core's settings beside queues.yaml (log.level, ...)
	Nodes           []node            `json:"nodes"`
	Configs         []config          `json:"configs"`
	Applications    []application     `json:"applications"`
}

type node struct {
	ID        string           `json:"id"`
	Resources map[string]int64 `json:"resources"`
}

type config struct {
	Time float64 `json:"time"`
	YAML string  `json:"yaml"`
}

type application struct {
	ID     string            `json:"id"`
	Queue  string            `json:"queue"`
	User   string            `json:"user"`
	Submit float64           `json:"submit"`
	Tags   map[string]string `json:"tags"`
	Asks   []ask             `json:"asks"`
}

type ask struct {
	Key       string           `json:"key"`
	Time      float64          `json:"time"`
	Resources map[string]int64 `json:"resources"`
	Duration  float64          `json:"duration"`
	Priority  int32            `json:"priority"`
}

// event is one thing the shim does at a scenario time; kind orders those of one instant.
type event struct {
	time float64
	kind int // 0 config, 1 application, 2 ask, 3 release
	seq  int
	do   func() error
}

type shim struct {
	mu        sync.Mutex
	start     time.Time
	scale     float64
	out       *json.Encoder
	proxy     api.SchedulerAPI
	context   *entrypoint.ServiceContext
	partition string
	events    []event
	seq       int
	activity  int // allocations and releases the core reported since the last look
	answered  map[string]chan bool
	durations map[string]float64 // allocation key -> task duration
	live      map[string]string  // allocation id -> application, while it runs
	extra     map[string]string
}

func (s *shim) now() float64 { return time.Since(s.start).Seconds() / s.scale }

func (s *shim) emit(record map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := record["t"]; !ok {
		record["t"] = s.now()
	}
	if err := s.out.Encode(record); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func (s *shim) push(at float64, kind int, do func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.events = append(s.events, event{at, kind, s.seq, do})
}

// due pops the events whose time has come, in time, kind and arrival order.
func (s *shim) due(now float64) []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	sort.Slice(s.events, func(i, j int) bool {
		a, b := s.events[i], s.events[j]
		if a.time != b.time {
			return a.time < b.time
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.seq < b.seq
	})
	n := 0
	for n < len(s.events) && s.events[n].time <= now {
		n++
	}
	out := append([]event(nil), s.events[:n]...)
	s.events = s.events[n:]
	return out
}

func (s *shim) next() (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == 0 {
		return 0, false
	}
	least := s.events[0].time
	for _, e := range s.events {
		if e.time < least {
			least = e.time
		}
	}
	return least, true
}

func resource(quantities map[string]int64) *si.Resource {
	r := &si.Resource{Resources: map[string]*si.Quantity{}}
	for name, value := range quantities {
		r.Resources[name] = &si.Quantity{Value: value}
	}
	return r
}

// ---- the resource manager's side: what the core tells us ----------------------------------------------------------

func (s *shim) UpdateApplication(response *si.ApplicationResponse) error {
	for _, app := range response.Accepted {
		s.answer(app.ApplicationID, true)
	}
	for _, app := range response.Rejected {
		s.emit(map[string]any{"event": "rejected", "app": app.ApplicationID, "reason": app.Reason})
		s.answer(app.ApplicationID, false)
	}
	for _, app := range response.Updated {
		s.emit(map[string]any{"event": "state", "app": app.ApplicationID, "state": app.State})
	}
	return nil
}

func (s *shim) answer(app string, accepted bool) {
	s.mu.Lock()
	channel := s.answered[app]
	s.mu.Unlock()
	if channel != nil {
		channel <- accepted
	}
}

func (s *shim) UpdateAllocation(response *si.AllocationResponse) error {
	for _, alloc := range response.New {
		id := allocationID(alloc)
		s.mu.Lock()
		s.activity++
		s.live[id] = alloc.ApplicationID
		duration := s.durations[alloc.AllocationKey]
		s.mu.Unlock()
		now := s.now()
		s.emit(map[string]any{"event": "allocation", "t": now, "app": alloc.ApplicationID, "ask": alloc.AllocationKey,
			"id": id, "node": alloc.NodeID})
		if duration > 0 {
			s.push(now+duration, 3, func() error { return s.release(alloc.ApplicationID, id, false) })
		}
	}
	for _, released := range response.Released {
		if released.TerminationType != si.TerminationType_PREEMPTED_BY_SCHEDULER {
			continue
		}
		id := releasedID(released)
		s.emit(map[string]any{"event": "preemption", "app": released.ApplicationID, "id": id})
		s.mu.Lock()
		s.activity++
		s.mu.Unlock()
		// the shim kills the victim at once and says so, as the Kubernetes shim does once the pod is gone
		s.push(s.now(), 3, func() error { return s.release(released.ApplicationID, id, true) })
	}
	for _, rejected := range rejectedAsks(response) {
		s.emit(map[string]any{"event": "ask_rejected", "app": rejected[0], "ask": rejected[1], "reason": rejected[2]})
	}
	return nil
}

func (s *shim) UpdateNode(*si.NodeResponse) error   { return nil }
func (s *shim) Predicates(*si.PredicatesArgs) error { return nil }
func (s *shim) PreemptionPredicates(args *si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Success: true, Index: args.StartIndex} // no pod constraints here
}
func (s *shim) SendEvent([]*si.EventRecord)                                              {}
func (s *shim) GetStateDump() (string, error)                                            { return "{}", nil }
func (s *shim) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

// ---- our side: what we tell the core -------------------------------------------------------------------------------

func (s *shim) applyConfig(c config) error {
	err := s.proxy.UpdateConfiguration(&si.UpdateConfigurationRequest{RmID: rmID, PolicyGroup: "queues",
		Config: c.YAML, ExtraConfig: s.extra})
	record := map[string]any{"event": "config", "at": c.Time, "ok": err == nil}
	if err != nil {
		record["error"] = err.Error()
	}
	s.emit(record)
	return nil
}

func (s *shim) submit(app application) error {
	channel := make(chan bool, 1)
	s.mu.Lock()
	s.answered[app.ID] = channel
	s.mu.Unlock()
	err := s.proxy.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: []*si.AddApplicationRequest{{
		ApplicationID: app.ID, QueueName: app.Queue, PartitionName: s.partition,
		Ugi: &si.UserGroupInformation{User: app.User}, Tags: app.Tags}}})
	if err != nil {
		return err
	}
	select {
	case accepted := <-channel:
		s.emit(map[string]any{"event": "submitted", "app": app.ID, "queue": app.Queue, "accepted": accepted})
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the core never answered the submission of %s", app.ID)
	}
}

func (s *shim) addAsk(app string, a ask) error {
	s.mu.Lock()
	s.durations[a.Key] = a.Duration
	s.mu.Unlock()
	if err := s.proxy.UpdateAllocation(askRequest(s.partition, app, a)); err != nil {
		return err
	}
	return s.until(func() bool { return s.core().hasAsk(app, a.Key) }, "ask "+a.Key)
}

func (s *shim) release(app, id string, preempted bool) error {
	s.mu.Lock()
	_, running := s.live[id]
	delete(s.live, id)
	s.mu.Unlock()
	if !running {
		return nil
	}
	if err := s.proxy.UpdateAllocation(releaseRequest(s.partition, app, id, preempted)); err != nil {
		return err
	}
	if !preempted {
		s.emit(map[string]any{"event": "release", "app": app, "id": id})
	}
	return s.until(func() bool { return !s.core().holds(app, id) }, "release of "+id)
}

// until waits for the core to have taken in what was sent (its event handling is asynchronous).
func (s *shim) until(done func() bool, what string) error {
	return s.within(done, what, 10*time.Second)
}

func (s *shim) within(done func() bool, what string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("the core never took in the %s", what)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (s *shim) core() view { return view{s.context, s.partition} }

// cycle runs one scheduling cycle and tells whether the core allocated or preempted anything in it. The core's own
// MultiStepSchedule pauses 100 ms after each cycle; this one waits only until the core's report of it has arrived.
func (s *shim) cycle() bool {
	if schedule(s.context.Scheduler.GetClusterContext()) {
		_ = s.within(s.peek, "report of an allocation", 200*time.Millisecond) // a node reservation reports nothing
	} else {
		time.Sleep(time.Millisecond) // a preemption is reported without an allocation
	}
	return s.seen()
}

func (s *shim) peek() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activity > 0
}

// seen tells whether the core reported an allocation or a preemption since the last look, and forgets it.
func (s *shim) seen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	busy := s.activity > 0
	s.activity = 0
	return busy
}

func (s *shim) play(sc scenario) error {
	for _, c := range sc.Configs {
		c := c
		s.push(c.Time, 0, func() error { return s.applyConfig(c) })
	}
	for _, app := range sc.Applications {
		app := app
		s.push(app.Submit, 1, func() error { return s.submit(app) })
		for _, a := range app.Asks {
			a := a
			s.push(a.Time, 2, func() error { return s.addAsk(app.ID, a) })
		}
	}
	s.start = time.Now() // the scenario's time 0: the core registered, the nodes in
	for s.now() < sc.End {
		for _, e := range s.due(s.now()) {
			if err := e.do(); err != nil {
				return err
			}
		}
		if s.cycle() {
			continue
		}
		if at, ok := s.next(); ok && at > s.now() {
			time.Sleep(min(time.Duration((at-s.now())*sc.Scale*float64(time.Second)), 10*time.Millisecond)) // the core tries preemption at its cycles
		}
	}
	return nil
}

func run(sc scenario) error {
	if sc.Scale <= 0 {
		return fmt.Errorf("scale must be positive (real seconds per scenario second), got %v", sc.Scale)
	}
	if sc.StartingTimeout > 0 {
		setStartingTimeout(time.Duration(sc.StartingTimeout * sc.Scale * float64(time.Second)))
	}
	if sc.ReserveDelay > 0 { // how long an ask waits before the core reserves a node for it
		objects.SetReservationDelay(time.Duration(sc.ReserveDelay * sc.Scale * float64(time.Second)))
	}
	if sc.PreemptRetry > 0 {
		setPreemptRetry(time.Duration(sc.PreemptRetry * sc.Scale * float64(time.Second)))
	}
	log.InitializeLogger(zap.NewNop(), &zap.Config{Level: zap.NewAtomicLevelAt(zapcore.FatalLevel)})
	s := &shim{scale: sc.Scale, out: json.NewEncoder(os.Stdout), answered: map[string]chan bool{},
		durations: map[string]float64{}, live: map[string]string{}, start: time.Now(),
		extra: sc.ExtraConfig}
	s.context = entrypoint.StartAllServicesWithParams(true, false)
	defer s.context.StopAll()
	s.proxy = s.context.RMProxy
	s.partition = common.GetNormalizedPartitionName("default", rmID)
	if len(sc.Configs) == 0 || sc.Configs[0].Time > 0 {
		return fmt.Errorf("the scenario needs a configuration at time 0")
	}
	if _, err := s.proxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: rmID,
		PolicyGroup: "queues", Version: "0.0.1", Config: sc.Configs[0].YAML, ExtraConfig: sc.ExtraConfig}, s); err != nil {
		return err
	}
	s.emit(map[string]any{"event": "config", "t": 0.0, "at": 0.0, "ok": true, "core": coreVersion})
	nodes := &si.NodeRequest{RmID: rmID}
	for _, n := range sc.Nodes {
		nodes.Nodes = append(nodes.Nodes, &si.NodeInfo{NodeID: n.ID, Action: si.NodeInfo_CREATE,
			Attributes: map[string]string{}, SchedulableResource: resource(n.Resources)})
	}
	if err := s.proxy.UpdateNode(nodes); err != nil {
		return err
	}
	for _, n := range sc.Nodes {
		if err := s.until(func() bool { return s.core().hasNode(n.ID) }, "node "+n.ID); err != nil {
			return err
		}
	}
	sc.Configs = sc.Configs[1:]
	return s.play(sc)
}

func main() {
	var sc scenario
	if err := json.NewDecoder(os.Stdin).Decode(&sc); err != nil {
		fmt.Fprintln(os.Stderr, "reading the scenario:", err)
		os.Exit(2)
	}
	if err := run(sc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// view reads what the core holds now, in one partition.
type view struct {
	context   *entrypoint.ServiceContext
	partition string
}

func (v view) hasNode(id string) bool {
	return v.context.Scheduler.GetClusterContext().GetNode(id, v.partition) != nil
}

func (v view) hasAsk(app, key string) bool {
	a := v.context.Scheduler.GetClusterContext().GetApplication(app, v.partition)
	return a == nil || a.GetAllocationAsk(key) != nil
}

func (v view) holds(app, id string) bool {
	a := v.context.Scheduler.GetClusterContext().GetApplication(app, v.partition)
	if a == nil {
		return false
	}
	for _, alloc := range a.GetAllAllocations() {
		if heldID(alloc) == id {
			return true
		}
	}
	return false
}
