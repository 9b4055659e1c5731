// Command capn-testserver is a small static HTTP server and client for the
// data-plane e2e test: a tenant pod running it shows, in one GET, that its
// ConfigMap volume, its Secret-backed env var and its projected
// service-account token (via a SelfSubjectReview) all reached it.
//
//	capn-testserver serve [--addr=:8080] [--file=PATH] [--env=NAME] [--token-file=PATH] [--ca-file=PATH] [--ignore-sigterm] [--write-once=VALUE] [--burn=DURATION]
//	capn-testserver get URL [--timeout=60s] [--out=PATH]
//	capn-testserver lookup [--timeout=60s] [--nxdomain] NAME...
//	capn-testserver cat FILE|-
//	capn-testserver tick [--count=N] [--interval=200ms] [--exit=CODE]
//	capn-testserver dial [--timeout=3s] [--out=PATH] ADDR...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// maxRead bounds every body and file this program reads: it is a test
// fixture, and nothing it is meant to see comes close.
const maxRead = 1 << 20

// whoamiTimeout keeps a broken apiserver path from hanging the e2e test's GET.
const whoamiTimeout = 5 * time.Second

// retryInterval is how often get tries again while the server is not up.
const retryInterval = time.Second

const usage = `usage:
  capn-testserver serve [--addr=:8080] [--file=/config/message] [--env=GREETING] [--token-file=PATH] [--ca-file=PATH] [--ignore-sigterm] [--write-once=VALUE] [--burn=DURATION]
  capn-testserver get URL [--timeout=60s] [--out=PATH]
  capn-testserver lookup [--timeout=60s] [--nxdomain] NAME...
  capn-testserver cat FILE|-
  capn-testserver tick [--count=N] [--interval=200ms] [--exit=CODE]
  capn-testserver dial [--timeout=3s] [--out=PATH] ADDR...
`

func main() {
	log.SetFlags(log.LstdFlags | log.Lmsgprefix)
	log.SetPrefix("capn-testserver: ")
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		os.Exit(serveMain(os.Args[2:]))
	case "get":
		os.Exit(getMain(os.Args[2:]))
	case "lookup":
		os.Exit(lookupMain(os.Args[2:]))
	case "cat":
		os.Exit(catMain(os.Args[2:]))
	case "tick":
		os.Exit(tickMain(os.Args[2:]))
	case "dial":
		os.Exit(dialMain(os.Args[2:]))
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
}

type config struct {
	file      string // read on every request, so a ConfigMap update shows
	env       string // name of the env var to report
	tokenFile string
	caFile    string
}

func serveMain(args []string) int {
	flags := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := flags.String("addr", ":8080", "listen address")
	var cfg config
	flags.StringVar(&cfg.file, "file", "/config/message", "file whose content is reported as \"file\"")
	flags.StringVar(&cfg.env, "env", "GREETING", "env var whose value is reported as \"env\"")
	flags.StringVar(&cfg.tokenFile, "token-file", "/var/run/secrets/kubernetes.io/serviceaccount/token", "bearer token for the SelfSubjectReview, re-read on every request")
	flags.StringVar(&cfg.caFile, "ca-file", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "CA bundle of the apiserver")
	ignoreTerm := flags.Bool("ignore-sigterm", false, "keep serving on SIGTERM, as a workload that needs its whole grace period (only SIGKILL stops it)")
	writeOnce := flags.String("write-once", "", "write this to --file before serving unless the file exists: a volume keeps the first pod's value")
	burn := flags.Duration("burn", 0, "keep one CPU busy for this long after start, then idle: load for an autoscaler to see come and go")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "serve: unexpected arguments %q\n%s", flags.Args(), usage)
		return 2
	}
	if *writeOnce != "" {
		if err := writeIfAbsent(cfg.file, *writeOnce); err != nil {
			log.Print(err)
			return 1
		}
	}

	// A pod is stopped with SIGTERM; exiting promptly keeps deletions fast.
	stopOn := []os.Signal{syscall.SIGTERM, os.Interrupt}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
		stopOn = []os.Signal{os.Interrupt}
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopOn...)
	defer stop()
	if *burn > 0 {
		go burnFor(ctx, *burn)
	}
	srv := &http.Server{Addr: *addr, Handler: newHandler(cfg), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("serving on %s", *addr)
	select {
	case err := <-errc:
		log.Print(err)
		return 1
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Print(err)
		return 1
	}
	return 0
}

// burnFor spins on one CPU until d has passed or ctx ends.
func burnFor(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	for n := 0; time.Now().Before(end); n++ {
		if n%1_000_000 == 0 && ctx.Err() != nil {
			return
		}
	}
}

// response is what GET / answers. Groups is never null, so a test can
// compare it without special-casing an empty list.
type response struct {
	File   string   `json:"file"`
	Env    string   `json:"env"`
	Whoami string   `json:"whoami"`
	Groups []string `json:"groups"`
	Error  string   `json:"error,omitempty"`
}

func newHandler(cfg config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		file, err := readFile(cfg.file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp := response{File: file, Env: os.Getenv(cfg.env), Groups: []string{}}
		user, err := whoami(r.Context(), cfg)
		if err != nil {
			resp.Error = err.Error()
		} else {
			resp.Whoami = user.Username
			if user.Groups != nil {
				resp.Groups = user.Groups
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(resp); err != nil {
			log.Printf("writing response: %v", err)
		}
	})
	return mux
}

// readFile treats a missing file as empty: the test may run the server
// without a ConfigMap mounted and still want the other fields.
func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), nil
}

// whoami builds its client on every call: client-go caches a
// BearerTokenFile's token for about a minute, and the test rotates the token
// between requests. The TLS transport underneath is cached by client-go, so
// this costs no new connection pool.
func whoami(ctx context.Context, cfg config) (authenticationv1.UserInfo, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return authenticationv1.UserInfo{}, errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
	}
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: cfg.tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.caFile},
		Timeout:         whoamiTimeout,
		WrapTransport:   limitBodies,
	})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, whoamiTimeout)
	defer cancel()
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	return review.Status.UserInfo, nil
}

// limitBodies bounds what client-go reads from the apiserver, which it
// would otherwise read whole.
func limitBodies(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.Body != nil {
			resp.Body = limitedBody{Reader: io.LimitReader(resp.Body, maxRead), Closer: resp.Body}
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type limitedBody struct {
	io.Reader
	io.Closer
}

func getMain(args []string) int {
	flags := flag.NewFlagSet("get", flag.ContinueOnError)
	timeout := flags.Duration("timeout", 60*time.Second, "give up after this long")
	outPath := flags.String("out", "", "also write the body to this file (e.g. /dev/termination-log, so the answer reaches the pod's status)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	// flag stops at the first positional argument; allow flags after the URL too.
	if flags.NArg() < 1 {
		fmt.Fprintf(os.Stderr, "get: missing URL\n%s", usage)
		return 2
	}
	url := flags.Arg(0)
	if err := flags.Parse(flags.Args()[1:]); err != nil {
		return 2
	}
	if flags.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "get: unexpected arguments %q\n%s", flags.Args(), usage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var out io.Writer = os.Stdout
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "capn-testserver get: %v\n", err)
			return 1
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	if err := get(ctx, url, out); err != nil {
		fmt.Fprintf(os.Stderr, "capn-testserver get: %v\n", err)
		return 1
	}
	return 0
}

// get retries until ctx ends because the e2e test starts it before the
// server's pod, Service and endpoints are all in place.
func get(ctx context.Context, url string, out io.Writer) error {
	// A malformed URL will not get better by waiting.
	if _, err := http.NewRequest(http.MethodGet, url, nil); err != nil {
		return err
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		body, err := getOnce(ctx, url)
		if err == nil {
			_, err = out.Write(body)
			return err
		}
		lastErr = err
		t := time.NewTimer(retryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("GET %s: gave up after %d attempts: %w", url, attempt, lastErr)
		case <-t.C:
		}
	}
}

func getOnce(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRead))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// lookupMain resolves each NAME through the pod's resolv.conf (the pure-Go
// resolver: the binary is static), retrying until it resolves, or with
// --nxdomain until the answer is "no such host". A name that neither
// resolves nor is refused by the deadline fails: that is the hang the
// tenant DNS must not have.
func lookupMain(args []string) int {
	flags := flag.NewFlagSet("lookup", flag.ContinueOnError)
	timeout := flags.Duration("timeout", 60*time.Second, "give up after this long")
	nx := flags.Bool("nxdomain", false, "expect every NAME not to exist")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() == 0 {
		fmt.Fprintf(os.Stderr, "lookup: missing NAME\n%s", usage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	for _, name := range flags.Args() {
		if err := lookup(ctx, net.DefaultResolver, name, *nx, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "capn-testserver lookup: %v\n", err)
			return 1
		}
	}
	return 0
}

type hostResolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

func lookup(ctx context.Context, r hostResolver, name string, nx bool, out io.Writer) error {
	var lastErr error
	for attempt := 1; ; attempt++ {
		start := time.Now()
		addrs, err := r.LookupHost(ctx, name)
		took := time.Since(start).Round(time.Millisecond)
		var dnsErr *net.DNSError
		switch {
		case err == nil && !nx:
			_, err = fmt.Fprintf(out, "%s %s (%s)\n", name, strings.Join(addrs, ","), took)
			return err
		case nx && errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			_, err = fmt.Fprintf(out, "%s NXDOMAIN (%s)\n", name, took)
			return err
		case err == nil:
			lastErr = fmt.Errorf("%s resolved to %v, want NXDOMAIN", name, addrs)
		default:
			lastErr = err
		}
		t := time.NewTimer(retryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lookup %s: gave up after %d attempts: %w", name, attempt, lastErr)
		case <-t.C:
		}
	}
}

// catMain copies FILE, or stdin for "-", to stdout: what `kubectl exec`
// runs in an image with no shell.
// writeIfAbsent creates path with value, and leaves a file already there
// as it is.
func writeIfAbsent(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func catMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "cat: want one FILE or -\n%s", usage)
		return 2
	}
	var in io.Reader = os.Stdin
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "capn-testserver cat: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	if _, err := io.Copy(os.Stdout, io.LimitReader(in, maxRead)); err != nil {
		fmt.Fprintf(os.Stderr, "capn-testserver cat: %v\n", err)
		return 1
	}
	return 0
}

// tickMain prints "tick N" every interval, count times (0: forever), then
// exits with the given code: a container whose logs grow while followed,
// and which restarts, for `kubectl logs -f` and `--previous`.
func tickMain(args []string) int {
	flags := flag.NewFlagSet("tick", flag.ContinueOnError)
	count := flags.Int("count", 0, "ticks before exiting; 0 ticks forever")
	interval := flags.Duration("interval", 200*time.Millisecond, "time between ticks")
	code := flags.Int("exit", 0, "exit code after the last tick")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	fmt.Printf("tick start pid=%d\n", os.Getpid())
	for i := 1; *count == 0 || i <= *count; i++ {
		time.Sleep(*interval)
		fmt.Printf("tick %d\n", i)
	}
	return *code
}
