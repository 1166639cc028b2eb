"""The network lab: client and server in network namespaces, lab DNS, shaped links, latency.

- profile:    named network profiles (networks/*.toml), validated on load
- hosts:      the namespaces, veth pairs and tc shaping (needs root)
- services:   the processes inside: lab DNS, dnsmasq cache, latency proxy
- probe:      link figures measured from inside the client namespace (RTT, throughput)
- udpprobe:   UDP echo (server namespace) and paced probes: round trip, loss, reordering
- relay:      the user-space link relay (clientlab-link) for link = "relay" profiles
- lab:        NetLab, which puts it all up for a run and takes it all down again
- darkfirst:  a host name whose first address never answers, for one behaviour cell (happy eyeballs)
"""
