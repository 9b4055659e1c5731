package framework

// TB is the part of testing.TB the framework uses. testing.TB satisfies it;
// so does a long-running program (hack/devcluster) that starts a cluster
// outside of a test and tears it down on a signal.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	Failed() bool
	TempDir() string
}
