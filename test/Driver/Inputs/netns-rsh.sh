#!/bin/sh
# OpenMPI remote-shell agent for netns-hosts.sh: `netns-rsh.sh HOST CMD...`
# runs CMD in the network namespace of HOST (from $AUTOPAR_NETNS_MAP).
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "$AUTOPAR_NETNS_MAP")
tmp=$(awk -v h="$host" '$1 == h { print $3 }' "$AUTOPAR_NETNS_MAP")
if [ -z "$ns" ]; then
  echo "netns-rsh.sh: unknown host '$host'" >&2
  exit 1
fi
exec ip netns exec "$ns" env OMPI_MCA_orte_tmpdir_base="$tmp" sh -c "$*"
