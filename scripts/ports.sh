# Loopback ports for the throwaway servers of scripts/test.sh and
# scripts/bench.sh (sourced by both).

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port prints a free loopback port at or above a random start below the
# kernel's ephemeral range, so an outgoing connection (Postgres clients, the
# load tool, other tenants of the machine) cannot take it between the check
# and the server's listen.
pick_port() {
	local lo=32768 p i
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	((lo > 10400)) || lo=32768
	p=$((10000 + RANDOM % (lo - 10200)))
	for ((i = 0; i < 200; i++)); do
		if port_free "$p"; then
			echo "$p"
			return 0
		fi
		p=$((p + 1))
	done
	return 1
}
