#!/bin/sh
# Runs a command with an OpenMPI hostfile of network-namespace "hosts" on
# this machine: one namespace per host, each with a veth pair into a bridge
# of the root namespace (where mpirun runs), addresses 10.A.B.11, .12, ...
# OpenMPI starts its daemons through Inputs/netns-rsh.sh (`ip netns exec`
# as the remote-shell agent, no sshd) and the ranks talk over TCP.
#
#   netns-hosts.sh HOSTS SLOTS COMMAND...
#
# COMMAND runs with AUTOPAR_TEST_HOSTFILE naming the hostfile. Needs root and
# iproute2. Everything is removed on exit.
set -u
hosts=$1 slots=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
id=$$
prefix="ap$id"
net="10.$((64 + id % 128)).$(((id / 128) % 250))"
bridge="${prefix}b"
work=$(mktemp -d)

cleanup() {
  i=1
  while [ "$i" -le "$hosts" ]; do
    ip netns del "$prefix-$i" 2>/dev/null
    ip link del "${prefix}v$i" 2>/dev/null
    i=$((i + 1))
  done
  ip link del "$bridge" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

ip link add "$bridge" type bridge || exit 1
ip addr add "$net.1/24" dev "$bridge" || exit 1
ip link set "$bridge" up || exit 1
: > "$work/hostfile"
i=1
while [ "$i" -le "$hosts" ]; do
  ns="$prefix-$i"
  addr="$net.$((10 + i))"
  ip netns add "$ns" || exit 1
  ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns" || exit 1
  ip link set "${prefix}v$i" master "$bridge" up || exit 1
  ip -n "$ns" addr add "$addr/24" dev eth0 || exit 1
  ip -n "$ns" link set eth0 up || exit 1
  ip -n "$ns" link set lo up || exit 1
  echo "$addr slots=$slots" >> "$work/hostfile"
  # Each "host" keeps OpenMPI's session directory apart: the namespaces
  # share /tmp and the hostname, and two daemons in one session directory
  # clash (PMIx "NO-PERMISSIONS", unroutable daemons).
  mkdir -p "$work/tmp$i"
  echo "$addr $ns $work/tmp$i" >> "$work/namespaces"
  i=$((i + 1))
done

# Wait (up to 10 s) until every bridge port forwards (state 3) and every
# namespace's link is up, so that the first connections of the job are not
# dropped (seen as "ORTE does not know how to route a message").
tries=0
while [ "$tries" -lt 100 ]; do
  ready=1
  i=1
  while [ "$i" -le "$hosts" ]; do
    state=$(cat "/sys/class/net/$bridge/brif/${prefix}v$i/state" 2>/dev/null)
    oper=$(ip netns exec "$prefix-$i" cat /sys/class/net/eth0/operstate 2>/dev/null)
    if [ "$state" != 3 ] || [ "$oper" != up ]; then
      ready=0
    fi
    i=$((i + 1))
  done
  [ "$ready" = 1 ] && break
  tries=$((tries + 1))
  sleep 0.1
done

export AUTOPAR_TEST_HOSTFILE="$work/hostfile"
export AUTOPAR_NETNS_MAP="$work/namespaces"
export OMPI_MCA_plm_rsh_agent="$here/netns-rsh.sh"
export OMPI_MCA_routed=direct
export OMPI_MCA_btl=tcp,self
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl_tcp_if_include="$net.0/24"
export OMPI_MCA_oob_tcp_if_include="$net.0/24"
"$@"
