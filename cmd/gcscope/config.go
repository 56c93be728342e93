package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
)

// version is gcscope's version, set at link time by the Makefile.
var version = "dev"

// defaultActionDelay is the embedded cluster's slow motion: offered in the page, switched
// off until the user switches it on.
const defaultActionDelay = time.Second

// config is the parsed command line.
type config struct {
	serveFlags // --listen, TLS, the token file, Hosts and Origins, --read-only, --log-level

	kubeconfig      string
	kubeContext     string   // the one context (or none: the current one)
	contexts        []string // --context, in order; several: one engine each (fleet)
	allContexts     bool     // every context of the kubeconfig
	startContexts   string   // several contexts: "opened" (each when first opened) or "all"
	inCluster       bool
	remoteSpecs     []string        // --remote, as given
	remotes         []remote.Config // --remote: clusters served by other gcscopes, through this one
	dataDir         string
	writeKubeconfig string
	demo            bool
	showVersion     bool

	// The engine.
	workers     int
	gcMode      gc.Mode
	actionDelay time.Duration
	ignored     []schema.GroupResource
	qps         float64
	burst       int
	// slowMotionOff: the action delay starts switched off (the embedded cluster's default).
	slowMotionOff bool
	// embeddedCollector: "upstream" runs kube-controller-manager's collector on the
	// embedded cluster, and the engine in shadow mode beside it.
	embeddedCollector string
	shadowOverdue     time.Duration
	discoveryPeriod   time.Duration

	// The server, besides serveFlags.
	auth           string
	oidc           security.SSOConfig // single sign-on, with --auth=kubernetes
	oidcSecretFile string
	auditLog       string
	maxStreams     int
	maxUserStreams int
	pageFullGraph  int

	// The recording of the engine's feed (--history).
	history        bool
	historyDir     string
	historyMaxSize int64
	historyMaxAge  time.Duration
}

// embedded reports whether gcscope boots its own control plane.
func (c *config) embedded() bool { return c.noClusterFlags() && len(c.remoteSpecs) == 0 }

// hubOnly reports whether gcscope serves remote gcscopes alone (--remote, no cluster flags).
func (c *config) hubOnly() bool { return c.noClusterFlags() && len(c.remoteSpecs) > 0 }

func (c *config) noClusterFlags() bool {
	return c.kubeconfig == "" && len(c.contexts) == 0 && !c.allContexts && !c.inCluster
}

// several reports whether gcscope serves several contexts, each with its own engine.
func (c *config) several() bool { return len(c.contexts) > 1 || c.allContexts }

// listFlag is a flag that may be given more than once.
type listFlag struct{ values *[]string }

func (l listFlag) String() string {
	if l.values == nil {
		return ""
	}
	return strings.Join(*l.values, ",")
}

func (l listFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty")
	}
	*l.values = append(*l.values, v)
	return nil
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ error }

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("gcscope", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gcscope [flags]\n       gcscope replay [flags] FILE   (serve an exported history read-only; gcscope replay -h)\n\n"+
			"With no cluster flags, gcscope boots its own Kubernetes control plane on loopback\n"+
			"(etcd, kube-apiserver, controllers) and fills it with demo workloads.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c.serveFlags.register(fs, gcscopeWords)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "use the cluster of this kubeconfig instead of the embedded one")
	fs.Var(listFlag{&c.contexts}, "context", "kubeconfig context to use (implies an existing cluster; default: the current context); given more than once, gcscope serves each context's cluster with its own engine and the page picks one")
	fs.BoolVar(&c.allContexts, "all-contexts", false, "serve every context of the kubeconfig, each with its own engine (the current context is the default one)")
	fs.StringVar(&c.startContexts, "start-contexts", "opened", "with several contexts: when each engine starts: opened (the default context's at start-up, each other's when the page or the API first opens it) or all (every one at start-up)")
	fs.BoolVar(&c.inCluster, "in-cluster", false, "use the service account of the pod gcscope runs in")
	fs.Var(listFlag{&c.remoteSpecs}, "remote", "NAME=URL[,ca=FILE][,forward=token|id-token]: also serve the cluster of the gcscope at URL (its API and stream through this one, as each user: their own credential is forwarded, never gcscope's); repeatable; with no cluster flags, gcscope is a hub of remotes alone")
	fs.StringVar(&c.dataDir, "data-dir", "", "keep gcscope's state here across restarts: the history, and the embedded cluster's etcd data, credentials and logs (default: a temporary dir removed on exit)")
	fs.StringVar(&c.writeKubeconfig, "write-kubeconfig", "", "embedded cluster: also write an admin kubeconfig to this path")
	fs.BoolVar(&c.demo, "demo", true, "create the demo workloads (default true for the embedded cluster, false otherwise)")
	fs.StringVar(&c.embeddedCollector, "embedded-collector", "gcscope", `embedded cluster: whose garbage collector runs on it: gcscope (the engine collects) or upstream (kube-controller-manager's own collector does, and gcscope's engine watches it in shadow mode, checking every decision against what it does)`)
	fs.DurationVar(&c.shadowOverdue, "shadow-overdue", gc.DefaultShadowOverdue, "shadow mode: how long a decision of the engine waits for the cluster's collector to do the same before it is shown overdue")
	fs.DurationVar(&c.discoveryPeriod, "gc-discovery-period", 30*time.Second, "how often the engine rereads the API's discovery for resources to monitor, and retries groups that failed (upstream: 30s)")
	fs.IntVar(&c.workers, "workers", 20, "collector workers for each of the attemptToDelete and attemptToOrphan queues")
	mode := fs.String("gc-mode", "", "active (the engine deletes) or shadow (it records what it would do, writes nothing); default active for the embedded cluster, shadow otherwise")
	fs.DurationVar(&c.actionDelay, "gc-action-delay", 0, "wait this long before each write of the engine (slow motion, switchable in the page), switched on; without it the embedded cluster offers "+defaultActionDelay.String()+", switched off; 0: no slow motion")
	ignored := fs.String("gc-ignored-resources", "events,events.events.k8s.io", "comma-separated resource[.group] the engine does not monitor")
	fs.Float64Var(&c.qps, "kube-api-qps", 50, "queries per second to the apiserver")
	fs.IntVar(&c.burst, "kube-api-burst", 100, "burst of queries to the apiserver")
	fs.StringVar(&c.auth, "auth", "", `"kubernetes": require a bearer token the cluster accepts (TokenReview) and delete as its user (impersonation); at a hub of --remote alone, a token one of the remotes accepts (each reviews it with its own cluster)`)
	fs.StringVar(&c.oidc.IssuerURL, "oidc-issuer-url", "", "with --auth=kubernetes: sign users in through this OpenID provider (single sign-on); its ID token is their credential, so the apiserver must trust the same issuer and client ID")
	fs.StringVar(&c.oidc.ClientID, "oidc-client-id", "", "the client ID gcscope has at --oidc-issuer-url (the audience the apiserver expects)")
	fs.StringVar(&c.oidcSecretFile, "oidc-client-secret-file", "", "a file holding the client secret of --oidc-client-id (none: a public client, PKCE only)")
	oidcScopes := fs.String("oidc-scopes", "email,offline_access", "comma-separated scopes besides openid (offline_access: a refresh token, so a session outlives its first ID token)")
	fs.StringVar(&c.oidc.NameClaim, "oidc-name-claim", "email", "the ID token claim the page shows as the user (the cluster's username is what the apiserver makes of the token)")
	fs.StringVar(&c.oidc.CAFile, "oidc-ca-file", "", "the PEM bundle that signs --oidc-issuer-url's certificate (default: the system's)")
	fs.StringVar(&c.oidc.Name, "oidc-display-name", "", `what the sign-in button says: "Sign in with NAME" (default: the issuer's host)`)
	fs.IntVar(&c.maxStreams, "max-streams", 256, "websocket streams open at once, in all")
	fs.IntVar(&c.maxUserStreams, "max-streams-per-user", 32, "websocket streams one user may hold open at once")
	fs.IntVar(&c.pageFullGraph, "ui-full-graph", 20000, "the most objects the page holds whole; past it, it shows each namespace as a box with its counts and loads the objects of those in view (summary first)")
	fs.StringVar(&c.auditLog, "audit-log", "-", "where to append the audit log of writes, one JSON line each (- is stderr)")
	fs.BoolVar(&c.history, "history", true, "record every decision of the engine (graph changes, queues, actions and their results) in an embedded database, searchable at /api/v1/history and rebuildable at any moment (--history=false: do not)")
	fs.StringVar(&c.historyDir, "history-dir", "", "the recording's directory, kept across restarts (default: <data-dir>/history; without --data-dir, removed on exit)")
	historyMaxSize := fs.String("history-max-size", "1Gi", "the most disk the recording uses (e.g. 512Mi, 2Gi); the oldest is dropped to stay under it")
	fs.DurationVar(&c.historyMaxAge, "history-max-age", 7*24*time.Hour, "drop recorded history older than this (0: keep it until --history-max-size needs the room)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if err := c.serveFlags.parse(); err != nil {
		return nil, usageError{err}
	}
	if !set["demo"] {
		c.demo = c.embedded()
	}
	switch c.embeddedCollector {
	case "gcscope":
	case "upstream":
		if !c.embedded() {
			return nil, usageError{errors.New("--embedded-collector applies to the embedded cluster only; a real cluster's collector is its controller-manager's")}
		}
		if gc.Mode(*mode) == gc.ModeActive {
			return nil, usageError{errors.New("--embedded-collector=upstream runs kube-controller-manager's collector: --gc-mode=active would make two collectors race; drop it (the engine runs in shadow mode)")}
		}
	default:
		return nil, usageError{fmt.Errorf("--embedded-collector %q: want gcscope or upstream", c.embeddedCollector)}
	}
	if c.shadowOverdue <= 0 {
		return nil, usageError{fmt.Errorf("--shadow-overdue %v: want a positive duration", c.shadowOverdue)}
	}
	switch gc.Mode(*mode) {
	case "":
		// Collecting in a cluster whose own controller-manager collects too would race
		// it: only the embedded cluster, which runs no other collector, is active by default.
		c.gcMode = gc.ModeShadow
		if c.embedded() && c.embeddedCollector == "gcscope" {
			c.gcMode = gc.ModeActive
		}
	case gc.ModeActive, gc.ModeShadow:
		c.gcMode = gc.Mode(*mode)
	default:
		return nil, usageError{fmt.Errorf("--gc-mode %q: want active or shadow", *mode)}
	}
	if c.discoveryPeriod < time.Second {
		return nil, usageError{fmt.Errorf("--gc-discovery-period %v: want at least 1s", c.discoveryPeriod)}
	}
	if c.workers < 1 {
		return nil, usageError{fmt.Errorf("--workers %d: want at least 1", c.workers)}
	}
	if c.actionDelay < 0 {
		return nil, usageError{fmt.Errorf("--gc-action-delay %v: want a positive duration, or 0 for no slow motion", c.actionDelay)}
	}
	if !set["gc-action-delay"] && c.embedded() && c.gcMode == gc.ModeActive {
		// The embedded cluster is there to watch the collector: slow motion is offered,
		// switched off until the user switches it on.
		c.actionDelay, c.slowMotionOff = defaultActionDelay, true
	}
	if c.qps <= 0 || c.burst < 1 {
		return nil, usageError{errors.New("--kube-api-qps and --kube-api-burst must be positive")}
	}
	c.ignored = []schema.GroupResource{}
	for _, r := range strings.Split(*ignored, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.ignored = append(c.ignored, schema.ParseGroupResource(r))
		}
	}
	if c.inCluster && (c.kubeconfig != "" || len(c.contexts) > 0 || c.allContexts) {
		return nil, usageError{errors.New("--in-cluster cannot be combined with --kubeconfig, --context or --all-contexts")}
	}
	if err := c.checkContexts(set); err != nil {
		return nil, usageError{err}
	}
	if err := c.checkRemotes(); err != nil {
		return nil, usageError{err}
	}
	if !c.embedded() {
		if set["write-kubeconfig"] {
			return nil, usageError{errors.New("--write-kubeconfig applies to the embedded cluster only; drop it or drop --kubeconfig/--context/--in-cluster")}
		}
	}
	switch c.auth {
	case "":
	case "kubernetes":
		if c.authTokenFile != "" {
			return nil, usageError{errors.New("--auth=kubernetes and --auth-token-file are two ways to authenticate: pick one")}
		}
	default:
		return nil, usageError{fmt.Errorf("--auth %q: the only value is kubernetes (or use --auth-token-file)", c.auth)}
	}
	if err := c.parseOIDC(*oidcScopes); err != nil {
		return nil, usageError{err}
	}
	if c.pageFullGraph < 1 {
		return nil, usageError{errors.New("--ui-full-graph must be at least 1")}
	}
	if c.maxStreams < 1 || c.maxUserStreams < 1 {
		return nil, usageError{errors.New("--max-streams and --max-streams-per-user must be at least 1")}
	}
	if err := c.parseHistory(set, *historyMaxSize); err != nil {
		return nil, usageError{err}
	}
	if err := c.serveFlags.check(c.auth != "" || c.authTokenFile != ""); err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// minHistorySize is the smallest --history-max-size: room for a checkpoint of a small
// graph and the events after it.
const minHistorySize = 1 << 20

// parseHistory checks the --history flags.
func (c *config) parseHistory(set map[string]bool, maxSize string) error {
	if !c.history {
		for _, name := range []string{"history-dir", "history-max-size", "history-max-age"} {
			if set[name] {
				return fmt.Errorf("--%s applies to the history, which --history=false turns off; drop one of them", name)
			}
		}
		return nil
	}
	q, err := resource.ParseQuantity(maxSize)
	if err != nil || q.Value() < minHistorySize {
		return fmt.Errorf("--history-max-size %q: want a size of at least 1Mi, like 512Mi or 2Gi", maxSize)
	}
	c.historyMaxSize = q.Value()
	if c.historyMaxAge < 0 {
		return fmt.Errorf("--history-max-age %v: want a positive duration, or 0 for no age limit", c.historyMaxAge)
	}
	return nil
}

// parseOIDC checks the single sign-on flags: an issuer needs a client ID and
// --auth=kubernetes (the ID token is reviewed by the cluster as any token is).
func (c *config) parseOIDC(scopes string) error {
	if c.oidc.IssuerURL == "" {
		if c.oidc.ClientID != "" || c.oidcSecretFile != "" || c.oidc.CAFile != "" {
			return errors.New("--oidc-client-id, --oidc-client-secret-file and --oidc-ca-file go with --oidc-issuer-url")
		}
		return nil
	}
	if c.auth != "kubernetes" {
		return errors.New("--oidc-issuer-url needs --auth=kubernetes: the cluster reviews the ID token, as the apiserver configured with the same issuer does")
	}
	if c.oidc.ClientID == "" {
		return errors.New("--oidc-issuer-url needs --oidc-client-id")
	}
	if !strings.HasPrefix(c.oidc.IssuerURL, "https://") {
		return fmt.Errorf("--oidc-issuer-url %q: an OpenID issuer is an https URL", c.oidc.IssuerURL)
	}
	if c.oidcSecretFile != "" {
		b, err := os.ReadFile(c.oidcSecretFile)
		if err != nil {
			return fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		c.oidc.ClientSecret = strings.TrimSpace(string(b))
	}
	c.oidc.Scopes = commaList(scopes)
	return nil
}

// checkRemotes reads --remote.
func (c *config) checkRemotes() error {
	for _, spec := range c.remoteSpecs {
		rc, err := remote.ParseSpec(spec)
		if err != nil {
			return err
		}
		if slices.Contains(c.contexts, rc.Name) {
			return fmt.Errorf("--remote %q has the name of a --context", rc.Name)
		}
		c.remotes = append(c.remotes, rc)
	}
	switch {
	case len(c.remotes) == 0:
	case c.allContexts:
		return errors.New("--remote with --all-contexts: name the contexts with --context each (a remote's name must differ from every context's)")
	}
	return nil
}

// checkContexts checks --context, --all-contexts and --start-contexts.
func (c *config) checkContexts(set map[string]bool) error {
	if c.allContexts && len(c.contexts) > 0 {
		return errors.New("--all-contexts serves every context: drop --context, or name the contexts with --context each")
	}
	seen := map[string]bool{}
	for _, name := range c.contexts {
		if seen[name] {
			return fmt.Errorf("--context %q is given twice", name)
		}
		seen[name] = true
	}
	if len(c.contexts) == 1 {
		c.kubeContext = c.contexts[0]
	}
	switch c.startContexts {
	case "opened", "all":
	default:
		return fmt.Errorf("--start-contexts %q: want opened or all", c.startContexts)
	}
	if !c.several() {
		if set["start-contexts"] {
			return errors.New("--start-contexts applies to several contexts (--context more than once, or --all-contexts)")
		}
		return nil
	}
	return nil
}
