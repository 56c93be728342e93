package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs a single-member etcd in this process, on free loopback ports, storing its
// data under dataDir/etcd so that a kept data dir survives restarts.
func startEtcd(ctx context.Context, dataDir, logFile string, debug bool) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "gcscope"
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{logFile}
	cfg.LogLevel = "warn"
	if debug {
		cfg.LogLevel = "info"
	}
	// One member on loopback, nothing to replicate to: fsync on every write only slows the
	// demo; crash consistency of a scratch cluster is not worth it.
	cfg.UnsafeNoFsync = true
	// etcd's largest recommended database: a million-object scale run holds about 2.5 GiB.
	cfg.QuotaBackendBytes = 8 << 30

	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w (log: %s)", err, logFile)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, clientURL.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed: %w (log: %s)", err, logFile)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("etcd was not ready after 60s (log: %s)", logFile)
	case <-ctx.Done():
		e.Close()
		return nil, "", ctx.Err()
	}
}

// freePorts asks the kernel for n distinct free loopback ports. They are released before
// use, so another process could take one in between; etcd then fails with a clear error.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
