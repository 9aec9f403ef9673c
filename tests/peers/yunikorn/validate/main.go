// Command validate runs YuniKorn queue configurations (queues.yaml documents) through yunikorn-core's own
// parsing and validation (pkg/common/configs.ParseAndValidateConfig), the code a YuniKorn scheduler runs
// when its configuration changes, and prints one JSON line per document: its index, whether YuniKorn
// accepts it, and YuniKorn's own error text.
//
// Documents come from the files named on the command line, or standard input, as YAML streams: documents
// separated by lines of "---" (what `rayon follow --format yunikorn` writes). The core release is chosen at
// build time by the module file (go build -modfile=core-VERSION.mod): see ../harness.py.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/apache/yunikorn-core/pkg/common/configs"
)

type verdict struct {
	Source   string `json:"source"`
	Document int    `json:"document"`
	Valid    bool   `json:"valid"`
	Error    string `json:"error,omitempty"`
	Queues   int    `json:"queues,omitempty"`
	Core     string `json:"core"`
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	core := coreVersion()
	sources := os.Args[1:]
	if len(sources) == 0 {
		sources = []string{"-"}
	}
	for _, source := range sources {
		text, err := read(source)
		if err != nil {
			fmt.Fprintf(os.Stderr, "validate: %s: %v\n", source, err)
			os.Exit(2)
		}
		for index, document := range separator.Split(text, -1) {
			if strings.TrimSpace(stripComments(document)) == "" {
				continue // an empty stream, or nothing after the last separator
			}
			found := verdict{Source: source, Document: index, Core: core}
			config, err := configs.ParseAndValidateConfig([]byte(document))
			if err != nil {
				found.Error = err.Error()
			} else {
				found.Valid = true
				for _, partition := range config.Partitions {
					found.Queues += count(partition.Queues)
				}
			}
			if err := encoder.Encode(found); err != nil {
				fmt.Fprintf(os.Stderr, "validate: %v\n", err)
				os.Exit(1)
			}
		}
	}
}

func read(source string) (string, error) {
	if source == "-" {
		data, err := io.ReadAll(os.Stdin)
		return string(data), err
	}
	data, err := os.ReadFile(source)
	return string(data), err
}

func stripComments(document string) string {
	var kept []string
	for _, line := range strings.Split(document, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// count is the number of queues in a tree, the roots included.
func count(queues []configs.QueueConfig) int {
	total := 0
	for _, queue := range queues {
		total += 1 + count(queue.Queues)
	}
	return total
}

// coreVersion is the yunikorn-core release this binary was built with.
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
