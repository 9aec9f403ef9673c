// Command maxform asks yunikorn-core's own queue objects what a queue's max is and which asks fit under it.
//
// It reads one queues.yaml on standard input, validates it (configs.ParseAndValidateConfig), builds the first
// partition's queue tree with the core's objects.NewConfiguredQueue (the code that applies a configuration to a
// running scheduler), gives the root the cluster's size (what node registration does) and prints, per leaf
// queue, one JSON line: the max the core keeps for it (null: none, as the REST API's queue info shows it), its
// headroom with nothing allocated, and for each named ask whether it fits: the test the scheduler makes before
// it allocates (headRoom.FitInMaxUndef(ask), application.go). The headroom is the core's own getHeadRoom where
// the release exports it (1.9: the queue info's headRoom); see core14.go for 1.4.
//
// Usage: maxform CLUSTER ASKS, both JSON: {"memory": "...", "vcore": "...", "pods": "..."} and
// {"name": {resource: quantity}}, quantities as YuniKorn's configuration writes them.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/apache/yunikorn-core/pkg/common/configs"
	"github.com/apache/yunikorn-core/pkg/common/resources"
	"github.com/apache/yunikorn-core/pkg/scheduler/objects"
)

type leaf struct {
	Queue    string           `json:"queue"`
	Max      map[string]int64 `json:"max"`
	HeadRoom map[string]int64 `json:"headroom"`
	Fits     map[string]bool  `json:"fits"`
	Core     string           `json:"core"`
}

// parents: each queue's parent, as built (1.4 does not export it).
var parents = map[*objects.Queue]*objects.Queue{}

func main() {
	if len(os.Args) != 3 {
		fail("usage: maxform CLUSTER ASKS < queues.yaml")
	}
	cluster := parse(os.Args[1])
	var asks map[string]map[string]string
	if err := json.Unmarshal([]byte(os.Args[2]), &asks); err != nil {
		fail("ASKS: %v", err)
	}
	text, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("%v", err)
	}
	config, err := configs.ParseAndValidateConfig(text)
	if err != nil {
		fail("YuniKorn refuses the document: %v", err)
	}
	root, err := build(config.Partitions[0].Queues[0], nil)
	if err != nil {
		fail("%v", err)
	}
	root.SetMaxResource(cluster)
	encoder := json.NewEncoder(os.Stdout)
	core := coreVersion()
	walk(root, func(queue *objects.Queue) {
		found := leaf{Queue: queue.GetQueuePath(), Fits: map[string]bool{}, Core: core}
		if max := ownMax(queue); len(max) > 0 { // the queue info shows no max as an empty map
			found.Max = max
		}
		headRoom := headRoom(queue)
		if headRoom != nil {
			found.HeadRoom = map[string]int64{}
			for name, value := range headRoom.Resources {
				found.HeadRoom[name] = int64(value)
			}
		}
		for name, ask := range asks {
			found.Fits[name] = headRoom.FitInMaxUndef(resource(ask))
		}
		if err := encoder.Encode(found); err != nil {
			fail("%v", err)
		}
	})
}

func build(conf configs.QueueConfig, parent *objects.Queue) (*objects.Queue, error) {
	queue, err := newQueue(conf, parent)
	if err != nil {
		return nil, err
	}
	parents[queue] = parent
	for _, child := range conf.Queues {
		if _, err := build(child, queue); err != nil {
			return nil, err
		}
	}
	return queue, nil
}

func walk(queue *objects.Queue, visit func(*objects.Queue)) {
	if queue.IsLeafQueue() {
		visit(queue)
		return
	}
	for _, child := range queue.GetCopyOfChildren() {
		walk(child, visit)
	}
}

func fromMap(values map[string]int64) *resources.Resource {
	if values == nil {
		return nil
	}
	made := resources.NewResource()
	for name, value := range values {
		made.Resources[name] = resources.Quantity(value)
	}
	return made
}

func parse(text string) *resources.Resource {
	var values map[string]string
	if err := json.Unmarshal([]byte(text), &values); err != nil {
		fail("CLUSTER: %v", err)
	}
	return resource(values)
}

func resource(values map[string]string) *resources.Resource {
	made, err := resources.NewResourceFromConf(values)
	if err != nil {
		fail("%v: %v", values, err)
	}
	return made
}

func coreVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, module := range info.Deps {
			if module.Path == "github.com/apache/yunikorn-core" {
				return module.Version
			}
		}
	}
	return "unknown"
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "maxform: "+format+"\n", args...)
	os.Exit(2)
}
