package framework

import "strings"

// EtcdURL is the management etcd's client URL: plain HTTP on loopback,
// started with --unsafe-no-fsync. A server under test can store its data
// there to be measured on the same storage as kube-apiserver.
func (c *Cluster) EtcdURL() string {
	for _, p := range c.Processes {
		if p.Name != "etcd" {
			continue
		}
		for _, a := range p.cmd.Args {
			if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
				return v
			}
		}
	}
	return ""
}
