//go:build core19

// The yunikorn-core 1.9 side of the shim: since 1.6 an ask is an si.Allocation (one container, no count) named by its
// allocation key, which also names the allocation it becomes; there is no stateaware policy, so no starting timeout.
package main

import (
	"time"
	_ "unsafe" // go:linkname

	"github.com/apache/yunikorn-core/pkg/scheduler"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

const coreVersion = "v1.9.0"

// schedule is one cycle of the core's scheduling loop (ClusterContext.schedule, what MultiStepSchedule runs without
// its 100 ms pause); it tells whether the cycle did anything.
//
//go:linkname schedule github.com/apache/yunikorn-core/pkg/scheduler.(*ClusterContext).schedule
func schedule(*scheduler.ClusterContext) bool

// setStartingTimeout has nothing to set: 1.9 has no stateaware policy, so no starting timeout.
func setStartingTimeout(time.Duration) {}

// preemptAttemptFrequency is how long the core waits before an ask that failed to preempt may try again (15 s in
// pkg/scheduler/objects/preemption.go, not configurable): scaled with the scenario like the other timers.
//
//go:linkname preemptAttemptFrequency github.com/apache/yunikorn-core/pkg/scheduler/objects.preemptAttemptFrequency
var preemptAttemptFrequency time.Duration

func setPreemptRetry(d time.Duration) { preemptAttemptFrequency = d }

func askRequest(partition, app string, a ask) *si.AllocationRequest {
	return &si.AllocationRequest{RmID: rmID, Allocations: []*si.Allocation{{AllocationKey: a.Key, ApplicationID: app,
		PartitionName: partition, ResourcePerAlloc: resource(a.Resources), Priority: a.Priority,
		// what the Kubernetes shim asks for a pod by default (no preemption annotation, preemptionPolicy not Never)
		PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true, AllowPreemptOther: true}}}}
}

func releaseRequest(partition, app, id string, preempted bool) *si.AllocationRequest {
	kind := si.TerminationType_STOPPED_BY_RM
	if preempted {
		kind = si.TerminationType_PREEMPTED_BY_SCHEDULER
	}
	return &si.AllocationRequest{RmID: rmID, Releases: &si.AllocationReleasesRequest{
		AllocationsToRelease: []*si.AllocationRelease{{PartitionName: partition, ApplicationID: app,
			AllocationKey: id, TerminationType: kind}}}}
}

// rejectedAsks are the asks the core refused: 1.9 reports none in an allocation response.
func rejectedAsks(*si.AllocationResponse) [][3]string { return nil }

func allocationID(alloc *si.Allocation) string        { return alloc.AllocationKey }
func releasedID(release *si.AllocationRelease) string { return release.AllocationKey }

// heldID names an allocation the core holds as the shim names it.
func heldID(alloc *objects.Allocation) string { return alloc.GetAllocationKey() }
