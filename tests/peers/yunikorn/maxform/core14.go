//go:build core14

package main

import (
	"github.com/apache/yunikorn-core/pkg/common/configs"
	"github.com/apache/yunikorn-core/pkg/common/resources"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
)

// newQueue: the 1.4 constructor.
func newQueue(conf configs.QueueConfig, parent *objects.Queue) (*objects.Queue, error) {
	return objects.NewConfiguredQueue(conf, parent)
}

// ownMax: the max the core keeps for the queue itself (nil: none).
func ownMax(queue *objects.Queue) map[string]int64 {
	return queue.GetPartitionQueueDAOInfo().MaxResource
}

// headRoom: 1.4 exports no headroom, so this is its getHeadRoom/internalHeadRoom (queue.go) with nothing
// allocated, on the core's own values and function: the queue's max (none: its parent's headroom), the smaller
// of each quantity with its parent's headroom, a quantity named on one side only kept as it is
// (ComponentWiseMinPermissive). GetMaxResource is not it: there a quantity missing on one side counts as 0.
func headRoom(queue *objects.Queue) *resources.Resource {
	var parent *resources.Resource
	if above := parents[queue]; above != nil {
		parent = headRoom(above)
	}
	own := fromMap(ownMax(queue))
	if own == nil || len(own.Resources) == 0 {
		return parent
	}
	if parent == nil {
		return own
	}
	return resources.ComponentWiseMinPermissive(own, parent)
}
