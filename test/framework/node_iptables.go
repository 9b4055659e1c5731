package framework

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// nodeChainPrefixes are the chains a node creates: kubelet and kube-proxy
// (KUBE-), the CNI bridge and portmap plugins (CNI-) and the framework
// (CAPN-).
var nodeChainPrefixes = []string{"KUBE-", "CNI-", "CAPN-"}

// iptablesTables are the tables that kubelet, kube-proxy and CNI write to.
var iptablesTables = []string{"filter", "nat", "mangle", "raw"}

// iptablesCommands are both families: kubelet makes its chains for IPv6 as
// well whenever the host has IPv6.
var iptablesCommands = []string{"iptables", "ip6tables"}

// listChains returns the node-prefixed chains per "<command>/<table>".
func listChains() (map[string][]string, error) {
	chains := map[string][]string{}
	for _, cmd := range iptablesCommands {
		for _, table := range iptablesTables {
			out, err := exec.Command(cmd+"-save", "-t", table).Output()
			if err != nil {
				continue // family or table not available on this kernel
			}
			for _, c := range parseChains(string(out)) {
				if hasNodePrefix(c) {
					chains[cmd+"/"+table] = append(chains[cmd+"/"+table], c)
				}
			}
		}
	}
	return chains, nil
}

// parseChains returns the chain names declared in iptables-save output.
func parseChains(save string) []string {
	var chains []string
	for _, line := range strings.Split(save, "\n") {
		if name, ok := strings.CutPrefix(line, ":"); ok {
			chains = append(chains, strings.Fields(name)[0])
		}
	}
	return chains
}

func hasNodePrefix(chain string) bool {
	for _, p := range nodeChainPrefixes {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// isolatePods drops anything forwarded from the pod bridge to another
// interface. Pods have no default route (see cniConfig); this also catches
// a packet that some DNAT rule would send elsewhere. Traffic to the node's
// own addresses is delivered locally and is not forwarded.
func (st *nodeState) isolatePods() error {
	chain := "CAPN-" + strings.ToUpper(strings.TrimPrefix(st.Name, "capn-node-"))
	for _, args := range [][]string{
		{"-N", chain},
		{"-A", chain, "-i", st.Bridge, "!", "-o", st.Bridge, "-j", "DROP"},
		{"-I", "FORWARD", "-j", chain},
	} {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "filter"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// deleteNewChains removes every node-prefixed chain not in before, with the
// rules in other chains that jump to it, in one iptables-restore
// transaction per table.
func deleteNewChains(before map[string][]string) []error {
	var errs []error
	for _, cmd := range iptablesCommands {
		for _, table := range iptablesTables {
			out, err := exec.Command(cmd+"-save", "-t", table).Output()
			if err != nil {
				continue
			}
			save := string(out)
			var created []string
			for _, c := range parseChains(save) {
				if hasNodePrefix(c) && !slices.Contains(before[cmd+"/"+table], c) {
					created = append(created, c)
				}
			}
			if len(created) == 0 {
				continue
			}
			script := []string{"*" + table}
			for _, line := range strings.Split(save, "\n") {
				rest, ok := strings.CutPrefix(line, "-A ")
				if !ok || slices.Contains(created, strings.Fields(rest)[0]) {
					continue // not a rule, or flushed with its chain below
				}
				if f := strings.Fields(rest); slices.ContainsFunc(created, func(c string) bool {
					i := slices.Index(f, c)
					return i > 0 && (f[i-1] == "-j" || f[i-1] == "-g")
				}) {
					script = append(script, "-D "+rest)
				}
			}
			for _, c := range created {
				script = append(script, "-F "+c)
			}
			for _, c := range created {
				script = append(script, "-X "+c)
			}
			script = append(script, "COMMIT", "")
			restore := exec.Command(cmd+"-restore", "--noflush")
			restore.Stdin = strings.NewReader(strings.Join(script, "\n"))
			if out, err := restore.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore (%s): %v: %s", cmd, table, err, out))
			}
		}
	}
	return errs
}

// listNftTables lists nf_tables tables ("ip filter"), if nft is installed.
func listNftTables() []string {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	var tables []string
	for _, line := range hostLines(out) {
		if t, ok := strings.CutPrefix(line, "table "); ok {
			tables = append(tables, t)
		}
	}
	return tables
}

// deleteNewEmptyTables deletes the iptables-nft tables that did not exist
// before and hold nothing but built-in chains with an ACCEPT policy.
func deleteNewEmptyTables(before []string) []error {
	var errs []error
	for _, table := range listNftTables() {
		family, name, _ := strings.Cut(table, " ")
		cmd := map[string]string{"ip": "iptables", "ip6": "ip6tables"}[family]
		if cmd == "" || !slices.Contains(iptablesTables, name) || slices.Contains(before, table) {
			continue
		}
		out, err := exec.Command(cmd+"-save", "-t", name).Output()
		if err != nil {
			continue
		}
		empty := true
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); strings.HasPrefix(line, "-A ") || (strings.HasPrefix(line, ":") && (len(f) < 2 || f[1] != "ACCEPT")) {
				empty = false
			}
		}
		if !empty {
			continue
		}
		if out, err := exec.Command("nft", "delete", "table", family, name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", table, err, out))
		}
	}
	return errs
}
