// tsbs_dump_queries prints the queries of a tsbs_generate_queries --format=influx file as JSON lines.
//
// The query files are gob streams of query.HTTP values; decoding them with TSBS's own type is exact, where
// scraping `tsbs_run_queries_influx --debug=3` would need a running server and a text format that is not an
// interface. bench/lib/tsbs_tools.py builds this inside the cached TSBS module (so it uses the pinned TSBS).
package main

import (
	"bufio"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/timescale/tsbs/pkg/query"
)

type dumped struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	InfluxQL    string `json:"influxql"`
	StartNs     int64  `json:"start_ns"`
	EndNs       int64  `json:"end_ns"`
}

func main() {
	dec := gob.NewDecoder(bufio.NewReader(os.Stdin))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for {
		var q query.HTTP
		if err := dec.Decode(&q); err == io.EOF {
			return
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "tsbs_dump_queries:", err)
			os.Exit(1)
		}
		if err := enc.Encode(dumped{string(q.HumanLabel), string(q.HumanDescription), string(q.Method),
			string(q.Path), string(q.RawQuery), q.StartTimestamp, q.EndTimestamp}); err != nil {
			fmt.Fprintln(os.Stderr, "tsbs_dump_queries:", err)
			os.Exit(1)
		}
	}
}
