// Command pause is the sandbox process of every pod on capn's local node:
// it holds the pod's namespaces and exits on SIGTERM/SIGINT. Built here
// because no registry (and so no upstream pause image) is reachable.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
