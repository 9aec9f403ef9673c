//go:build !core19

// The yunikorn-core 1.4 side of the shim: its scheduler interface names an allocation by a UUID and an ask by its
// allocation key with a count (MaxAllocations); the stateaware starting timeout is a package variable.
package main

import (
	"time"
	_ "unsafe" // go:linkname

	"github.com/apache/yunikorn-core/pkg/scheduler"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

const coreVersion = "v1.4.0"

// startingTimeout is the core's own 5-minute stateaware starting timeout (pkg/scheduler/objects/application.go),
// which no configuration reaches in 1.4: the scaled scenario sets it through the linker, before any application.
//
//go:linkname startingTimeout github.com/apache/yunikorn-core/pkg/scheduler/objects.startingTimeout
var startingTimeout time.Duration

// schedule is one cycle of the core's scheduling loop (ClusterContext.schedule, what MultiStepSchedule runs without
// its 100 ms pause); it tells whether the cycle did anything.
//
//go:linkname schedule github.com/apache/yunikorn-core/pkg/scheduler.(*ClusterContext).schedule
func schedule(*scheduler.ClusterContext) bool

func setStartingTimeout(d time.Duration) { startingTimeout = d }

// preemptAttemptFrequency is how long the core waits before an ask that failed to preempt may try again (15 s in
// pkg/scheduler/objects/preemption.go, not configurable): scaled with the scenario like the other timers.
//
//go:linkname preemptAttemptFrequency github.com/apache/yunikorn-core/pkg/scheduler/objects.preemptAttemptFrequency
var preemptAttemptFrequency time.Duration

func setPreemptRetry(d time.Duration) { preemptAttemptFrequency = d }

func askRequest(partition, app string, a ask) *si.AllocationRequest {
	return &si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{{AllocationKey: a.Key, ApplicationID: app,
		PartitionName: partition, ResourceAsk: resource(a.Resources), MaxAllocations: 1, Priority: a.Priority,
		// what the Kubernetes shim asks for a pod by default (no preemption annotation, preemptionPolicy not Never)
		PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true, AllowPreemptOther: true}}}}
}

func releaseRequest(partition, app, id string, preempted bool) *si.AllocationRequest {
	kind := si.TerminationType_STOPPED_BY_RM
	if preempted {
		kind = si.TerminationType_PREEMPTED_BY_SCHEDULER
	}
	return &si.AllocationRequest{RmID: rmID, Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{PartitionName: partition, ApplicationID: app, UUID: id,
			TerminationType: kind}}}}
}

// rejectedAsks are the asks the core refused: (application, allocation key, reason).
func rejectedAsks(response *si.AllocationResponse) [][3]string {
	out := [][3]string{}
	for _, r := range response.Rejected {
		out = append(out, [3]string{r.ApplicationID, r.AllocationKey, r.Reason})
	}
	return out
}

func allocationID(alloc *si.Allocation) string        { return alloc.UUID }
func releasedID(release *si.AllocationRelease) string { return release.UUID }

// heldID names an allocation the core holds as the shim names it.
func heldID(alloc *objects.Allocation) string { return alloc.GetUUID() }
