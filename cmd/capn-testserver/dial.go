package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"capn.dev/capn/test/netprobe"
)

// dialMain connects to every ADDR at once and writes a JSON object of
// address to netprobe verdict, to --out or stdout: the network-boundary
// e2e reads it from the pod's termination message.
func dialMain(args []string) int {
	flags := flag.NewFlagSet("dial", flag.ContinueOnError)
	timeout := flags.Duration("timeout", 3*time.Second, "give up on one address after this long")
	out := flags.String("out", "", "write the verdicts here (default stdout)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() == 0 {
		fmt.Fprintf(os.Stderr, "dial: missing ADDR\n%s", usage)
		return 2
	}
	b, err := json.Marshal(netprobe.Dial(context.Background(), flags.Args(), *timeout))
	if err != nil {
		fmt.Fprintf(os.Stderr, "capn-testserver dial: %v\n", err)
		return 1
	}
	if *out == "" {
		_, err = os.Stdout.Write(append(b, '\n'))
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "capn-testserver dial: %v\n", err)
		return 1
	}
	return 0
}
