//go:build !core14

package main

import (
	"github.com/apache/yunikorn-core/pkg/common/configs"
	"github.com/apache/yunikorn-core/pkg/common/resources"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
)

// newQueue: the 1.9 constructor (silence: log as a configuration change would; no application mapping yet).
func newQueue(conf configs.QueueConfig, parent *objects.Queue) (*objects.Queue, error) {
	return objects.NewConfiguredQueue(conf, parent, false, nil)
}

// ownMax: the max the core keeps for the queue itself (nil: none).
func ownMax(queue *objects.Queue) map[string]int64 {
	return queue.GetPartitionQueueDAOInfo(false).MaxResource
}

// headRoom: the core's own getHeadRoom, as the queue info reports it.
func headRoom(queue *objects.Queue) *resources.Resource {
	return fromMap(queue.GetPartitionQueueDAOInfo(false).HeadRoom)
}
